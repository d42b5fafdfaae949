#pragma once
/// \file
/// The ActionSampler plug point: how the learner's inference loop turns a batch of policy
/// outputs into the actions it sends and the behaviour log-probabilities it records for the
/// loss. The learner takes it as a type parameter so that other policies (e.g. Gaussian ones)
/// plug in without a copy of the inference loop.
///
/// A type `P` models `seedrl::ActionSampler<P, S>` for scalar `S` when it provides:
///   - `void check(const seedrl::action_spec&) const;` throws std::invalid_argument, saying
///     why, for an action space it cannot serve (the learner calls it at construction);
///   - `std::size_t outputs_per_row(const seedrl::action_spec&) const;` how many policy
///     outputs the network writes per environment (the logits buffer's row width);
///   - `void sample(std::span<const S> outputs, std::size_t rows, std::size_t width,
///      seedrl::random_generator& rng, std::span<std::int32_t> actions,
///      std::span<S> log_probs) const;` one action per row of `outputs` ([rows, width]) and
///     its log-probability under the same distribution; must not allocate (it runs per batch).
///
/// Actions are `std::int32_t` on the wire and in unrolls today; continuous actions widen that.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>

#include "seedrl/core/random.hpp"
#include "seedrl/core/spec.hpp"
#include "seedrl/net/categorical.hpp"

namespace seedrl {

/// A way to choose actions from policy outputs; see the file comment.
template <class P, class S>
concept ActionSampler = std::floating_point<S> && std::copy_constructible<P> &&
    requires(const P& p, const action_spec& spec, std::span<const S> outputs, std::size_t n,
             random_generator& rng, std::span<std::int32_t> actions, std::span<S> log_probs) {
  p.check(spec);
  { p.outputs_per_row(spec) } -> std::convertible_to<std::size_t>;
  p.sample(outputs, n, n, rng, actions, log_probs);
};

/// How a policy's outputs become actions.
enum class action_selection : std::uint8_t {
  greedy,  ///< the most probable action (evaluation)
  sample,  ///< a draw from the policy's distribution (what actors do in training)
};

/// Draws from the categorical distribution over each row of logits (the default; SEED's
/// discrete policies), or takes its most probable action when `selection` is greedy (a
/// learner that evaluates a policy). The log-probability is the chosen action's under the
/// distribution either way.
struct categorical_sampler {
  action_selection selection = action_selection::sample;

  void check(const action_spec& spec) const {
    if (!spec.is_discrete()) {
      throw std::invalid_argument(
          "seedrl::learner: only discrete action spaces are supported so far");
    }
  }

  std::size_t outputs_per_row(const action_spec& spec) const {
    return static_cast<std::size_t>(spec.num_actions);
  }

  template <std::floating_point S>
  void sample(std::span<const S> logits, std::size_t rows, std::size_t num_actions,
              random_generator& rng, std::span<std::int32_t> actions,
              std::span<S> log_probs) const {
    if (selection == action_selection::greedy)
      argmax_actions<S>(logits, rows, num_actions, actions);
    else
      sample_actions<S>(logits, rows, num_actions, rng, actions);
    categorical_log_probs<S>(logits, rows, num_actions, std::span<const std::int32_t>(actions),
                             log_probs);
  }
};

static_assert(ActionSampler<categorical_sampler, float>);
static_assert(ActionSampler<categorical_sampler, double>);

}  // namespace seedrl
