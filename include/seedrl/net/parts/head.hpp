#pragma once
/// \file
/// The Head parts of an agent (`actor_critic_agent`, seedrl/net/actor_critic_agent.hpp): the
/// layers that turn the core's output into what the loss reads. An actor-critic agent has a
/// policy head (the action distribution's parameters) and a value head (one value per row).
/// The agent builds each from the user's options and the core's output width.
///
/// A type `H` models `seedrl::Head<H, S>` when it provides:
///   - `using options_type = ...;` what the user chooses;
///   - a constructor `H(const options_type&, std::ptrdiff_t input_size)`;
///   - `std::ptrdiff_t output_size() const;` outputs per row;
///   - `std::size_t num_parameters() const;`, `void bind(S* params, S* grads);` and
///     `void init(seedrl::random_generator&);` as for a Torso (seedrl/net/parts/torso.hpp);
///   - `void forward(const_matrix_view<S> x, matrix_view<S> y) const;` x [N, input_size] to
///     y [N, output_size()], without allocating;
///   - `void backward(const_matrix_view<S> x, const_matrix_view<S> dy, matrix_view<S> dx,
///     bool accumulate);` ADDS the parameter gradients for d loss / d y at input x, and
///     writes d loss / d x into dx (adds to it when `accumulate`: the heads share their input);
///   - copy construction.
///
/// `PolicyHead<H, S>` is a Head that also says what actions it parameterises:
///   - `std::int32_t num_actions() const;` the action count the environment's action spec must
///     have. The head, not the agent, relates it to `output_size()`: a categorical head has one
///     logit per action; a Gaussian head over d dimensions would have d actions and 2d outputs.
///     The agent checks it against its configured action count and refuses a mismatch.
///
/// Ready heads: `categorical_head<S>` and `value_head<S>` (seedrl/net/parts/linear_heads.hpp),
/// `gaussian_head<S>` (seedrl/net/parts/gaussian_head.hpp).

#include <concepts>
#include <cstddef>
#include <cstdint>

#include "seedrl/core/random.hpp"
#include "seedrl/detail/part_members.hpp"
#include "seedrl/net/tensor.hpp"

namespace seedrl {

namespace detail::head_parts {
using namespace part_members;
template <class H, class S>
concept has_forward = requires(const H& h, const_matrix_view<S> x, matrix_view<S> y) {
  h.forward(x, y);
};
template <class H, class S>
concept has_backward = requires(H& h, const_matrix_view<S> x, matrix_view<S> dx, bool acc) {
  h.backward(x, x, dx, acc);
};
template <class H>
concept has_num_actions = requires(const H& h) {
  { h.num_actions() } -> std::convertible_to<std::int32_t>;
};
}  // namespace detail::head_parts

/// An output head over scalar type S; see the file comment.
template <class H, class S>
concept Head =
    detail::head_parts::has_options_constructor<H> && detail::head_parts::has_output_size<H> &&
    detail::head_parts::has_num_parameters<H> && detail::head_parts::has_bind<H, S> &&
    detail::head_parts::has_init<H> && detail::head_parts::has_forward<H, S> &&
    detail::head_parts::has_backward<H, S> && std::copy_constructible<H>;

/// A policy head: a Head that names its action count; see the file comment.
template <class H, class S>
concept PolicyHead = Head<H, S> && detail::head_parts::has_num_actions<H>;

/// Fails to compile, naming each missing member, unless `H` models Head<H, S>.
template <class H, class S>
consteval bool check_head() {
  using namespace detail::head_parts;
  static_assert(has_options_type<H>,
                "seedrl: this type is not a seedrl::Head: it lacks `using options_type = ...;`");
  static_assert(!has_options_type<H> || has_options_constructor<H>,
                "seedrl: this type is not a seedrl::Head: it lacks a constructor "
                "`H(const options_type&, std::ptrdiff_t input_size)`");
  static_assert(has_output_size<H>,
                "seedrl: this type is not a seedrl::Head: it lacks "
                "`std::ptrdiff_t output_size() const` (how many outputs it has)");
  static_assert(has_num_parameters<H>,
                "seedrl: this type is not a seedrl::Head: it lacks "
                "`std::size_t num_parameters() const`");
  static_assert(has_bind<H, S>,
                "seedrl: this type is not a seedrl::Head: it lacks "
                "`void bind(S* params, S* grads)`");
  static_assert(has_init<H>,
                "seedrl: this type is not a seedrl::Head: it lacks "
                "`void init(seedrl::random_generator&)`");
  static_assert(has_forward<H, S>,
                "seedrl: this type is not a seedrl::Head: it lacks "
                "`void forward(const_matrix_view<S> x, matrix_view<S> y) const`");
  static_assert(has_backward<H, S>,
                "seedrl: this type is not a seedrl::Head: it lacks `void "
                "backward(const_matrix_view<S> x, const_matrix_view<S> dy, matrix_view<S> dx, "
                "bool accumulate)`");
  static_assert(std::copy_constructible<H>,
                "seedrl: this type is not a seedrl::Head: it must be copy constructible");
  return Head<H, S>;
}

/// As check_head, and also that `H` names its action count (PolicyHead<H, S>).
template <class H, class S>
consteval bool check_policy_head() {
  static_assert(detail::head_parts::has_num_actions<H>,
                "seedrl: this type is not a seedrl::PolicyHead: it lacks "
                "`std::int32_t num_actions() const` (the action count it parameterises)");
  return check_head<H, S>() && PolicyHead<H, S>;
}

}  // namespace seedrl
