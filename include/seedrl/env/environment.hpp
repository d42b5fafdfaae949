#pragma once
/// \file
/// The Environment plug point.
///
/// A type `E` models `seedrl::Environment` when it provides:
///   - `using observation_type = ...;` the element type of an observation: std::uint8_t,
///     std::int32_t, float or double;
///   - `using action_type = ...;` std::int32_t for discrete actions, or
///     `std::span<const float>` for continuous ones;
///   - `seedrl::observation_spec observation_spec() const;` element type and shape;
///   - `seedrl::action_spec action_spec() const;` discrete (number of actions) or continuous;
///   - `void seed(std::uint64_t);` restarts the environment's random stream;
///   - `void reset(std::span<observation_type> observation);` starts an episode and writes its
///     first observation into the caller's buffer;
///   - `seedrl::step_result step(action_type action, std::span<observation_type> observation);`
///     advances one step and writes the next observation;
///   - move construction, so that batches of environments can be built.
/// Observations are written into caller-owned buffers so that the actor's batch buffer is the
/// only copy. Write the spec return types qualified (`seedrl::observation_spec`): a member
/// named like the type it returns would otherwise change the meaning of that name in the class.
/// `seedrl::check_environment<E>()` reports each missing piece by name.

#include <concepts>
#include <cstdint>
#include <span>
#include <type_traits>

#include "seedrl/core/spec.hpp"

namespace seedrl {

/// What one environment step produced. `terminated` means the MDP reached a terminal state
/// (no bootstrap); `truncated` means the episode was cut short, e.g. by a time limit.
struct step_result {
  double reward = 0.0;
  bool terminated = false;
  bool truncated = false;

  constexpr bool done() const noexcept { return terminated || truncated; }
};

namespace detail::environment_parts {

template <class E>
concept has_observation_type = requires {
  typename E::observation_type;
};

template <class E>
concept has_action_type = requires {
  typename E::action_type;
};

template <class E>
concept has_observation_spec = requires(const E& env) {
  { env.observation_spec() } -> std::convertible_to<seedrl::observation_spec>;
};

template <class E>
concept has_action_spec = requires(const E& env) {
  { env.action_spec() } -> std::convertible_to<seedrl::action_spec>;
};

template <class E>
concept has_seed = requires(E& env, std::uint64_t seed) {
  env.seed(seed);
};

template <class E>
concept has_reset = has_observation_type<E> &&
    requires(E& env, std::span<typename E::observation_type> observation) {
  env.reset(observation);
};

template <class E>
concept has_step = has_observation_type<E> && has_action_type<E> &&
    requires(E& env, typename E::action_type action,
             std::span<typename E::observation_type> observation) {
  { env.step(action, observation) } -> std::same_as<step_result>;
};

}  // namespace detail::environment_parts

/// An environment that seedrl's actors can step; see the file comment for what it needs.
template <class E>
concept Environment = detail::environment_parts::has_observation_type<E> &&
    detail::environment_parts::has_action_type<E> &&
    detail::environment_parts::has_observation_spec<E> &&
    detail::environment_parts::has_action_spec<E> && detail::environment_parts::has_seed<E> &&
    detail::environment_parts::has_reset<E> && detail::environment_parts::has_step<E> &&
    std::move_constructible<E>;

/// Fails to compile, with one message per missing piece, unless `E` models Environment.
/// Library templates that take an environment call it first, so that a user sees what to add
/// rather than a cascade of substitution failures.
template <class E>
consteval bool check_environment() {
  using namespace detail::environment_parts;
  static_assert(has_observation_type<E>,
                "seedrl: this type does not model seedrl::Environment: it lacks "
                "`using observation_type = ...;` (std::uint8_t, std::int32_t, float or double)");
  static_assert(has_action_type<E>,
                "seedrl: this type does not model seedrl::Environment: it lacks "
                "`using action_type = ...;` (std::int32_t, or std::span<const float> for "
                "continuous actions)");
  static_assert(has_observation_spec<E>,
                "seedrl: this type does not model seedrl::Environment: it lacks "
                "`seedrl::observation_spec observation_spec() const`");
  static_assert(has_action_spec<E>,
                "seedrl: this type does not model seedrl::Environment: it lacks "
                "`seedrl::action_spec action_spec() const`");
  static_assert(has_seed<E>,
                "seedrl: this type does not model seedrl::Environment: it lacks "
                "`void seed(std::uint64_t)`");
  static_assert(!has_observation_type<E> || has_reset<E>,
                "seedrl: this type does not model seedrl::Environment: it lacks "
                "`void reset(std::span<observation_type> observation)`");
  static_assert(!(has_observation_type<E> && has_action_type<E>) || has_step<E>,
                "seedrl: this type does not model seedrl::Environment: it lacks "
                "`seedrl::step_result step(action_type action, std::span<observation_type> "
                "observation)`");
  static_assert(std::move_constructible<E>,
                "seedrl: this type does not model seedrl::Environment: it must be move "
                "constructible");
  return Environment<E>;
}

/// True when `E` takes integer action indices.
template <Environment E>
inline constexpr bool has_discrete_actions = std::is_integral_v<typename E::action_type>;

}  // namespace seedrl
