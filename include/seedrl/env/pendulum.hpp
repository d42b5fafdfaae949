#pragma once
/// \file
/// Pendulum, exactly as gymnasium's Pendulum-v1: swing a pendulum up and hold it upright with
/// a bounded torque. Same constants, semi-implicit Euler step, torque clip to [-2, 2], speed
/// clip to [-8, 8], reward -(angle^2 + 0.1 speed^2 + 0.001 torque^2) with the angle wrapped to
/// [-pi, pi), and truncation after 200 steps (the episode never terminates). The state is kept
/// in double precision like gymnasium's; the torque terms are computed in float32 as NumPy
/// does with a float32 action, so that every step matches gymnasium's to the last bit whenever
/// the platform's sin and cos do (and the compiler does not fuse products into sums, see
/// step()). The initial state is drawn from U(-pi, pi) x U(-1, 1) by
/// seedrl's own generator, so a given seed gives a different (equally distributed) start than
/// gymnasium's NumPy stream.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>

#include "seedrl/core/random.hpp"
#include "seedrl/core/spec.hpp"
#include "seedrl/env/environment.hpp"

namespace seedrl {

/// The classic inverted-pendulum swing-up task with continuous torque; models
/// seedrl::Environment.
class pendulum {
 public:
  using observation_type = float;
  using action_type = std::span<const float>;

  /// The physical state, in gymnasium's order: angle (0 is upright) and angular velocity.
  struct state {
    double theta = 0.0;
    double theta_dot = 0.0;
  };

  static constexpr double pi = 3.141592653589793;
  static constexpr double default_gravity = 10.0;
  static constexpr double mass = 1.0;
  static constexpr double length = 1.0;
  static constexpr double max_speed = 8.0;
  static constexpr float max_torque = 2.0f;
  static constexpr double dt = 0.05;  ///< seconds between state updates
  static constexpr std::int32_t max_episode_steps = 200;
  static constexpr std::int64_t observation_size = 3;
  static constexpr std::int64_t action_size = 1;

  /// `gravity` is gymnasium's `g` (`gym.make("Pendulum-v1", g=...)`).
  explicit pendulum(std::uint64_t seed = 0, double gravity = default_gravity)
      : rng_(seed), gravity_(gravity) {
    if (!std::isfinite(gravity)) {
      throw std::invalid_argument("seedrl::pendulum: gravity must be finite, got " +
                                  std::to_string(gravity));
    }
  }

  /// cos(theta), sin(theta), theta_dot.
  static seedrl::observation_spec observation_spec() {
    return {dtype::float32, {observation_size}};
  }
  /// One torque in [-2, 2]. step() clips a torque outside the bounds, as gymnasium does.
  static seedrl::action_spec action_spec() {
    return action_spec::continuous({action_size}, -max_torque, max_torque);
  }

  double gravity() const noexcept { return gravity_; }

  /// Restarts the stream that draws initial states.
  void seed(std::uint64_t seed) noexcept { rng_.seed(seed); }

  /// Starts an episode from an angle drawn uniformly in [-pi, pi) and an angular velocity in
  /// [-1, 1).
  void reset(std::span<float> observation) {
    state s;
    s.theta = rng_.uniform(-pi, pi);
    s.theta_dot = rng_.uniform(-1.0, 1.0);
    reset_to(s, observation);
  }

  /// Starts an episode from a given state, e.g. to replay a recorded one.
  void reset_to(const state& s, std::span<float> observation) {
    check_size(observation);
    if (!std::isfinite(s.theta) || !std::isfinite(s.theta_dot)) {
      throw std::invalid_argument("seedrl::pendulum::reset_to: the state must be finite, got (" +
                                  std::to_string(s.theta) + ", " + std::to_string(s.theta_dot) +
                                  ")");
    }
    state_ = s;
    steps_ = 0;
    ended_ = false;
    write_observation(observation);
  }

  /// Applies `action[0]` as torque, clipped to [-2, 2], for one step of `dt` seconds. The
  /// reward is computed from the state before the step, as in gymnasium.
  step_result step(action_type action, std::span<float> observation) {
    if (action.size() != static_cast<std::size_t>(action_size)) {
      throw std::invalid_argument("seedrl::pendulum::step: the action has " +
                                  std::to_string(action.size()) +
                                  " elements, needs 1 (the torque)");
    }
    if (!std::isfinite(action[0])) {
      throw std::invalid_argument("seedrl::pendulum::step: the torque " +
                                  std::to_string(action[0]) + " is not a finite number");
    }
    if (ended_) {
      throw std::logic_error(
          "seedrl::pendulum::step: the episode has ended (truncated); call reset() first");
    }
    check_size(observation);
    // gymnasium's operations in its order and precisions: the action is float32, and NumPy
    // keeps a Python float times a float32 in float32, so both torque terms are float32
    // products that are then added to float64. Products and sums sit in separate statements
    // so that Clang, which contracts a * b + c into an FMA only within one expression, keeps
    // them apart. GCC contracts across statements when the target has FMA (-march=native):
    // the results then move by a few ulps (see test_pendulum.cpp), exact again with
    // -ffp-contract=off.
    const float u = std::clamp(action[0], -max_torque, max_torque);
    const float u_squared = u * u;
    const float torque_cost = 0.001f * u_squared;
    const float torque_accel = static_cast<float>(3.0 / (mass * length * length)) * u;
    const double angle = angle_normalize(state_.theta);
    const double angle_cost = angle * angle;
    const double speed_cost = 0.1 * (state_.theta_dot * state_.theta_dot);
    const double costs = angle_cost + speed_cost + static_cast<double>(torque_cost);

    const double gravity_accel = 3.0 * gravity_ / (2.0 * length) * std::sin(state_.theta);
    const double accel = gravity_accel + static_cast<double>(torque_accel);
    const double speed_change = accel * dt;
    const double new_theta_dot = std::clamp(state_.theta_dot + speed_change, -max_speed, max_speed);
    const double angle_change = new_theta_dot * dt;
    state_.theta = state_.theta + angle_change;
    state_.theta_dot = new_theta_dot;
    ++steps_;

    step_result result;
    result.reward = -costs;
    result.terminated = false;
    result.truncated = steps_ >= max_episode_steps;
    ended_ = result.truncated;
    write_observation(observation);
    return result;
  }

  /// `theta` wrapped to [-pi, pi) as gymnasium's `angle_normalize`: Python's `%` is a floored
  /// modulo (the result takes the divisor's sign), unlike std::fmod.
  static double angle_normalize(double theta) noexcept {
    constexpr double two_pi = 2.0 * pi;
    double m = std::fmod(theta + pi, two_pi);
    if (m != 0.0) {
      if (m < 0.0) {
        m += two_pi;
      }
    } else {
      m = 0.0;  // +0, as NumPy gives for a positive divisor
    }
    return m - pi;
  }

  /// The current physical state, in double precision.
  const state& physics_state() const noexcept { return state_; }

  /// Steps taken in the current episode.
  std::int32_t elapsed_steps() const noexcept { return steps_; }

 private:
  static void check_size(std::span<float> observation) {
    if (observation.size() != static_cast<std::size_t>(observation_size)) {
      throw std::invalid_argument("seedrl::pendulum: observation buffer holds " +
                                  std::to_string(observation.size()) + " floats, needs 3");
    }
  }

  void write_observation(std::span<float> observation) const noexcept {
    observation[0] = static_cast<float>(std::cos(state_.theta));
    observation[1] = static_cast<float>(std::sin(state_.theta));
    observation[2] = static_cast<float>(state_.theta_dot);
  }

  random_generator rng_;
  double gravity_;
  state state_;
  std::int32_t steps_ = 0;
  bool ended_ = true;  // step() before the first reset() is an error too
};

static_assert(check_environment<pendulum>());

}  // namespace seedrl
