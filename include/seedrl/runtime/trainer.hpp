#pragma once
/// \file
/// The Trainer plug point: how the learner's trainer thread turns a batch of unrolls into a
/// parameter update. The learner assembles the batch on the host and publishes the parameters
/// the trainer leaves in the network; the trainer decides where the arithmetic runs.
///
/// A type `T` models `seedrl::Trainer<T, Net, Opt, L>` (L, the loss, is `impala_loss<S>` unless
/// given) when it provides:
///   - `train_step_result train_step(const training_batch<S>&, Net&, Opt&, const L&,
///      double max_grad_norm)`: forward over the unrolls, the loss,
///     back-propagation through time, clipping by global norm, one optimizer step (or, for a
///     loss with an update_schedule, the epochs x minibatches steps it asks for; a trainer
///     that cannot follow a loss's schedule must not accept that loss). Afterwards
///     `net.parameters()` holds the new parameters (what the learner publishes). A gradient
///     whose norm is not finite skips the update (`applied` false, `skipped` says why) and
///     changes no parameter;
///   - `void sync_to_host(Net&, Opt&)`: brings `opt`'s state (and the parameters) up to date
///     where the trainer keeps its own copy, e.g. on a GPU; the learner calls it before it
///     writes a checkpoint;
///   - `void load_from_host(Net&, Opt&)`: the learner changed `net` and `opt` (a restored
///     checkpoint): take them as the new truth.
///
/// Optional capability, `seedrl::DevicePublishingTrainer<T, Net, Opt>`: a trainer that keeps
/// the parameters on a device publishes them there, for an inference engine on that device:
///   - `std::shared_ptr<parameter_source<S>> publish_on_device(Net&, Opt&)`: takes `net` and
///     `opt` as the truth if it has not yet (load_from_host), publishes the parameters as the
///     source's first set, and from then on each train_step publishes its new parameters into
///     that source on the device (seedrl/runtime/parameter_source.hpp) instead of writing them
///     into `net.parameters()`; load_from_host publishes what it loaded. sync_to_host still
///     brings them to `net`. The learner turns it on when its engine takes device parameters.
///
/// `host_trainer` trains the network object itself on the CPU (the default);
/// `cuda::mlp_lstm_trainer` (seedrl/cuda/mlp_lstm_trainer.hpp) runs the step on a GPU.

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/algo/loss.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/net/agent_io.hpp"
#include "seedrl/optim/clip.hpp"
#include "seedrl/runtime/detail/worker_pool.hpp"
#include "seedrl/runtime/minibatch_schedule.hpp"
#include "seedrl/runtime/parameter_source.hpp"
#include "seedrl/runtime/training_batch.hpp"
#include "seedrl/runtime/training_step.hpp"

namespace seedrl {

/// A way to run training steps; see the file comment.
template <class T, class Net, class Opt, class L = impala_loss<typename Net::scalar_type>>
concept Trainer = requires(T& t, Net& net, Opt& opt,
                           const training_batch<typename Net::scalar_type>& batch, const L& loss,
                           double max_norm) {
  { t.train_step(batch, net, opt, loss, max_norm) } -> std::same_as<train_step_result>;
  t.sync_to_host(net, opt);
  t.load_from_host(net, opt);
};

/// See "Optional capability" in the file comment.
template <class T, class Net, class Opt>
concept DevicePublishingTrainer = requires(T& t, Net& net, Opt& opt) {
  {
    t.publish_on_device(net, opt)
    } -> std::convertible_to<std::shared_ptr<parameter_source<typename Net::scalar_type>>>;
};

/// Trains the network object on the CPU: its forward_unroll / backward_unroll, the CPU loss,
/// clip_by_global_norm and the optimizer's step, as the step protocol every trainer runs
/// (`train_on_batch`, runtime/training_step.hpp) over the network. Keeps its buffers between
/// steps. Throws std::invalid_argument on max_grad_norm <= 0 before any work.
/// The loss is any seedrl::Loss whose batch and gradient types are laid out as
/// `impala_batch<S>` and `impala_gradients<S>` (the policy outputs, values, actions, behaviour
/// log-probabilities, rewards, dones and truncation flags of the unrolls), e.g. impala_loss; a
/// batch type with a further `old_values` member (and `proximal_logits`) gets the values (and
/// policy outputs) of the parameters the batch arrived to, before any of its steps: the
/// proximal outputs that PPO clips against and takes its targets from, computed in one forward
/// pass over the whole batch when the update has more than one step.
///
/// The loss's update_schedule (algo/loss.hpp) is followed: epochs x minibatches gradient steps
/// per batch, over whole unrolls in an order drawn from the trainer's own generator (seeded
/// by `seed`). The result reports the mean of the steps' loss terms and gradient norms; it
/// counts as applied only if every step was, and `skipped` then says how many were not and why.
///
/// With `threads` W > 1, each gradient step splits its unrolls into W contiguous chunks (the
/// first B mod W one unroll longer): chunk 0 runs on the network itself on the calling thread,
/// the others on W - 1 persistent threads, each with a network copy of its own (made at the
/// first step, its parameters refreshed from the network before every step). The forward
/// passes fill the whole batch's outputs, the loss runs once on them on the calling thread (so
/// its means and any batch statistics are exactly those of W = 1), the backward passes run
/// chunk by chunk, and the chunks' gradients are summed in chunk order, which makes the result
/// deterministic for a given W; then one clip and one optimizer step. Unrolls are independent,
/// so W only changes the order in which a gradient's terms are added.
class host_trainer {
 public:
  explicit host_trainer(std::uint64_t seed = 0, std::size_t threads = 1) : rng_(seed) {
    set_threads(threads);
  }

  /// A new trainer with `other`'s seed state, thread count and reducer (its own threads and
  /// copies).
  host_trainer(const host_trainer& other) : rng_(other.rng_), reducer_(other.reducer_) {
    set_threads(other.threads());
  }
  host_trainer(host_trainer&&) noexcept = default;
  host_trainer& operator=(host_trainer&&) noexcept = default;
  host_trainer& operator=(const host_trainer& other) {
    if (this != &other) {
      rng_ = other.rng_;
      reducer_ = other.reducer_;
      set_threads(other.threads());
    }
    return *this;
  }
  ~host_trainer() = default;

  /// Threads each gradient step runs on (learner_config::trainer_threads); at least 1. Call
  /// between steps: the threads and network copies are replaced.
  void set_threads(std::size_t threads) {
    if (threads == 0)
      throw std::invalid_argument("seedrl::host_trainer: 0 threads; at least 1");
    replicas_.reset();
    pool_ = threads > 1 ? std::make_unique<detail::worker_pool>(threads) : nullptr;
  }
  std::size_t threads() const noexcept { return pool_ ? pool_->lanes() : 1; }

  /// Data-parallel training: every gradient step averages its gradient over the reducer's
  /// ranks before clipping and the optimizer (distributed/gradient_reducer.hpp), and the
  /// reported loss terms are the ranks' mean. Every rank must run the same steps on batches of
  /// the same shape. Null (the default): this process alone.
  void set_gradient_reducer(std::shared_ptr<distributed::gradient_reducer> reducer) {
    reducer_ = std::move(reducer);
  }
  const std::shared_ptr<distributed::gradient_reducer>& reducer() const noexcept {
    return reducer_;
  }

  template <class Net, class Opt, class L, class S = typename Net::scalar_type>
  requires Loss<L> && std::same_as<typename L::scalar_type, S> train_step_result train_step(
      const training_batch<S>& batch, Net& net, Opt& opt, const L& loss, double max_grad_norm) {
    auto& s = scratch<S>();
    network_model<Net, Opt, S> model{*this, net, opt, s};
    return train_on_batch(model, batch, loss, max_grad_norm, rng_, s.mb, "seedrl::host_trainer",
                          reducer_.get());
  }

  template <class Net, class Opt>
  void sync_to_host(Net&, Opt&) noexcept {}  // the network and optimizer are the truth

  template <class Net, class Opt>
  void load_from_host(Net&, Opt&) noexcept {}

 private:
  /// What keeps a network copy of a type known only where it is used.
  struct replica_base {
    virtual ~replica_base() = default;
  };

  template <class S>
  struct buffers {
    std::vector<S> logits, values, d_logits, d_values;
    minibatch_scratch<S> mb;  ///< the schedule's order and minibatch (or a lane's columns)
    // A replay loss's (R2D2): the target network's outputs on the trained steps, the burn-in's
    // state and one step's outputs, and the sequences' priorities.
    std::vector<S> target_logits, target_values, all_logits, all_values, warm_state, step_logits,
        step_values;
    std::vector<double> priorities;
  };

  /// A replay loss's target network: a copy of the online one, refreshed every update period.
  template <class Net>
  struct target_network final : replica_base {
    explicit target_network(const Net& online) : net(online) {}
    Net net;
    std::size_t parameters = 0;  // the size it was copied at
    std::size_t age = 0;         // gradient steps since the last copy
  };

  template <class S>
  buffers<S>& scratch() {
    if constexpr (std::same_as<S, float>)
      return float_;
    else
      return double_;
  }

  /// The network's outputs on the whole batch, into s.logits and s.values; with threads,
  /// chunk by chunk (see the class comment).
  template <class Net, class S>
  void forward(const training_batch<S>& batch, Net& net, buffers<S>& s) {
    const std::size_t rows = (batch.T + 1) * batch.B;
    s.logits.resize(rows * batch.num_actions);
    s.values.resize(rows);
    if (pool_ && batch.B > 1) {
      forward_chunks(batch, net, s);
      return;
    }
    agent_unroll_output<S> out{s.logits, s.values};
    net.forward_unroll({batch.T + 1, batch.B, batch.observations, batch.rewards, batch.dones,
                        batch.prev_actions, batch.start_state, batch.prev_env_actions},
                       out);
  }

  /// Lanes' network copies and buffers for one network type: lane w > 0 trains `nets[w - 1]`,
  /// lane 0 the trainer's argument.
  template <class Net, class S>
  struct replica_set final : replica_base {
    std::vector<Net> nets;
    std::size_t parameters = 0;  // the size they were copied at
    std::vector<buffers<S>> bufs;
    std::vector<std::size_t> columns;  // 0, 1, ..., B-1: chunks are slices of it
  };

  template <class Net, class S>
  replica_set<Net, S>& replicas(Net& net) {
    auto* r = dynamic_cast<replica_set<Net, S>*>(replicas_.get());
    if (r == nullptr || r->parameters != net.parameters().size()) {
      replicas_.reset();
      auto fresh = std::make_unique<replica_set<Net, S>>();
      fresh->nets.reserve(pool_->lanes() - 1);
      for (std::size_t w = 1; w < pool_->lanes(); ++w)
        fresh->nets.emplace_back(net);
      fresh->parameters = net.parameters().size();
      fresh->bufs.resize(pool_->lanes());
      r = fresh.get();
      replicas_ = std::move(fresh);
    }
    return *r;
  }

  /// Chunk w's first column and column count among B (the first B mod W chunks one longer).
  std::pair<std::size_t, std::size_t> chunk(std::size_t B, std::size_t w) const {
    const std::size_t W = pool_->lanes(), base = B / W, extra = B % W;
    return {w * base + std::min(w, extra), base + (w < extra ? 1 : 0)};
  }

  template <class Net, class S>
  Net& lane_net(Net& net, replica_set<Net, S>& r, std::size_t w) {
    return w == 0 ? net : r.nets[w - 1];
  }

  /// Forward on W chunks: the copies take the network's parameters, each lane gathers its
  /// columns, runs its unroll and writes its outputs into the batch's rows.
  template <class Net, class S>
  void forward_chunks(const training_batch<S>& batch, Net& net, buffers<S>& s) {
    auto& r = replicas<Net, S>(net);
    r.columns.resize(batch.B);
    for (std::size_t b = 0; b < batch.B; ++b)
      r.columns[b] = b;
    const auto params = net.parameters();
    const std::size_t A = batch.num_actions, T1 = batch.T + 1, B = batch.B;
    pool_->run([&](std::size_t w) {
      const auto [c0, n] = chunk(B, w);
      if (n == 0)
        return;
      Net& lane = lane_net(net, r, w);
      if (w != 0)
        std::copy(params.begin(), params.end(), lane.parameters().begin());
      auto& ws = r.bufs[w];
      const training_batch<S> part =
          gather_unrolls(batch, std::span<const std::size_t>(r.columns.data() + c0, n), ws.mb);
      ws.logits.resize(T1 * n * A);
      ws.values.resize(T1 * n);
      agent_unroll_output<S> out{ws.logits, ws.values};
      lane.forward_unroll({part.T + 1, part.B, part.observations, part.rewards, part.dones,
                           part.prev_actions, part.start_state, part.prev_env_actions},
                          out);
      for (std::size_t t = 0; t < T1; ++t) {
        std::copy_n(ws.logits.begin() + static_cast<std::ptrdiff_t>(t * n * A), n * A,
                    s.logits.begin() + static_cast<std::ptrdiff_t>((t * B + c0) * A));
        std::copy_n(ws.values.begin() + static_cast<std::ptrdiff_t>(t * n), n,
                    s.values.begin() + static_cast<std::ptrdiff_t>(t * B + c0));
      }
    });
  }

  /// Backward on the chunks of the last forward_chunks, then the network's gradient as the
  /// lanes' sum in lane order (each lane sums one slice of the parameters).
  template <class Net, class S>
  void backward_chunks(std::size_t T, std::size_t B, std::size_t A, Net& net, buffers<S>& s) {
    auto& r = replicas<Net, S>(net);
    const std::size_t T1 = T + 1, W = pool_->lanes();
    pool_->run([&](std::size_t w) {
      const auto [c0, n] = chunk(B, w);
      Net& lane = lane_net(net, r, w);
      lane.zero_gradients();
      if (n == 0)
        return;
      auto& ws = r.bufs[w];
      ws.d_logits.resize(T1 * n * A);
      ws.d_values.resize(T1 * n);
      for (std::size_t t = 0; t < T1; ++t) {
        std::copy_n(s.d_logits.begin() + static_cast<std::ptrdiff_t>((t * B + c0) * A), n * A,
                    ws.d_logits.begin() + static_cast<std::ptrdiff_t>(t * n * A));
        std::copy_n(s.d_values.begin() + static_cast<std::ptrdiff_t>(t * B + c0), n,
                    ws.d_values.begin() + static_cast<std::ptrdiff_t>(t * n));
      }
      lane.backward_unroll({ws.d_logits, ws.d_values});
    });
    const auto total = net.gradients();
    const std::size_t P = total.size();
    pool_->run([&](std::size_t w) {
      const std::size_t begin = P * w / W, end = P * (w + 1) / W;
      for (std::size_t v = 1; v < W; ++v) {
        const auto g = r.nets[v - 1].gradients();
        for (std::size_t i = begin; i < end; ++i)
          total[i] += g[i];
      }
    });
  }

  /// train_on_batch's model (runtime/training_step.hpp) over a host network and optimizer:
  /// the outputs and their gradients in the trainer's buffers, the lanes when it has threads.
  template <class Net, class Opt, class S>
  struct network_model {
    host_trainer& trainer;
    Net& net;
    Opt& opt;
    buffers<S>& s;

    void forward(const training_batch<S>& batch) { trainer.forward(batch, net, s); }

    void copy_outputs(std::vector<S>& logits, std::vector<S>& values) const {
      logits = s.logits;
      values = s.values;
    }

    /// A replay loss's target network over `batch`, keeping its outputs from `first_step` on
    /// (see training_step.hpp).
    void target_forward(const training_batch<S>& batch, std::size_t first_step,
                        std::size_t update_period) {
      auto* t = dynamic_cast<target_network<Net>*>(trainer.target_.get());
      if (t == nullptr || t->parameters != net.parameters().size()) {
        trainer.target_ = std::make_unique<target_network<Net>>(net);
        t = static_cast<target_network<Net>*>(trainer.target_.get());
        t->parameters = net.parameters().size();
        t->age = 0;
      } else if (++t->age >= update_period) {
        const auto online = net.parameters();
        std::copy(online.begin(), online.end(), t->net.parameters().begin());
        t->age = 0;
      }
      const std::size_t rows = (batch.T + 1) * batch.B, A = batch.num_actions;
      s.all_logits.resize(rows * A);
      s.all_values.resize(rows);
      agent_unroll_output<S> out{s.all_logits, s.all_values};
      t->net.forward_unroll({batch.T + 1, batch.B, batch.observations, batch.rewards, batch.dones,
                             batch.prev_actions, batch.start_state, batch.prev_env_actions},
                            out);
      const std::size_t from = first_step * batch.B;
      s.target_logits.assign(s.all_logits.begin() + static_cast<std::ptrdiff_t>(from * A),
                             s.all_logits.end());
      s.target_values.assign(s.all_values.begin() + static_cast<std::ptrdiff_t>(from),
                             s.all_values.end());
    }

    /// The burn-in: the online network stepped (`infer`, no activations kept) over the first
    /// `steps` steps from the batch's start state; the rest of the batch from the state reached.
    training_batch<S> warm_up(const training_batch<S>& batch, std::size_t steps) {
      const std::size_t B = batch.B, A = batch.num_actions;
      const std::size_t obs = batch.observations.size() / ((batch.T + 1) * B);
      const std::size_t D = batch.action_dim;
      auto state = net.initial_state(B);
      std::copy(batch.start_state.begin(), batch.start_state.end(), state.data.begin());
      s.step_logits.resize(B * A);
      s.step_values.resize(B);
      for (std::size_t t = 0; t < steps; ++t) {
        const auto rows = [&](auto span, std::size_t width) {
          return span.empty() ? span : span.subspan(t * B * width, B * width);
        };
        agent_step_input<S> in{rows(batch.observations, obs), rows(batch.rewards, 1),
                               rows(batch.dones, 1), rows(batch.prev_actions, 1),
                               rows(batch.prev_env_actions, D)};
        agent_step_output<S> out{s.step_logits, s.step_values};
        net.infer(in, state, out);
      }
      s.warm_state = std::move(state.data);
      return after_burn_in(batch, steps, std::span<const S>(s.warm_state));
    }

    std::span<const double> priorities() const { return s.priorities; }

    template <class L>
    loss_terms loss(const training_batch<S>& batch, const L& loss, proximal_outputs<S> proximal) {
      const std::size_t rows = (batch.T + 1) * batch.B, A = batch.num_actions;
      s.d_logits.resize(rows * A);
      s.d_values.resize(rows);
      typename L::gradient_type grads{s.d_logits, s.d_values};
      using batch_type = typename L::batch_type;
      // impala_batch's fields by name; the optional ones only where the loss's batch has them.
      batch_type b{};
      b.T = batch.T;
      b.B = batch.B;
      b.num_actions = A;
      b.logits = s.logits;
      b.values = s.values;
      b.actions = batch.actions;
      if constexpr (requires { b.behaviour_log_probs = batch.behaviour_log_probs; })
        b.behaviour_log_probs = batch.behaviour_log_probs;
      b.rewards = batch.rewards;
      b.dones = batch.dones;
      b.truncated = batch.truncated;
      if constexpr (requires { b.raw_actions = batch.raw_actions; }) {
        b.raw_actions = batch.raw_actions;
        b.action_dim = batch.action_dim;
      }
      if constexpr (requires { b.old_values = proximal.values; })
        b.old_values = proximal.values.empty() ? std::span<const S>(s.values) : proximal.values;
      if constexpr (requires { b.proximal_logits = proximal.logits; })
        b.proximal_logits = proximal.logits;  // empty: the step's own, which the loss knows
      if constexpr (ReplayLoss<L>) {  // target_forward kept the target's outputs on these steps
        b.target_logits = s.target_logits;
        b.target_values = s.target_values;
        b.importance_weights = batch.importance_weights;
        s.priorities.resize(batch.B);
        grads.priorities = s.priorities;
      }
      return loss(b, grads);
    }

    void backward(const training_batch<S>& batch) {
      if (trainer.pool_ && batch.B > 1) {
        trainer.backward_chunks(batch.T, batch.B, batch.num_actions, net, s);
      } else {
        net.zero_gradients();
        net.backward_unroll({s.d_logits, s.d_values});
      }
    }

    void reduce(distributed::gradient_reducer& reducer) { reducer.mean(net.gradients()); }

    void apply(double max_grad_norm, train_step_result& r) {
      if constexpr (requires { opt.learning_rate(); })
        r.learning_rate = static_cast<double>(opt.learning_rate());
      try {
        r.grad_norm = clip_by_global_norm<S>(net.gradients(), max_grad_norm);
        opt.step(net.parameters(), net.gradients());
      } catch (const std::domain_error& e) {
        r.applied = false;
        r.skipped = e.what();
      }
    }
  };

  random_generator rng_;
  buffers<float> float_;
  buffers<double> double_;
  std::unique_ptr<detail::worker_pool> pool_;  // null with one thread
  std::unique_ptr<replica_base> replicas_;     // the copies for the network type last trained
  std::unique_ptr<replica_base> target_;       // a replay loss's target network
  std::shared_ptr<distributed::gradient_reducer> reducer_;  // null: no other ranks
};

}  // namespace seedrl
