#pragma once
/// \file
/// `backend_agent_trainer<Backend, S, Torso>`: the one training step of every agent built from
/// a torso part (seedrl/train/backend_torso.hpp), a core (an n-layer LSTM or none, optionally
/// fed the clipped reward and the previous action: a one-hot, or a continuous action's values)
/// and policy and value heads (categorical or diagonal Gaussian, one network or separate
/// policy and value networks; backend_core_config): forward
/// over the unrolls, SEED's IMPALA loss, PPO's update or R2D2's (with its target network and
/// burn-in; the losses' `compute`), back-propagation through time, global-norm clipping, Adam
/// or RMSProp, written once against
/// the ComputeBackend primitives (seedrl/backend/compute_backend.hpp). The step itself (the
/// schedule's epochs x minibatches, the proximal pass, forward / loss / backward / clip /
/// optimizer) is `train_on_batch` (runtime/training_step.hpp), which host_trainer runs too,
/// over this trainer's buffers. On `host_backend` it runs on the CPU, which is how the
/// tests check its data flow against `host_trainer` + the CPU agents; on a CUDA backend the
/// same code keeps every array on the GPU (seedrl/cuda/agent_trainer.hpp wraps it as a
/// Trainer). It includes no Eigen, so nvcc compiles it together with a CUDA backend.
///
/// `backend_mlp_lstm_trainer` (the MLP torso) and `backend_pixel_lstm_trainer` (frame stacks,
/// Nature CNN or IMPALA ResNet, dense layer) are this class with the library's torsos.
///
/// The arithmetic is the CPU agents': after the torso, detail::agent_body (the same parameter
/// layout: the torso's parameters, then per LSTM layer W [4H, I + H] and b [4H], the policy
/// head's, the value head's; the same LSTM, detail::lstm_stack, and heads, detail::policy_layer
/// and a one-layer dense_stack), the same per-element functions (detail::adam_update, ...), the
/// same reset semantics (an environment's state is zeroed before a step marked done and no gradient
/// crosses it) and the same clipping rule as `clip_by_global_norm`. Only the order of some sums
/// differs (bias gradients are column sums; the host vectorises the cells), so results agree to
/// rounding.
///
/// Data flow of one step, N = (T+1) * B rows, time-major:
///   torso:   writes its features straight into the body's core input [N, core_in], followed
///            by the reward and one-hot previous-action columns (all zero at a row with done:
///            an episode start reads reward 0 and no action, as in actor_critic_agent);
///   LSTM:    detail::lstm_stack (seedrl/net/detail/lstm_stack.hpp), the CPU layer's code: per
///            layer X W_ih^T for all rows at once, then per step h_prev W_hh^T and the cell;
///   heads:   policy outputs = Y W_p^T + b_p (then the log-std columns of a state-independent
///            Gaussian), values = Y W_v^T + b_v (each head its own columns of Y when the
///            networks are separate);
///   backward mirrors it (the LSTM's per step only the cell's backward and dz_t W_hh, its input
///            and weight gradients one GEMM each per layer), then the torso's backward from dX's
///            feature columns.

#include <algorithm>
#include <cmath>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/algo/impala_loss_config.hpp"
#include "seedrl/algo/loss_choice.hpp"
#include "seedrl/algo/policy_distribution.hpp"
#include "seedrl/algo/ppo_loss.hpp"
#include "seedrl/algo/r2d2_loss.hpp"
#include "seedrl/backend/compute_backend.hpp"
#include "seedrl/backend/detail/backend_ref.hpp"
#include "seedrl/core/config.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/detail/impala_math.hpp"
#include "seedrl/net/detail/torso_and_body.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/optim/rmsprop.hpp"
#include "seedrl/runtime/training_batch.hpp"
#include "seedrl/runtime/training_step.hpp"
#include "seedrl/train/backend_core_config.hpp"
#include "seedrl/train/backend_optimizer.hpp"
#include "seedrl/train/backend_torso.hpp"

namespace seedrl {

/// Trains an agent made of `Torso` (a BackendTorso part), an LSTM core or none and policy and
/// value heads on a ComputeBackend; see the file comment. Keeps a reference to the backend,
/// which must outlive it. Parameters start at zero: load them with `set_parameters` (e.g. from
/// the CPU agent's `parameters()`), and choose the optimizer with `set_optimizer`, before the
/// first `train_step`. Work buffers are allocated at the first step and again only when T or
/// B grow.
template <ComputeBackend Backend, std::floating_point S, class Torso>
class backend_agent_trainer {
  static_assert(check_backend_torso<Torso, Backend, S>());

  template <class T>
  using buffer = typename Backend::template buffer<T>;

  static constexpr const char* who_ = "seedrl::backend_agent_trainer";

 public:
  using scalar_type = S;         ///< parameter and activation type
  using backend_type = Backend;  ///< where the arrays live
  using torso_type = Torso;      ///< the part before the core

  /// The agent `torso` + `core`; throws std::invalid_argument on a core that cannot work (no
  /// actions, negative sizes, Gaussian outputs that are not 2D, separate networks with an
  /// LSTM) and allocates the parameter and gradient arrays. `torso` must use `backend`.
  backend_agent_trainer(Backend& backend, Torso torso, const backend_core_config& core)
      : backend_(backend), net_(std::move(torso), core, who_), opt_(backend, who_, 0) {
    A_ = net_.body().num_actions();
    D_ = net_.body().continuous_action_size();
    opt_ = backend_optimizer<Backend, S>(backend, who_, num_parameters());
    params_ = backend_->template allocate<S>(num_parameters());
    grads_ = backend_->template allocate<S>(num_parameters());
  }

  /// The agent an agent recipe (its config types) describes: `Torso(backend, recipe...)` and
  /// `Torso::core_config(recipe...)`, e.g. (backend, mlp_lstm_agent_config) for the MLP torso
  /// or (backend, frame_stack_config, pixel_lstm_agent_config<...>) for the pixel torso. Throws
  /// std::invalid_argument where the recipe's CPU classes would.
  template <class... Recipe>
  requires(sizeof...(Recipe) > 0 && std::constructible_from<Torso, Backend&, const Recipe&...> &&
           requires(const Recipe&... r) {
             { Torso::core_config(r...) } -> std::convertible_to<backend_core_config>;
           }) backend_agent_trainer(Backend& backend, const Recipe&... recipe)
      : backend_agent_trainer(backend, Torso(backend, recipe...), Torso::core_config(recipe...)) {}

  backend_agent_trainer(const backend_agent_trainer&) = delete;
  backend_agent_trainer& operator=(const backend_agent_trainer&) = delete;
  backend_agent_trainer(backend_agent_trainer&&) = default;
  backend_agent_trainer& operator=(backend_agent_trainer&&) = default;
  ~backend_agent_trainer() = default;

  /// The torso part.
  const Torso& torso() const noexcept { return net_.torso(); }
  /// The core and heads.
  const backend_core_config& core_config() const noexcept { return net_.body().config(); }

  /// The recipe's shape, where the torso keeps it (the MLP torso: mlp_lstm_agent_config; the
  /// pixel torso: its agent config).
  decltype(auto) config() const requires requires(const Torso& t) { t.config(); }
  { return net_.torso().config(); }
  /// The frame stacking, where the torso stacks frames.
  decltype(auto) stack_config() const requires requires(const Torso& t) { t.stack_config(); }
  { return net_.torso().stack_config(); }

  /// Elements of the flat parameter (and gradient) array; the CPU agent's count.
  std::size_t num_parameters() const noexcept { return net_.num_parameters(); }

  /// Elements of one step's observation in a training batch.
  std::size_t observation_size() const noexcept { return net_.torso().observation_size(); }

  /// Width of one environment's recurrent state: the torso's (e.g. a frame history), then
  /// (h, c) per LSTM layer.
  std::size_t state_size() const noexcept { return net_.state_size(); }

  /// Replaces the parameters (the CPU agent's layout); throws std::invalid_argument on a size
  /// mismatch.
  void set_parameters(std::span<const S> host) {
    check_size("set_parameters", host.size(), num_parameters());
    backend_->upload(host, params_.data());
  }

  /// Copies the parameters out; throws std::invalid_argument on a size mismatch.
  void get_parameters(std::span<S> host) const {
    check_size("get_parameters", host.size(), num_parameters());
    backend_->download(static_cast<const S*>(params_.data()), host);
  }

  /// Copies the parameters into `dst` (num_parameters() values in the backend's memory) after
  /// the work already given to the backend, e.g. a GPU trainer's publication into a device
  /// channel; asynchronous where the backend is.
  void copy_parameters_to(S* dst) const {
    backend_->copy(static_cast<const S*>(params_.data()), dst, num_parameters());
  }

  /// Copies out the gradients of the last `train_step`, after clipping (unclipped when the
  /// step was skipped); throws std::invalid_argument on a size mismatch.
  void get_gradients(std::span<S> host) const {
    check_size("get_gradients", host.size(), num_parameters());
    backend_->download(static_cast<const S*>(grads_.data()), host);
  }

  /// Trains with Adam as `seedrl::adam<S>(config)` would after `step_count` steps. `state` is
  /// {m, v}, each of num_parameters() elements; empty (or two empty arrays, what a fresh
  /// seedrl::adam holds) means zeros, and is the only state allowed with step_count 0 (as
  /// adam::load_state). Throws std::invalid_argument (a bad config, a negative step count,
  /// wrong array count or sizes) and then changes nothing.
  void set_optimizer(const adam_config& config, std::int64_t step_count,
                     std::span<const std::span<const S>> state = {}) {
    opt_.set(config, step_count, state);
  }

  /// Trains with RMSProp as `seedrl::rmsprop<S>(config)` would after `step_count` steps.
  /// `state` is {v} or, when config.momentum > 0, {v, momentum buffer}; otherwise as the Adam
  /// overload.
  void set_optimizer(const rmsprop_config& config, std::int64_t step_count,
                     std::span<const std::span<const S>> state = {}) {
    opt_.set(config, step_count, state);
  }

  /// Optimizer steps done so far (0 before set_optimizer).
  std::int64_t optimizer_step_count() const noexcept { return opt_.step_count(); }

  /// The optimizer's arrays in the CPU class's order (adam: m, v; rmsprop: v [, momentum
  /// buffer]); each empty at step count 0, as the CPU classes hold them; {} before
  /// set_optimizer.
  std::vector<std::vector<S>> optimizer_state() const { return opt_.state(); }

  /// The learning rate the next step will use; throws std::logic_error before set_optimizer.
  double learning_rate() const { return opt_.learning_rate(); }

  /// The forward pass alone over `batch` (checked as by train_step): copies the policy outputs
  /// [(T+1)*B*A] and values [(T+1)*B] into `logits` and `values` (std::invalid_argument on
  /// other sizes). Changes no parameter and no gradient.
  void evaluate(const training_batch<S>& batch, std::span<S> logits, std::span<S> values) {
    check_batch(batch, "evaluate");
    const std::size_t N = (batch.T + 1) * batch.B;
    check_size("evaluate (logits)", logits.size(), N * A_);
    check_size("evaluate (values)", values.size(), N);
    step_model{*this}.forward(batch);
    backend_->download(static_cast<const S*>(logits_.data()), logits);
    backend_->download(static_cast<const S*>(values_.data()), values);
  }

  /// One IMPALA training step on `batch`; see the file comment. Throws std::logic_error before
  /// set_optimizer, std::invalid_argument (before any work) when max_grad_norm is not > 0, when
  /// the batch's sizes do not fit the network, or on an action or previous action outside
  /// [0, A). A gradient with a non-finite norm skips the update (`applied` false, `skipped`
  /// says why, grad_norm 0 as host_trainer reports it) and changes no parameter. The config
  /// overload trains a categorical policy; the loss overload any policy distribution the
  /// network's head has (spec_distribution<S> for either kind).
  train_step_result train_step(const training_batch<S>& batch, const impala_loss_config<S>& loss,
                               double max_grad_norm) {
    return train_step(batch, seedrl::impala_loss<S>(loss), max_grad_norm);
  }

  template <class Dist>
  train_step_result train_step(const training_batch<S>& batch,
                               const seedrl::impala_loss<S, Dist>& loss, double max_grad_norm) {
    return train(batch, loss, max_grad_norm);
  }

  /// PPO's update on `batch` (seedrl/algo/ppo_loss.hpp, any policy distribution): the loss's
  /// epochs x minibatches gradient steps, the minibatches drawn from this trainer's generator
  /// (`seed_schedule`) as host_trainer draws them, and first one forward pass over the whole
  /// batch for the proximal outputs (runtime/training_step.hpp). Each step runs
  /// `ppo_loss::compute` on the backend. Checks and skipped steps as the IMPALA train_step;
  /// the result is the steps' mean, applied only if every step was.
  template <class Dist>
  train_step_result train_step(const training_batch<S>& batch, const ppo_loss<S, Dist>& loss,
                               double max_grad_norm) {
    return train(batch, loss, max_grad_norm);
  }

  /// R2D2's step on `batch`, a batch of replayed sequences (seedrl/algo/r2d2_loss.hpp; the
  /// step is runtime/training_step.hpp's replay_step, as host_trainer runs it): the target
  /// network (a second parameter array on the backend, a copy of these refreshed every
  /// `target_update_period` steps) over the whole batch, the burn-in (a forward pass over its
  /// steps that keeps only the state reached; no gradient reaches them), then one gradient step
  /// on the rest. The result carries the sequences' new priorities. Checks as the IMPALA
  /// train_step, and R2D2 needs discrete actions and valid importance weights.
  train_step_result train_step(const training_batch<S>& batch, const r2d2_loss<S>& loss,
                               double max_grad_norm) {
    if (D_ > 0)
      throw std::invalid_argument(std::string(who_) +
                                  "::train_step: R2D2 learns Q-values of discrete actions; this "
                                  "network's actions are continuous");
    r2d2_loss<S>::check_importance_weights(batch.importance_weights, batch.B, who_);
    return train(batch, loss, max_grad_norm);
  }

  /// The loss a learner chose at run time (seedrl/algo/loss_choice.hpp): its IMPALA loss, its
  /// PPO update or R2D2's step.
  template <class Dist>
  train_step_result train_step(const training_batch<S>& batch, const loss_choice<S, Dist>& loss,
                               double max_grad_norm) {
    if (const auto* r2d2 = loss.r2d2())
      return train_step(batch, *r2d2, max_grad_norm);
    if (const auto* ppo = loss.ppo())
      return train_step(batch, *ppo, max_grad_norm);
    return train_step(batch, *loss.impala(), max_grad_norm);
  }

  /// Data-parallel training, as host_trainer::set_gradient_reducer: each gradient step's
  /// gradient is averaged over the reducer's ranks (through host memory) before clipping and
  /// the optimizer. Null (the default): this process alone.
  void set_gradient_reducer(std::shared_ptr<distributed::gradient_reducer> reducer) {
    reducer_ = std::move(reducer);
  }

  /// Seeds the generator that orders an update's minibatches (host_trainer's `seed`).
  void seed_schedule(std::uint64_t seed) { rng_ = random_generator(seed); }

 private:
  /// The checks, then the one training step (runtime/training_step.hpp) over step_model.
  template <class L>
  train_step_result train(const training_batch<S>& batch, const L& loss, double max_grad_norm) {
    opt_.require("train_step");
    check_max_grad_norm(max_grad_norm, who_);
    check_batch(batch, "train_step");
    if constexpr (requires { loss.distribution(); })
      check_distribution(loss.distribution(), batch);
    step_model model{*this};
    return train_on_batch(model, batch, loss, max_grad_norm, rng_, schedule_, who_, reducer_.get());
  }

  /// train_on_batch's model over this trainer's backend buffers: each pass uploads the batch
  /// it is handed (checked by train), the losses run their `compute` on the backend, the
  /// gradient is clipped and applied by backend kernels.
  struct step_model {
    backend_agent_trainer& t;

    void forward(const training_batch<S>& batch) {
      t.upload(batch);
      t.forward(batch.T + 1, batch.B);
    }

    void copy_outputs(std::vector<S>& logits, std::vector<S>& values) const {
      logits.resize(t.rows_ * t.A_);
      values.resize(t.rows_);
      t.backend_->download(static_cast<const S*>(t.logits_.data()), std::span<S>(logits));
      t.backend_->download(static_cast<const S*>(t.values_.data()), std::span<S>(values));
    }

    template <class Dist>
    loss_terms loss(const training_batch<S>& batch, const seedrl::impala_loss<S, Dist>& loss,
                    proximal_outputs<S>) {
      impala_loss_operands<S> op;
      t.fill_operands(op, batch);
      return loss.compute(*t.backend_, op, t.loss_workspace_);
    }

    template <class Dist>
    loss_terms loss(const training_batch<S>& batch, const ppo_loss<S, Dist>& loss,
                    proximal_outputs<S> proximal) {
      Backend& be = *t.backend_;
      ppo_loss_operands<S> op;
      t.fill_operands(op, batch);
      if (!proximal.logits.empty()) {
        t.backend_.grow(t.proximal_logits_, proximal.logits.size());
        be.upload(proximal.logits, t.proximal_logits_.data());
        op.proximal = t.rows_of(t.proximal_logits_.data());
      }
      if (!proximal.values.empty()) {
        t.backend_.grow(t.old_values_, proximal.values.size());
        be.upload(proximal.values, t.old_values_.data());
        op.old_values = t.old_values_.data();
      }
      return loss.compute(be, op, t.ppo_workspace_);
    }

    loss_terms loss(const training_batch<S>& batch, const r2d2_loss<S>& loss, proximal_outputs<S>) {
      Backend& be = *t.backend_;
      r2d2_loss_operands<S> op;
      op.T = static_cast<int>(batch.T);
      op.B = static_cast<int>(batch.B);
      op.A = static_cast<int>(t.A_);
      op.logits = t.logits_.data();
      op.values = t.values_.data();
      op.target_logits = t.target_logits_.data();
      op.target_values = t.target_values_.data();
      op.actions = t.actions_.data();
      op.rewards = t.rewards_.data();
      op.dones = t.dones_.data();
      op.truncated = t.truncated_.data();
      if (!batch.importance_weights.empty()) {
        t.backend_.grow(t.importance_weights_, batch.B);
        be.upload(batch.importance_weights, t.importance_weights_.data());
        op.importance_weights = t.importance_weights_.data();
      }
      op.grad_logits = t.d_logits_.data();
      op.grad_values = t.d_values_.data();
      t.priorities_.resize(batch.B);
      return loss.compute(be, op, t.r2d2_workspace_, std::span<double>(t.priorities_));
    }

    /// A replay loss's target network over `batch` (training_step.hpp): the target parameters
    /// (copied from the online ones at the first step and every `update_period` steps after),
    /// a forward pass with them, its outputs from `first_step` on kept for the loss.
    void target_forward(const training_batch<S>& batch, std::size_t first_step,
                        std::size_t update_period) {
      Backend& be = *t.backend_;
      const std::size_t n = t.num_parameters();
      if (!t.has_target_ || ++t.target_age_ >= update_period) {
        t.backend_.grow(t.target_params_, n);
        be.copy(static_cast<const S*>(t.params_.data()), t.target_params_.data(), n);
        t.has_target_ = true;
        t.target_age_ = 0;
      }
      t.upload(batch);
      const std::size_t B = batch.B, N = (batch.T + 1) * B, from = first_step * B;
      t.rows_ = N;
      t.net_.forward(be, t.target_params_.data(), t.torso_batch(batch.T + 1, B), t.row_inputs(),
                     t.logits_.data(), t.values_.data());
      t.backend_.grow(t.target_logits_, (N - from) * t.A_);
      t.backend_.grow(t.target_values_, N - from);
      be.copy(static_cast<const S*>(t.logits_.data()) + from * t.A_, t.target_logits_.data(),
              (N - from) * t.A_);
      be.copy(static_cast<const S*>(t.values_.data()) + from, t.target_values_.data(), N - from);
    }

    /// The burn-in on the batch target_forward uploaded: the online network over its first
    /// `steps` steps, keeping only the state reached (downloaded: the trained part's start
    /// state), then the rest of the batch from it.
    training_batch<S> warm_up(const training_batch<S>& batch, std::size_t steps) {
      Backend& be = *t.backend_;
      const std::size_t B = batch.B, W = t.state_size();
      t.backend_.grow(t.end_state_, B * W);
      t.backend_.grow(t.state_scratch_, B * W);
      t.rows_ = steps * B;
      t.net_.forward_to_end_state(be, t.params_.data(), t.torso_batch(steps, B), t.row_inputs(),
                                  t.logits_.data(), t.values_.data(), t.end_state_.data(),
                                  t.state_scratch_.data());
      t.warm_state_.resize(B * W);
      be.download(static_cast<const S*>(t.end_state_.data()), std::span<S>(t.warm_state_));
      return after_burn_in(batch, steps, std::span<const S>(t.warm_state_));
    }

    std::span<const double> priorities() const { return t.priorities_; }

    void backward(const training_batch<S>& batch) { t.backward(batch.T + 1, batch.B); }

    /// On the device when the backend's memory is a device's and the reducer reaches it
    /// (NCCL); otherwise through the host, where every reducer's collective runs.
    void reduce(distributed::gradient_reducer& reducer) {
      if constexpr (requires { Backend::device_memory; }) {
        if (Backend::device_memory &&
            reducer.mean_on_device(static_cast<S*>(t.grads_.data()), t.num_parameters()))
          return;
      }
      t.reduce_host_.resize(t.num_parameters());
      const std::span<S> host(t.reduce_host_);
      t.backend_->download(static_cast<const S*>(t.grads_.data()), host);
      reducer.mean(host);
      t.backend_->upload(std::span<const S>(host), t.grads_.data());
    }

    void apply(double max_grad_norm, train_step_result& r) {
      r.learning_rate = t.opt_.learning_rate();
      if (clip_gradients_on_backend(*t.backend_, t.grads_.data(), t.num_parameters(), max_grad_norm,
                                    r))
        t.opt_.step(t.params_.data(), t.grads_.data());
    }
  };

  /// The operand fields both losses share, pointing at the uploaded batch and the outputs.
  template <class Operands>
  void fill_operands(Operands& op, const training_batch<S>& batch) {
    op.T = static_cast<int>(batch.T);
    op.B = static_cast<int>(batch.B);
    op.policy = rows_of(logits_.data());
    op.values = values_.data();
    op.behaviour_log_probs = behaviour_.data();
    op.rewards = rewards_.data();
    op.dones = dones_.data();
    op.truncated = truncated_.data();
    op.grad_logits = d_logits_.data();
    op.grad_values = d_values_.data();
  }

  /// The policy rows of `outputs` as the losses read them: the batch's actions, and for a
  /// Gaussian its pre-squash samples and (when squashing) the bounds check_distribution
  /// uploaded.
  policy_rows<S> rows_of(const S* outputs) const {
    policy_rows<S> r{outputs, A_, actions_.data()};
    if (D_ > 0) {
      r.raw_actions = raw_actions_.data();
      r.action_dim = D_;
      if (squash_) {
        r.low = bounds_.data();
        r.high = bounds_.data() + D_;
      }
    }
    return r;
  }

  /// Throws std::invalid_argument unless `dist` reads this network's policy rows (a categorical
  /// distribution reads no Gaussian's) and the batch, as the host losses check it; uploads a
  /// squashing Gaussian's bounds for rows_of.
  template <class Dist>
  void check_distribution(const Dist& dist, const training_batch<S>& batch) {
    const std::string where = std::string(who_) + "::train_step";
    squash_ = false;
    if constexpr (std::same_as<Dist, categorical_distribution>) {
      if (D_ > 0)
        throw std::invalid_argument(where +
                                    ": a categorical loss cannot train a Gaussian policy head; "
                                    "use diag_gaussian_distribution or spec_distribution");
    } else {
      dist.check(where.c_str(), batch);
      if constexpr (requires { dist.gaussian; })
        upload_bounds(dist.gaussian);
      else
        upload_bounds(dist);
    }
  }

  /// A squashing Gaussian's bounds into bounds_ (low, then high); others have none.
  template <class Dist>
  void upload_bounds(const Dist& g) {
    if constexpr (requires { g.squash, g.low.data(), g.high.data(); }) {
      if (D_ > 0 && g.squash) {
        bounds_host_.assign(g.low.begin(), g.low.end());
        bounds_host_.insert(bounds_host_.end(), g.high.begin(), g.high.end());
        backend_.grow(bounds_, 2 * D_);
        backend_->upload(std::span<const S>(bounds_host_), bounds_.data());
        squash_ = true;
      }
    }
  }

  static void check_size(const char* what, std::size_t got, std::size_t want) {
    if (got != want) {
      throw std::invalid_argument(std::string(who_) + "::" + what + ": got " + std::to_string(got) +
                                  " values, expected " + std::to_string(want));
    }
  }

  /// Throws std::invalid_argument, its message naming `member`, unless `batch` fits.
  void check_batch(const training_batch<S>& batch, const char* member) const {
    const std::string where = std::string(who_) + "::" + member;
    const auto fail = [&](const std::string& what) {
      throw std::invalid_argument(where + ": " + what);
    };
    const std::size_t T = batch.T, B = batch.B;
    if (T == 0 || B == 0) {
      fail("T and B must be positive (an unroll has T+1 >= 2 steps), got T = " + std::to_string(T) +
           ", B = " + std::to_string(B));
    }
    if (batch.num_actions != A_) {
      fail("batch.num_actions is " + std::to_string(batch.num_actions) + ", the network has " +
           std::to_string(A_));
    }
    // The core's GEMMs and the torso's tensors are int-indexed (cuBLAS, cuDNN).
    const std::size_t max_rows = net_.max_rows();
    if (T + 1 > max_rows / B) {
      fail("(T+1)*B = " + std::to_string((T + 1) * B) +
           " rows are too many for int-sized tensors (at most " + std::to_string(max_rows) + ")");
    }
    const std::size_t N = (T + 1) * B;
    const auto size = [&](const char* name, std::size_t got, std::size_t want, const char* shape) {
      if (got != want) {
        fail(std::string(name) + " holds " + std::to_string(got) + " values, expected " + shape +
             " = " + std::to_string(want) + " (T = " + std::to_string(T) +
             ", B = " + std::to_string(B) + ")");
      }
    };
    size("observations", batch.observations.size(), N * observation_size(),
         "(T+1)*B*observation_size");
    size("rewards", batch.rewards.size(), N, "(T+1)*B");
    size("dones", batch.dones.size(), N, "(T+1)*B");
    size("truncated", batch.truncated.size(), N, "(T+1)*B");
    if (batch.action_dim != D_) {
      fail("batch.action_dim is " + std::to_string(batch.action_dim) + ", the network's " +
           (D_ > 0 ? "continuous actions have " + std::to_string(D_) + " elements"
                   : std::string("actions are discrete (0)")));
    }
    if (D_ > 0) {
      size("raw_actions", batch.raw_actions.size(), N * D_, "(T+1)*B*action_dim");
      if (net_.body().takes_previous_action())
        size("prev_env_actions", batch.prev_env_actions.size(), N * D_, "(T+1)*B*action_dim");
    } else {
      size("prev_actions", batch.prev_actions.size(), N, "(T+1)*B");
    }
    size("actions", batch.actions.size(), N, "(T+1)*B");
    size("behaviour_log_probs", batch.behaviour_log_probs.size(), N, "(T+1)*B");
    size("start_state", batch.start_state.size(), B * state_size(), "B*state_size()");
    detail::impala_check_truncated_done(batch.truncated.data(), batch.dones.data(), N, B,
                                        where.c_str());
    const auto in_range = [&](std::int32_t a) {
      return a >= 0 && static_cast<std::size_t>(a) < A_;
    };
    if (net_.body().takes_previous_action() && D_ == 0) {
      for (std::size_t i = 0; i < N; ++i) {
        if (!in_range(batch.prev_actions[i])) {
          fail("prev_actions[" + std::to_string(i) + "] is " +
               std::to_string(batch.prev_actions[i]) + ", outside [0, " + std::to_string(A_) + ")");
        }
      }
    }
    for (std::size_t i = 0; i < T * B; ++i) {  // step T's action is never used, as in the loss
      if (!in_range(batch.actions[i])) {
        fail("actions[" + std::to_string(i) + "] is " + std::to_string(batch.actions[i]) +
             ", outside [0, " + std::to_string(A_) + ")");
      }
    }
  }

  /// Sizes the work buffers for the (checked) batch and copies it to the backend.
  void upload(const training_batch<S>& batch) {
    const std::size_t B = batch.B, N = (batch.T + 1) * B;
    reserve(N, B);
    Backend& be = *backend_;
    be.upload(batch.observations, obs_buf_.data());
    be.upload(batch.rewards, rewards_.data());
    be.upload(batch.dones, dones_.data());
    be.upload(batch.truncated, truncated_.data());
    be.upload(batch.actions, actions_.data());
    be.upload(batch.behaviour_log_probs, behaviour_.data());
    if (D_ > 0) {
      be.upload(batch.raw_actions, raw_actions_.data());
      if (net_.body().takes_previous_action())
        be.upload(batch.prev_env_actions, prev_env_actions_.data());
    } else if (net_.body().takes_previous_action()) {
      be.upload(batch.prev_actions, prev_actions_.data());
    }
    if (state_size() > 0)
      be.upload(batch.start_state, start_state_.data());
  }

  /// Sizes every work buffer for N rows and B environments; reallocates only to grow.
  void reserve(std::size_t N, std::size_t B) {
    const std::size_t steps = N / B;
    backend_.grow(obs_buf_, N * observation_size());
    backend_.grow(rewards_, N);
    backend_.grow(behaviour_, N);
    backend_.grow(dones_, N);
    backend_.grow(truncated_, N);
    backend_.grow(actions_, N);
    if (net_.body().takes_previous_action())
      backend_.grow(prev_actions_, N);
    if (D_ > 0) {
      backend_.grow(raw_actions_, N * D_);
      if (net_.body().takes_previous_action())
        backend_.grow(prev_env_actions_, N * D_);
    }
    if (state_size() > 0)
      backend_.grow(start_state_, B * state_size());
    net_.reserve(*backend_, steps, B);
    backend_.grow(logits_, N * A_);
    backend_.grow(values_, N);
    backend_.grow(d_logits_, N * A_);
    backend_.grow(d_values_, N);
  }

  backend_torso_batch<S> torso_batch(std::size_t steps, std::size_t B) const {
    backend_torso_batch<S> t;
    t.observations = obs_buf_.data();
    t.start_state = start_state_.data();
    t.state_width = state_size();
    t.dones = dones_.data();
    t.steps = steps;
    t.B = B;
    return t;
  }

  typename detail::agent_body<S>::row_inputs row_inputs() const {
    return {rewards_.data(), dones_.data(), prev_actions_.data(), prev_env_actions_.data()};
  }

  void forward(std::size_t steps, std::size_t B) {
    rows_ = steps * B;
    net_.forward(*backend_, params_.data(), torso_batch(steps, B), row_inputs(), logits_.data(),
                 values_.data());
  }

  void backward(std::size_t steps, std::size_t B) {
    backend_->fill(grads_.data(), num_parameters(), S(0));
    net_.backward(*backend_, params_.data(), grads_.data(), torso_batch(steps, B), d_logits_.data(),
                  d_values_.data());
  }

  detail::backend_ref<Backend> backend_;
  detail::torso_and_body<Backend, S, Torso> net_;  ///< the torso, core and heads
  std::size_t A_ = 0, D_ = 0;  ///< policy outputs per row, continuous action elements
  std::size_t rows_ = 0;       ///< rows of the last forward pass
  buffer<S> params_, grads_;

  backend_optimizer<Backend, S> opt_;  ///< Adam or RMSProp state

  buffer<S> obs_buf_, rewards_, behaviour_, start_state_;
  buffer<std::uint8_t> dones_;
  buffer<std::uint8_t> truncated_;  ///< per step: ended by a time limit (read by the loss only)
  buffer<std::int32_t> actions_, prev_actions_;
  buffer<S> raw_actions_, prev_env_actions_;  ///< continuous: [N, D] each
  buffer<S> bounds_;                          ///< a squashing Gaussian's low then high [2D]
  std::vector<S> bounds_host_;
  bool squash_ = false;
  buffer<S> logits_, values_, d_logits_, d_values_;
  impala_loss_workspace<Backend, S> loss_workspace_;  ///< the losses' scratch, kept
  ppo_loss_workspace<Backend, S> ppo_workspace_;
  r2d2_loss_workspace<Backend, S> r2d2_workspace_;
  // R2D2's: the target network's parameters, its outputs on the trained steps, the burn-in's
  // end state (and its host copy, the trained part's start state), the importance weights and
  // the sequences' priorities.
  buffer<S> target_params_, target_logits_, target_values_, end_state_, state_scratch_,
      importance_weights_;
  bool has_target_ = false;
  std::size_t target_age_ = 0;  ///< gradient steps since the target's last copy
  std::vector<S> warm_state_;
  std::vector<double> priorities_;
  buffer<S> proximal_logits_, old_values_;  ///< a PPO step's proximal outputs
  minibatch_scratch<S> schedule_;           ///< PPO's minibatches and proximal outputs (host)
  std::vector<S> reduce_host_;              ///< the gradient on its way through a reducer
  std::shared_ptr<distributed::gradient_reducer> reducer_;  ///< null: no other ranks
  random_generator rng_{0};                                 ///< orders the minibatches
};

}  // namespace seedrl
