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
///     back-propagation through time, clipping by global norm, one optimizer step. Afterwards
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

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/algo/loss.hpp"
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
/// clip_by_global_norm and the optimizer's step. Keeps its output buffers between steps.
/// The loss is any seedrl::Loss whose batch and gradient types are laid out as
/// `impala_batch<S>` and `impala_gradients<S>` (the policy outputs, values, actions, behaviour
/// log-probabilities, rewards, dones and truncation flags of the unrolls), e.g. impala_loss.
class host_trainer {
 public:
  template <class Net, class Opt, class L, class S = typename Net::scalar_type>
  requires Loss<L> && std::same_as<typename L::scalar_type, S> train_step_result train_step(
      const training_batch<S>& batch, Net& net, Opt& opt, const L& loss, double max_grad_norm) {
    const std::size_t rows = (batch.T + 1) * batch.B, A = batch.num_actions;
    auto& s = scratch<S>();
    s.logits.resize(rows * A);
    s.values.resize(rows);
    s.d_logits.resize(rows * A);
    s.d_values.resize(rows);
    agent_unroll_output<S> out{s.logits, s.values};
    net.forward_unroll({batch.T + 1, batch.B, batch.observations, batch.rewards, batch.dones,
                        batch.prev_actions, batch.start_state},
                       out);
    typename L::gradient_type grads{s.d_logits, s.d_values};
    train_step_result r;
    r.terms = loss(typename L::batch_type{batch.T, batch.B, A, s.logits, s.values, batch.actions,
                                          batch.behaviour_log_probs, batch.rewards, batch.dones,
                                          batch.truncated},
                   grads);
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

  template <class Net, class Opt>
  void sync_to_host(Net&, Opt&) noexcept {}  // the network and optimizer are the truth

  template <class Net, class Opt>
  void load_from_host(Net&, Opt&) noexcept {}

 private:
  template <class S>
  struct buffers {
    std::vector<S> logits, values, d_logits, d_values;
  };
  template <class S>
  buffers<S>& scratch() {
    if constexpr (std::same_as<S, float>)
      return float_;
    else
      return double_;
  }
  buffers<float> float_;
  buffers<double> double_;
};

}  // namespace seedrl
