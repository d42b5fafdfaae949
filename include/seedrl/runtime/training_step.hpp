#pragma once
/// \file
/// The training step, written once for every trainer: `train_on_batch(model, batch, loss, ...)`
/// follows the loss's update schedule (epochs x minibatches, runtime/minibatch_schedule.hpp),
/// computes the proximal outputs PPO clips against (one forward pass over the whole batch,
/// when the update has more than one step and the loss reads them) and runs each gradient step
/// as: forward over the unrolls, the loss on the outputs (its terms, the outputs' gradients),
/// back-propagation through time, then clipping by global norm and the optimizer step (a
/// non-finite norm skips the step and changes no parameter).
///
/// What differs between trainers is where the arrays live, and that is the `Model`:
///   - `host_trainer` (runtime/trainer.hpp): any host `Network` and `Optimizer`, its lanes
///     (threads over unroll chunks, each with a network copy) a property of its model;
///   - `backend_agent_trainer` (train/agent_trainer.hpp): the agent's buffers on a
///     ComputeBackend (host_backend, or a GPU's), Adam or RMSProp as backend kernels.
/// A model provides, for the batch it is handed (already checked by the trainer):
///   - `void forward(const training_batch<S>&)`: the policy outputs and values of every row,
///     kept for what follows;
///   - `void copy_outputs(std::vector<S>& logits, std::vector<S>& values)`: the last forward's
///     outputs, to the host (the proximal outputs);
///   - `loss_terms loss(const training_batch<S>&, const L&, proximal_outputs<S>)`: the loss on
///     the kept outputs (proximal empty: the step's own), writing the outputs' gradients;
///   - `void backward(const training_batch<S>&)`: the parameters' gradient (not accumulated);
///   - `void reduce(distributed::gradient_reducer&)`: replaces that gradient by its mean over
///     the data-parallel ranks (distributed/gradient_reducer.hpp; called only with a reducer);
///   - `void apply(double max_grad_norm, train_step_result&)`: the learning rate, then the
///     gradient's norm and clipping (`clip_by_global_norm`'s rule; a non-finite norm sets
///     `applied` false and `skipped`, and leaves grad_norm 0) and, if finite, the optimizer step.
/// A loss trained from a replay against a target network (seedrl::ReplayLoss, R2D2) takes one
/// gradient step per batch, prepared by two more model members:
///   - `void target_forward(const training_batch<S>&, std::size_t first_step, std::size_t
///     update_period)`: copies the online parameters into the target network when it has none
///     yet or `update_period` steps have passed since the last copy, then runs the target
///     network over the whole batch and keeps its outputs on the steps from `first_step` on
///     (what the loss reads as target_logits / target_values);
///   - `training_batch<S> warm_up(const training_batch<S>&, std::size_t steps)`: the burn-in,
///     the online network run over the first `steps` steps (host_trainer steps `infer`; the
///     backend trainer runs one forward pass, which the trained part's forward then replaces),
///     so no gradient reaches them, and the rest of the batch (`after_burn_in`) from the state
///     it reached;
/// the model's `loss` then fills the target outputs and importance weights, and `priorities()`
/// hands the sequences' new priorities to the result.
/// With a reducer (data-parallel learners), each gradient step's gradient is averaged over the
/// ranks between backward and apply, and the result's loss terms are averaged once per call,
/// so every rank reports and applies the same.
/// Host memory for the schedule only; no Eigen, so nvcc compiles it with a CUDA backend.

#include <concepts>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "seedrl/algo/loss.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/distributed/gradient_reducer.hpp"
#include "seedrl/runtime/minibatch_schedule.hpp"
#include "seedrl/runtime/training_batch.hpp"

namespace seedrl {

/// What a trainer's model provides to `train_on_batch`; see the file comment.
template <class M, class S, class L>
concept TrainingModel = requires(M& m, const training_batch<S>& batch, const L& loss,
                                 proximal_outputs<S> proximal, std::vector<S>& out,
                                 train_step_result& r, distributed::gradient_reducer& reducer) {
  m.forward(batch);
  m.copy_outputs(out, out);
  { m.loss(batch, loss, proximal) } -> std::same_as<loss_terms>;
  m.backward(batch);
  m.reduce(reducer);
  m.apply(1.0, r);
};

/// Throws std::invalid_argument, naming `who`, unless max_grad_norm > 0 (+infinity never
/// clips); a trainer checks it before any work.
inline void check_max_grad_norm(double max_grad_norm, const char* who) {
  if (!(max_grad_norm > 0.0)) {
    throw std::invalid_argument(std::string(who) + "::train_step needs max_grad_norm > 0, got " +
                                std::to_string(max_grad_norm) + " (+infinity never clips)");
  }
}

/// The loss terms' mean over the ranks (one collective of the nine terms).
inline void mean_over_ranks(loss_terms& t, distributed::gradient_reducer& reducer) {
  double v[] = {t.total,          t.policy,    t.baseline,      t.entropy,
                t.policy_entropy, t.approx_kl, t.clip_fraction, t.behaviour_clip_fraction,
                t.q_value};
  reducer.mean(std::span<double>(v));
  t = {v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8]};
}

/// The part of `batch` after a burn-in of `steps` steps, starting from `state` (the state the
/// burn-in reached, B x state width): every per-step array from step `steps` on, T reduced by
/// `steps`; the sequence-wide fields (importance weights) as they are. A view: `batch`'s arrays
/// and `state` must outlive it.
template <class S>
training_batch<S> after_burn_in(const training_batch<S>& batch, std::size_t steps,
                                std::span<const S> state) {
  const std::size_t B = batch.B;
  const std::size_t obs = batch.observations.size() / ((batch.T + 1) * B);
  const std::size_t D = batch.action_dim;
  const auto rest = [&](auto span, std::size_t width) {
    return span.empty() ? span : span.subspan(steps * B * width);
  };
  training_batch<S> part = batch;
  part.T = batch.T - steps;
  part.observations = rest(batch.observations, obs);
  part.rewards = rest(batch.rewards, 1);
  part.dones = rest(batch.dones, 1);
  part.truncated = rest(batch.truncated, 1);
  part.prev_actions = rest(batch.prev_actions, 1);
  part.actions = rest(batch.actions, 1);
  part.behaviour_log_probs = rest(batch.behaviour_log_probs, 1);
  part.start_state = state;
  part.prev_env_actions = rest(batch.prev_env_actions, D);
  part.raw_actions = rest(batch.raw_actions, D);
  return part;
}

/// A replay loss's one gradient step (see the file comment): the target network's outputs, the
/// burn-in, then `step` on the rest of the batch; the priorities go into the result.
template <class S, class Model, class L, class Step>
train_step_result replay_step(Model& model, const training_batch<S>& batch, const L& loss,
                              const Step& step, const char* who) {
  static_assert(
      requires(const training_batch<S>& b) {
        model.target_forward(b, std::size_t{}, std::size_t{});
        { model.warm_up(b, std::size_t{}) } -> std::same_as<training_batch<S>>;
        model.priorities();
      },
      "seedrl: this trainer cannot yet train a loss with a target network and burn-in "
      "(seedrl::ReplayLoss, R2D2): its model lacks target_forward, warm_up or priorities "
      "(seedrl/runtime/training_step.hpp)");
  const std::size_t burn_in = loss.burn_in();
  if (burn_in >= batch.T)
    throw std::invalid_argument(
        std::string(who) + ": a burn-in of " + std::to_string(burn_in) +
        " steps leaves nothing to train in sequences of T = " + std::to_string(batch.T));
  model.target_forward(batch, burn_in, loss.target_update_period());
  train_step_result r = step(burn_in > 0 ? model.warm_up(batch, burn_in) : batch, {});
  const auto p = model.priorities();
  r.priorities.assign(p.begin(), p.end());
  return r;
}

/// One training step of `loss` on `batch` over `model` (see the file comment): the schedule's
/// minibatches drawn from `rng` into `mb`, `who` naming the trainer in errors, and with a
/// `reducer` each step's gradient averaged over the ranks. The result is the mean of the
/// gradient steps' terms and norms, applied only if every step was. Throws
/// std::invalid_argument on max_grad_norm <= 0 or a schedule the batch cannot split, before
/// any work.
template <class S, class Model, class L>
requires TrainingModel<Model, S, L> train_step_result
train_on_batch(Model& model, const training_batch<S>& batch, const L& loss, double max_grad_norm,
               random_generator& rng, minibatch_scratch<S>& mb, const char* who,
               distributed::gradient_reducer* reducer = nullptr) {
  check_max_grad_norm(max_grad_norm, who);
  const auto step = [&](const training_batch<S>& part, proximal_outputs<S> proximal) {
    model.forward(part);
    train_step_result r;
    r.terms = model.loss(part, loss, proximal);
    model.backward(part);
    if (reducer != nullptr)
      model.reduce(*reducer);
    model.apply(max_grad_norm, r);
    return r;
  };
  const auto averaged = [&](train_step_result r) {
    if (reducer != nullptr)
      mean_over_ranks(r.terms, *reducer);
    return r;
  };
  if constexpr (ReplayLoss<L>) {
    if (uses_replay(loss))
      return averaged(replay_step(model, batch, loss, step, who));
  }
  const update_schedule plan = schedule_of(loss);
  if (plan == update_schedule{})  // one step: the proximal outputs are the step's own
    return averaged(step(batch, proximal_outputs<S>{}));
  check_update_schedule(plan, batch.B, who);
  mb.old_values.clear();
  mb.proximal_logits.clear();
  constexpr bool reads_proximal = requires(typename L::batch_type b) {
    b.old_values = std::span<const S>();
  };
  if constexpr (reads_proximal) {
    if (needs_proximal_outputs(loss)) {  // a whole forward pass: only when the loss reads them
      model.forward(batch);
      model.copy_outputs(mb.proximal_logits, mb.old_values);
    }
  }
  return averaged(run_update_schedule(batch, plan, rng, mb, step));
}

}  // namespace seedrl
