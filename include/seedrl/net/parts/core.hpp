#pragma once
/// \file
/// The Core part of an agent (`actor_critic_agent`, seedrl/net/actor_critic_agent.hpp): the
/// recurrent (or not) layer between the torso and the heads, which owns the per-environment
/// state. Its input is the torso's output, followed, when the agent is so configured, by the
/// reward and the one-hot previous action; only the agent knows that width, so the agent builds
/// the core from the user's options.
///
/// A type `C` models `seedrl::Core<C, S>` when it provides:
///   - `using options_type = ...;` what the user chooses (sizes, initialisation);
///   - a constructor `C(const options_type&, std::ptrdiff_t input_size)`;
///   - `std::ptrdiff_t output_size() const;` features per output row;
///   - `std::ptrdiff_t state_size() const;` scalars of one environment's state (0: stateless);
///   - `std::size_t num_parameters() const;`, `void bind(S* params, S* grads);` and
///     `void init(seedrl::random_generator&);` as for a Torso (seedrl/net/parts/torso.hpp);
///   - `const_matrix_view<S> step(const_matrix_view<S> x, std::span<const std::uint8_t> dones,
///     matrix_view<S> state);` one inference step for B rows: resets the state rows where
///     `dones`, reads and overwrites `state` [B, state_size()], returns the output [B,
///     output_size()] (a buffer of its own, or x itself); no allocation once it has seen B;
///   - `const_matrix_view<S> forward_unroll(std::ptrdiff_t T, std::ptrdiff_t B,
///     const_matrix_view<S> x, std::span<const std::uint8_t> dones, const_matrix_view<S>
///     start_state);` the same over T time-major steps (row t*B + b) from `start_state` [B,
///     state_size()], keeping what `backward_unroll` needs (the caller keeps x alive);
///   - `matrix_view<S> backward_unroll(matrix_view<S> dy);` given d loss / d output, ADDS the
///     parameter gradients and returns d loss / d x [T*B, input size] (a buffer of its own, or
///     dy itself; the agent may overwrite it).
///   - copy construction, as for a Torso.
///
/// Ready cores: `lstm_core<S>` (seedrl/net/parts/lstm_core.hpp; an n-layer LSTM, or none with
/// hidden size 0) and `no_core<S>` (seedrl/net/parts/no_core.hpp).

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>

#include "seedrl/core/random.hpp"
#include "seedrl/detail/part_members.hpp"
#include "seedrl/net/tensor.hpp"

namespace seedrl {

namespace detail::core_parts {
using namespace part_members;
template <class C>
concept has_state_size = requires(const C& c) {
  { c.state_size() } -> std::convertible_to<std::ptrdiff_t>;
};
template <class C, class S>
concept has_step = requires(C& c, const_matrix_view<S> x, std::span<const std::uint8_t> dones,
                            matrix_view<S> state) {
  { c.step(x, dones, state) } -> std::same_as<const_matrix_view<S>>;
};
template <class C, class S>
concept has_forward_unroll = requires(C& c, std::ptrdiff_t n, const_matrix_view<S> x,
                                      std::span<const std::uint8_t> dones) {
  { c.forward_unroll(n, n, x, dones, x) } -> std::same_as<const_matrix_view<S>>;
};
template <class C, class S>
concept has_backward_unroll = requires(C& c, matrix_view<S> dy) {
  { c.backward_unroll(dy) } -> std::same_as<matrix_view<S>>;
};
}  // namespace detail::core_parts

/// A core over scalar type S; see the file comment.
template <class C, class S>
concept Core =
    detail::core_parts::has_options_constructor<C> && detail::core_parts::has_output_size<C> &&
    detail::core_parts::has_state_size<C> && detail::core_parts::has_num_parameters<C> &&
    detail::core_parts::has_bind<C, S> && detail::core_parts::has_init<C> &&
    detail::core_parts::has_step<C, S> && detail::core_parts::has_forward_unroll<C, S> &&
    detail::core_parts::has_backward_unroll<C, S> && std::copy_constructible<C>;

/// Fails to compile, naming each missing member, unless `C` models Core<C, S>.
template <class C, class S>
consteval bool check_core() {
  using namespace detail::core_parts;
  static_assert(has_options_type<C>,
                "seedrl: this type is not a seedrl::Core: it lacks `using options_type = ...;`");
  static_assert(!has_options_type<C> || has_options_constructor<C>,
                "seedrl: this type is not a seedrl::Core: it lacks a constructor "
                "`C(const options_type&, std::ptrdiff_t input_size)`");
  static_assert(has_output_size<C>,
                "seedrl: this type is not a seedrl::Core: it lacks "
                "`std::ptrdiff_t output_size() const`");
  static_assert(has_state_size<C>,
                "seedrl: this type is not a seedrl::Core: it lacks "
                "`std::ptrdiff_t state_size() const`");
  static_assert(has_num_parameters<C>,
                "seedrl: this type is not a seedrl::Core: it lacks "
                "`std::size_t num_parameters() const`");
  static_assert(has_bind<C, S>,
                "seedrl: this type is not a seedrl::Core: it lacks "
                "`void bind(S* params, S* grads)`");
  static_assert(has_init<C>,
                "seedrl: this type is not a seedrl::Core: it lacks "
                "`void init(seedrl::random_generator&)`");
  static_assert(has_step<C, S>,
                "seedrl: this type is not a seedrl::Core: it lacks `const_matrix_view<S> "
                "step(const_matrix_view<S> x, std::span<const std::uint8_t> dones, "
                "matrix_view<S> state)`");
  static_assert(has_forward_unroll<C, S>,
                "seedrl: this type is not a seedrl::Core: it lacks `const_matrix_view<S> "
                "forward_unroll(std::ptrdiff_t T, std::ptrdiff_t B, const_matrix_view<S> x, "
                "std::span<const std::uint8_t> dones, const_matrix_view<S> start_state)`");
  static_assert(has_backward_unroll<C, S>,
                "seedrl: this type is not a seedrl::Core: it lacks "
                "`matrix_view<S> backward_unroll(matrix_view<S> dy)`");
  static_assert(std::copy_constructible<C>,
                "seedrl: this type is not a seedrl::Core: it must be copy constructible");
  return Core<C, S>;
}

}  // namespace seedrl
