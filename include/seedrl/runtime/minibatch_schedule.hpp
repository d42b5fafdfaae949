#pragma once
/// \file
/// A loss's update schedule (`seedrl::update_schedule`, algo/loss.hpp) over a training batch,
/// written once for every trainer: `run_update_schedule` draws each epoch's order of the
/// unrolls from the trainer's generator (Fisher-Yates), gathers each minibatch's unrolls as a
/// batch of their own (`gather_unrolls`, with the matching rows of the proximal outputs when the
/// trainer filled them) and hands it to the trainer's one-step function; the result is the
/// mean of the steps' terms and gradient norms, applied only if every step was. `host_trainer`
/// (runtime/trainer.hpp) and `backend_agent_trainer` (train/agent_trainer.hpp) both run it, so
/// the same seed gives the same minibatches on the CPU and on a GPU. Host memory only; no Eigen.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "seedrl/algo/loss.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/runtime/training_batch.hpp"

namespace seedrl {

/// The outputs of the parameters a batch arrived to, for one step's unrolls (PPO's proximal
/// policy outputs and values); empty: the step's own outputs.
template <class S>
struct proximal_outputs {
  std::span<const S> values, logits;
};

/// Where `gather_unrolls` puts a minibatch, and the whole batch's proximal outputs when the
/// trainer fills them (`old_values` [(T+1)*B], `proximal_logits` [(T+1)*B*A]).
template <class S>
struct minibatch_scratch {
  std::vector<S> old_values, proximal_logits;
  std::vector<std::size_t> order;
  std::vector<S> sub_observations, sub_rewards, sub_behaviour, sub_start, sub_old_values,
      sub_proximal_logits;
  std::vector<std::uint8_t> sub_dones, sub_truncated;
  std::vector<std::int32_t> sub_prev_actions, sub_actions;
  std::vector<S> sub_prev_env_actions, sub_raw_actions;  // continuous: D per row
};

/// The unrolls `columns` of `batch` (and of s's proximal outputs, when filled), as a batch of
/// their own in s's minibatch buffers; time-major like the batch.
template <class S>
training_batch<S> gather_unrolls(const training_batch<S>& batch,
                                 std::span<const std::size_t> columns, minibatch_scratch<S>& s) {
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
  const std::size_t A = batch.num_actions;
  s.sub_proximal_logits.resize(s.proximal_logits.empty() ? 0 : T1 * b * A);
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
      if (!s.proximal_logits.empty())
        std::copy_n(s.proximal_logits.begin() + static_cast<std::ptrdiff_t>(from * A), A,
                    s.sub_proximal_logits.begin() + static_cast<std::ptrdiff_t>(to * A));
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

/// Throws std::invalid_argument (naming `who`) unless `plan` has an epoch and a minibatch and
/// the batch's B unrolls split into its minibatches evenly.
inline void check_update_schedule(const update_schedule& plan, std::size_t B, const char* who) {
  if (plan.epochs == 0 || plan.minibatches == 0 || B % plan.minibatches != 0) {
    throw std::invalid_argument(
        std::string(who) + ": the loss's update schedule (" + std::to_string(plan.epochs) +
        " epochs x " + std::to_string(plan.minibatches) +
        " minibatches) needs at least one of each and a batch of unrolls that is a multiple of "
        "the minibatch count; the batch has " +
        std::to_string(B) + " unrolls");
  }
}

/// Runs `plan` over `batch` (see the file comment): `step(part, proximal)` is one gradient step
/// on a minibatch `part` (a training_batch<S>) with its rows of s's proximal outputs (empty
/// where s holds none), returning its train_step_result. The plan must pass
/// check_update_schedule.
template <class S, class Step>
train_step_result run_update_schedule(const training_batch<S>& batch, const update_schedule& plan,
                                      random_generator& rng, minibatch_scratch<S>& s, Step&& step) {
  const std::size_t per_minibatch = batch.B / plan.minibatches;
  s.order.resize(batch.B);
  for (std::size_t b = 0; b < batch.B; ++b)
    s.order[b] = b;
  train_step_result total;
  total.terms = {};
  std::size_t steps = 0, skipped = 0;
  for (std::size_t e = 0; e < plan.epochs; ++e) {
    for (std::size_t i = batch.B; i > 1; --i)  // Fisher-Yates
      std::swap(s.order[i - 1], s.order[rng.below(i)]);
    for (std::size_t m = 0; m < plan.minibatches; ++m) {
      const std::span<const std::size_t> columns(s.order.data() + m * per_minibatch, per_minibatch);
      const training_batch<S> part = gather_unrolls(batch, columns, s);
      const train_step_result r =
          step(part, proximal_outputs<S>{s.sub_old_values, s.sub_proximal_logits});
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

}  // namespace seedrl
