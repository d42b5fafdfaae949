#pragma once
/// \file
/// What the learner needs from its network: seedrl::Network over the agent types of
/// seedrl/net/agent_io.hpp, with one row of recurrent state per environment so that the
/// inference loop can gather and scatter environments by row, plus what training needs.
///
/// A type `N` models `seedrl::LearnerNetwork` when it provides:
///   - `using scalar_type = ...;` float or double (below, S);
///   - `using state_type = seedrl::recurrent_state<S>;`
///   - `using inference_input = seedrl::agent_step_input<S>;` and
///     `using inference_output = seedrl::agent_step_output<S>;`
///   - `using unroll_input = seedrl::agent_unroll_input<S>;`,
///     `using unroll_output = seedrl::agent_unroll_output<S>;` and
///     `using output_gradient = seedrl::agent_output_gradient<S>;`
///   - `std::ptrdiff_t state_size() const;` the width of one environment's state (0 without
///     a recurrent core);
///   - `state_type initial_state(std::size_t batch_size) const;`
///   - `void infer(const inference_input&, state_type&, inference_output&);`
///   - `void forward_unroll(const unroll_input&, unroll_output&);`,
///     `void zero_gradients();` and `void backward_unroll(const output_gradient&);`
///   - `std::span<S> parameters();` and `std::span<S> gradients();`
///   - construction from `const N&` (the learner keeps one copy for inference and one for
///     training).
/// `seedrl::check_learner_network<N>()` names each missing piece in a compile error of its
/// own; the learner calls it first, so a network that does not fit fails there and not deep
/// inside the learner or its trainer.

#include <concepts>
#include <cstddef>
#include <span>
#include <type_traits>

#include "seedrl/net/agent_io.hpp"

namespace seedrl {

namespace detail::learner_network_parts {

template <class N>
concept has_scalar = requires {
  typename N::scalar_type;
}
&&std::floating_point<typename N::scalar_type>;

template <class N>
concept has_state_type = has_scalar<N> && requires {
  typename N::state_type;
} && std::same_as<typename N::state_type, recurrent_state<typename N::scalar_type>>;

template <class N>
concept has_inference_types = has_scalar<N> && requires {
  typename N::inference_input;
  typename N::inference_output;
} && std::same_as<typename N::inference_input, agent_step_input<typename N::scalar_type>> &&
    std::same_as<typename N::inference_output, agent_step_output<typename N::scalar_type>>;

template <class N>
concept has_unroll_types = has_scalar<N> && requires {
  typename N::unroll_input;
  typename N::unroll_output;
  typename N::output_gradient;
} && std::same_as<typename N::unroll_input, agent_unroll_input<typename N::scalar_type>> &&
    std::same_as<typename N::unroll_output, agent_unroll_output<typename N::scalar_type>> &&
    std::same_as<typename N::output_gradient, agent_output_gradient<typename N::scalar_type>>;

template <class N>
concept has_state_size = requires(const N& n) {
  { n.state_size() } -> std::convertible_to<std::ptrdiff_t>;
};

template <class N>
concept has_initial_state = has_state_type<N> && requires(const N& n, std::size_t b) {
  { n.initial_state(b) } -> std::same_as<typename N::state_type>;
};

template <class N>
concept has_infer = has_state_type<N> && has_inference_types<N> &&
    requires(N& n, const typename N::inference_input& in, typename N::state_type& state,
             typename N::inference_output& out) {
  n.infer(in, state, out);
};

template <class N>
concept has_forward_unroll = has_unroll_types<N> &&
    requires(N& n, const typename N::unroll_input& in, typename N::unroll_output& out) {
  n.forward_unroll(in, out);
};

template <class N>
concept has_backward_unroll = has_unroll_types<N> &&
    requires(N& n, const typename N::output_gradient& g) {
  n.backward_unroll(g);
};

template <class N>
concept has_zero_gradients = requires(N& n) {
  n.zero_gradients();
};

template <class N>
concept has_parameters = has_scalar<N> && requires(N& n) {
  { n.parameters() } -> std::convertible_to<std::span<typename N::scalar_type>>;
};

template <class N>
concept has_gradients = has_scalar<N> && requires(N& n) {
  { n.gradients() } -> std::convertible_to<std::span<typename N::scalar_type>>;
};

template <class N>
concept copyable = std::is_constructible_v<N, const N&>;

}  // namespace detail::learner_network_parts

/// A network the learner can run and train; see the file comment for what it needs.
template <class N>
concept LearnerNetwork = detail::learner_network_parts::has_scalar<N> &&
    detail::learner_network_parts::has_state_type<N> &&
    detail::learner_network_parts::has_inference_types<N> &&
    detail::learner_network_parts::has_unroll_types<N> &&
    detail::learner_network_parts::has_state_size<N> &&
    detail::learner_network_parts::has_initial_state<N> &&
    detail::learner_network_parts::has_infer<N> &&
    detail::learner_network_parts::has_forward_unroll<N> &&
    detail::learner_network_parts::has_zero_gradients<N> &&
    detail::learner_network_parts::has_backward_unroll<N> &&
    detail::learner_network_parts::has_parameters<N> &&
    detail::learner_network_parts::has_gradients<N> && detail::learner_network_parts::copyable<N>;

/// Fails to compile, with one message per missing piece, unless `N` models LearnerNetwork.
/// A piece that depends on a missing one (infer on state_type) is reported only once that
/// one is there, so every message names something to add.
template <class N>
consteval bool check_learner_network() {
  using namespace detail::learner_network_parts;
  static_assert(has_scalar<N>,
                "seedrl: this network does not model seedrl::LearnerNetwork: it lacks "
                "`using scalar_type = float;` (or double)");
  static_assert(!has_scalar<N> || has_state_type<N>,
                "seedrl: this network does not model seedrl::LearnerNetwork: it lacks "
                "`using state_type = seedrl::recurrent_state<scalar_type>;` (one row of state "
                "per environment, so the learner can gather environments by row; width 0 for a "
                "feed-forward network)");
  static_assert(!has_scalar<N> || has_inference_types<N>,
                "seedrl: this network does not model seedrl::LearnerNetwork: it lacks "
                "`using inference_input = seedrl::agent_step_input<scalar_type>;` and "
                "`using inference_output = seedrl::agent_step_output<scalar_type>;` "
                "(seedrl/net/agent_io.hpp: what the learner's inference loop fills and reads)");
  static_assert(!has_scalar<N> || has_unroll_types<N>,
                "seedrl: this network does not model seedrl::LearnerNetwork: it lacks "
                "`using unroll_input = seedrl::agent_unroll_input<scalar_type>;`, "
                "`using unroll_output = seedrl::agent_unroll_output<scalar_type>;` and "
                "`using output_gradient = seedrl::agent_output_gradient<scalar_type>;` "
                "(seedrl/net/agent_io.hpp: what the trainer passes)");
  static_assert(has_state_size<N>,
                "seedrl: this network does not model seedrl::LearnerNetwork: it lacks "
                "`std::ptrdiff_t state_size() const` (the width of one environment's recurrent "
                "state; 0 without a recurrent core)");
  static_assert(!has_state_type<N> || has_initial_state<N>,
                "seedrl: this network does not model seedrl::LearnerNetwork: it lacks "
                "`state_type initial_state(std::size_t batch_size) const`");
  static_assert(!(has_state_type<N> && has_inference_types<N>) || has_infer<N>,
                "seedrl: this network does not model seedrl::LearnerNetwork: it lacks "
                "`void infer(const inference_input&, state_type&, inference_output&)`");
  static_assert(!has_unroll_types<N> || has_forward_unroll<N>,
                "seedrl: this network does not model seedrl::LearnerNetwork: it lacks "
                "`void forward_unroll(const unroll_input&, unroll_output&)`");
  static_assert(has_zero_gradients<N>,
                "seedrl: this network does not model seedrl::LearnerNetwork: it lacks "
                "`void zero_gradients()` (the trainer clears gradients before backward_unroll)");
  static_assert(!has_unroll_types<N> || has_backward_unroll<N>,
                "seedrl: this network does not model seedrl::LearnerNetwork: it lacks "
                "`void backward_unroll(const output_gradient&)`");
  static_assert(!has_scalar<N> || has_parameters<N>,
                "seedrl: this network does not model seedrl::LearnerNetwork: it lacks "
                "`std::span<scalar_type> parameters()` (every parameter in one buffer)");
  static_assert(!has_scalar<N> || has_gradients<N>,
                "seedrl: this network does not model seedrl::LearnerNetwork: it lacks "
                "`std::span<scalar_type> gradients()` (laid out as parameters())");
  static_assert(copyable<N>,
                "seedrl: this network does not model seedrl::LearnerNetwork: it cannot be "
                "constructed from `const N&` (the learner copies it for inference and training)");
  return LearnerNetwork<N>;
}

}  // namespace seedrl
