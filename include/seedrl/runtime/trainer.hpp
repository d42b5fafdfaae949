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
/// `host_trainer` trains the network object itself on the CPU (the default);
/// `cuda::mlp_lstm_trainer` (seedrl/cuda/mlp_lstm_trainer.hpp) runs the step on a GPU.

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
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
#include "seedrl/runtime/training_batch.hpp"

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

/// Trains the network object on the CPU: its forward_unroll / backward_unroll, the CPU loss,
/// clip_by_global_norm and the optimizer's step. Keeps its buffers between steps.
/// The loss is any seedrl::Loss whose batch and gradient types are laid out as
/// `impala_batch<S>` and `impala_gradients<S>` (the policy outputs, values, actions, behaviour
/// log-probabilities, rewards, dones and truncation flags of the unrolls), e.g. impala_loss; a
/// batch type with a further `old_values` member gets the values of the parameters the batch
/// arrived to (before any of its steps), for losses that clip against them (PPO).
///
/// The loss's update_schedule (algo/loss.hpp) is followed: epochs x minibatches gradient steps
/// per batch, over whole unrolls in an order drawn from the trainer's own generator (seeded
/// by `seed`). The result reports the mean of the steps' loss terms and gradient norms; it
/// counts as applied only if every step was, and `skipped` then says how many were not and why.
class host_trainer {
 public:
  explicit host_trainer(std::uint64_t seed = 0) : rng_(seed) {}

  template <class Net, class Opt, class L, class S = typename Net::scalar_type>
  requires Loss<L> && std::same_as<typename L::scalar_type, S> train_step_result train_step(
      const training_batch<S>& batch, Net& net, Opt& opt, const L& loss, double max_grad_norm) {
    const update_schedule plan = schedule_of(loss);
    auto& s = scratch<S>();
    constexpr bool wants_old_values = requires(typename L::batch_type b) {
      b.old_values = std::span<const S>();
    };
    if (plan == update_schedule{})  // one step: the old values are the step's own
      return step(batch, net, opt, loss, max_grad_norm, std::span<const S>());
    if (plan.epochs == 0 || plan.minibatches == 0 || batch.B % plan.minibatches != 0) {
      throw std::invalid_argument(
          "seedrl::host_trainer: the loss's update schedule (" + std::to_string(plan.epochs) +
          " epochs x " + std::to_string(plan.minibatches) +
          " minibatches) needs at least one of each and a batch of unrolls that is a multiple of "
          "the minibatch count; the batch has " +
          std::to_string(batch.B) + " unrolls");
    }
    if constexpr (wants_old_values) {
      forward(batch, net, s);
      s.old_values = s.values;
    }
    const std::size_t per_minibatch = batch.B / plan.minibatches;
    s.order.resize(batch.B);
    for (std::size_t b = 0; b < batch.B; ++b)
      s.order[b] = b;
    train_step_result total;
    total.terms = {};
    std::size_t steps = 0, skipped = 0;
    for (std::size_t e = 0; e < plan.epochs; ++e) {
      for (std::size_t i = batch.B; i > 1; --i)  // Fisher-Yates
        std::swap(s.order[i - 1], s.order[rng_.below(i)]);
      for (std::size_t m = 0; m < plan.minibatches; ++m) {
        const std::span<const std::size_t> columns(s.order.data() + m * per_minibatch,
                                                   per_minibatch);
        const training_batch<S> part = gather(batch, columns, s);
        const auto r =
            step(part, net, opt, loss, max_grad_norm, std::span<const S>(s.sub_old_values));
        ++steps;
        total.terms = total.terms + r.terms;
        total.grad_norm += r.grad_norm;
        total.learning_rate = r.learning_rate;
        if (!r.applied) {
          if (skipped++ == 0)
            total.skipped = r.skipped;
        }
      }
    }
    total.terms = total.terms * (1.0 / static_cast<double>(steps));
    total.grad_norm /= static_cast<double>(steps);
    if (skipped > 0) {
      total.applied = false;
      total.skipped = std::to_string(skipped) + " of " + std::to_string(steps) +
                      " minibatch steps skipped (the first: " + total.skipped + ")";
    }
    return total;
  }

  template <class Net, class Opt>
  void sync_to_host(Net&, Opt&) noexcept {}  // the network and optimizer are the truth

  template <class Net, class Opt>
  void load_from_host(Net&, Opt&) noexcept {}

 private:
  template <class S>
  struct buffers {
    std::vector<S> logits, values, d_logits, d_values, old_values;
    std::vector<std::size_t> order;
    // One minibatch, gathered from the batch's columns.
    std::vector<S> sub_observations, sub_rewards, sub_behaviour, sub_start, sub_old_values;
    std::vector<std::uint8_t> sub_dones, sub_truncated;
    std::vector<std::int32_t> sub_prev_actions, sub_actions;
    std::vector<S> sub_prev_env_actions, sub_raw_actions;  // continuous: D per row
  };

  template <class S>
  buffers<S>& scratch() {
    if constexpr (std::same_as<S, float>)
      return float_;
    else
      return double_;
  }

  /// The network's outputs on the whole batch, into s.logits and s.values.
  template <class Net, class S>
  static void forward(const training_batch<S>& batch, Net& net, buffers<S>& s) {
    const std::size_t rows = (batch.T + 1) * batch.B;
    s.logits.resize(rows * batch.num_actions);
    s.values.resize(rows);
    agent_unroll_output<S> out{s.logits, s.values};
    net.forward_unroll({batch.T + 1, batch.B, batch.observations, batch.rewards, batch.dones,
                        batch.prev_actions, batch.start_state, batch.prev_env_actions},
                       out);
  }

  /// Forward, loss, backward, clipping and one optimizer step on `batch`.
  template <class Net, class Opt, class L, class S>
  train_step_result step(const training_batch<S>& batch, Net& net, Opt& opt, const L& loss,
                         double max_grad_norm, std::span<const S> old_values) {
    const std::size_t rows = (batch.T + 1) * batch.B, A = batch.num_actions;
    auto& s = scratch<S>();
    forward(batch, net, s);
    s.d_logits.resize(rows * A);
    s.d_values.resize(rows);
    typename L::gradient_type grads{s.d_logits, s.d_values};
    using batch_type = typename L::batch_type;
    // impala_batch's fields by name; the optional ones only where the loss's batch has them.
    const batch_type lb = [&] {
      batch_type b{};
      b.T = batch.T;
      b.B = batch.B;
      b.num_actions = A;
      b.logits = s.logits;
      b.values = s.values;
      b.actions = batch.actions;
      b.behaviour_log_probs = batch.behaviour_log_probs;
      b.rewards = batch.rewards;
      b.dones = batch.dones;
      b.truncated = batch.truncated;
      if constexpr (requires { b.raw_actions = batch.raw_actions; }) {
        b.raw_actions = batch.raw_actions;
        b.action_dim = batch.action_dim;
      }
      if constexpr (requires { b.old_values = old_values; })
        b.old_values = old_values.empty() ? std::span<const S>(s.values) : old_values;
      return b;
    }();
    train_step_result r;
    r.terms = loss(lb, grads);
    net.zero_gradients();
    net.backward_unroll({s.d_logits, s.d_values});
    if constexpr (requires { opt.learning_rate(); })
      r.learning_rate = static_cast<double>(opt.learning_rate());
    try {
      r.grad_norm = clip_by_global_norm<S>(net.gradients(), max_grad_norm);
      opt.step(net.parameters(), net.gradients());
    } catch (const std::domain_error& e) {
      r.applied = false;
      r.skipped = e.what();
    }
    return r;
  }

  /// The unrolls `columns` of `batch` (and of s.old_values, when filled), as a batch of their
  /// own in s's minibatch buffers; time-major like the batch.
  template <class S>
  static training_batch<S> gather(const training_batch<S>& batch,
                                  std::span<const std::size_t> columns, buffers<S>& s) {
    const std::size_t T1 = batch.T + 1, B = batch.B, b = columns.size();
    const std::size_t obs = batch.observations.size() / (T1 * B);
    const std::size_t W = batch.start_state.size() / B;
    s.sub_observations.resize(T1 * b * obs);
    s.sub_rewards.resize(T1 * b);
    s.sub_behaviour.resize(T1 * b);
    s.sub_dones.resize(T1 * b);
    s.sub_truncated.resize(T1 * b);
    s.sub_prev_actions.resize(T1 * b);
    s.sub_actions.resize(T1 * b);
    s.sub_start.resize(b * W);
    const std::size_t D = batch.action_dim;
    s.sub_prev_env_actions.resize(T1 * b * D);
    s.sub_raw_actions.resize(T1 * b * D);
    s.sub_old_values.resize(s.old_values.empty() ? 0 : T1 * b);
    for (std::size_t j = 0; j < b; ++j) {
      const std::size_t c = columns[j];
      std::copy_n(batch.start_state.begin() + static_cast<std::ptrdiff_t>(c * W), W,
                  s.sub_start.begin() + static_cast<std::ptrdiff_t>(j * W));
      for (std::size_t t = 0; t < T1; ++t) {
        const std::size_t from = t * B + c, to = t * b + j;
        std::copy_n(batch.observations.begin() + static_cast<std::ptrdiff_t>(from * obs), obs,
                    s.sub_observations.begin() + static_cast<std::ptrdiff_t>(to * obs));
        s.sub_rewards[to] = batch.rewards[from];
        s.sub_behaviour[to] = batch.behaviour_log_probs[from];
        s.sub_dones[to] = batch.dones[from];
        s.sub_truncated[to] = batch.truncated[from];
        s.sub_prev_actions[to] = batch.prev_actions[from];
        s.sub_actions[to] = batch.actions[from];
        for (std::size_t i = 0; i < D; ++i) {
          s.sub_prev_env_actions[to * D + i] = batch.prev_env_actions[from * D + i];
          s.sub_raw_actions[to * D + i] = batch.raw_actions[from * D + i];
        }
        if (!s.old_values.empty())
          s.sub_old_values[to] = s.old_values[from];
      }
    }
    return {batch.T,
            b,
            batch.num_actions,
            s.sub_observations,
            s.sub_rewards,
            s.sub_dones,
            s.sub_truncated,
            s.sub_prev_actions,
            s.sub_actions,
            s.sub_behaviour,
            s.sub_start,
            D,
            s.sub_prev_env_actions,
            s.sub_raw_actions};
  }

  random_generator rng_;
  buffers<float> float_;
  buffers<double> double_;
};

}  // namespace seedrl
