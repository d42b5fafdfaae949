#pragma once
/// \file
/// CartPole, exactly as gymnasium's CartPole-v1: the same constants, Euler integration,
/// termination thresholds, reward of 1 per step (the terminating step included) and
/// truncation after 500 steps. Physics run in double precision like gymnasium's; observations
/// are float32 like the ones gymnasium returns. The initial state is drawn from U(-0.05, 0.05)
/// by seedrl's own generator, so a given seed gives a different (equally distributed) start
/// than gymnasium's NumPy stream.

#include <cmath>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>

#include "seedrl/core/random.hpp"
#include "seedrl/core/spec.hpp"
#include "seedrl/env/environment.hpp"

namespace seedrl {

/// The classic cart-pole balancing task; models seedrl::Environment.
class cartpole {
 public:
  using observation_type = float;
  using action_type = std::int32_t;

  /// The physical state, in gymnasium's order.
  struct state {
    double x = 0.0;
    double x_dot = 0.0;
    double theta = 0.0;
    double theta_dot = 0.0;
  };

  static constexpr double gravity = 9.8;
  static constexpr double masscart = 1.0;
  static constexpr double masspole = 0.1;
  static constexpr double total_mass = masspole + masscart;
  static constexpr double length = 0.5;  ///< half the pole's length
  static constexpr double polemass_length = masspole * length;
  static constexpr double force_mag = 10.0;
  static constexpr double tau = 0.02;  ///< seconds between state updates
  static constexpr double theta_threshold_radians = 12 * 2 * 3.141592653589793 / 360;
  static constexpr double x_threshold = 2.4;
  static constexpr std::int32_t max_episode_steps = 500;
  static constexpr std::int64_t observation_size = 4;

  explicit cartpole(std::uint64_t seed = 0) noexcept : rng_(seed) {}

  static seedrl::observation_spec observation_spec() {
    return {dtype::float32, {observation_size}};
  }
  static seedrl::action_spec action_spec() { return action_spec::discrete(2); }

  /// Restarts the stream that draws initial states.
  void seed(std::uint64_t seed) noexcept { rng_.seed(seed); }

  /// Starts an episode from a state drawn uniformly in [-0.05, 0.05)^4.
  void reset(std::span<float> observation) {
    state s;
    s.x = rng_.uniform(-0.05, 0.05);
    s.x_dot = rng_.uniform(-0.05, 0.05);
    s.theta = rng_.uniform(-0.05, 0.05);
    s.theta_dot = rng_.uniform(-0.05, 0.05);
    reset_to(s, observation);
  }

  /// Starts an episode from a given state, e.g. to replay a recorded one.
  void reset_to(const state& s, std::span<float> observation) {
    check_size(observation);
    state_ = s;
    steps_ = 0;
    ended_ = false;
    write_observation(observation);
  }

  /// Pushes the cart left (0) or right (1) for one step of `tau` seconds.
  step_result step(action_type action, std::span<float> observation) {
    if (action != 0 && action != 1) {
      throw std::out_of_range("seedrl::cartpole::step: action " + std::to_string(action) +
                              " is outside the action space {0, 1}");
    }
    if (ended_) {
      throw std::logic_error(
          "seedrl::cartpole::step: the episode has ended (terminated or truncated); call "
          "reset() first");
    }
    check_size(observation);
    // Same operations in the same order as gymnasium, so results agree to the last bit
    // whenever the platform's sin and cos do.
    auto& [x, x_dot, theta, theta_dot] = state_;
    const double force = action == 1 ? force_mag : -force_mag;
    const double costheta = std::cos(theta);
    const double sintheta = std::sin(theta);
    const double temp = (force + polemass_length * (theta_dot * theta_dot) * sintheta) / total_mass;
    const double thetaacc = (gravity * sintheta - costheta * temp) /
                            (length * (4.0 / 3.0 - masspole * (costheta * costheta) / total_mass));
    const double xacc = temp - polemass_length * thetaacc * costheta / total_mass;
    x = x + tau * x_dot;
    x_dot = x_dot + tau * xacc;
    theta = theta + tau * theta_dot;
    theta_dot = theta_dot + tau * thetaacc;
    ++steps_;

    step_result result;
    result.reward = 1.0;
    result.terminated = x < -x_threshold || x > x_threshold || theta < -theta_threshold_radians ||
                        theta > theta_threshold_radians;
    result.truncated = !result.terminated && steps_ >= max_episode_steps;
    ended_ = result.done();
    write_observation(observation);
    return result;
  }

  /// The current physical state, in double precision.
  const state& physics_state() const noexcept { return state_; }

  /// Steps taken in the current episode.
  std::int32_t elapsed_steps() const noexcept { return steps_; }

 private:
  static void check_size(std::span<float> observation) {
    if (observation.size() != static_cast<std::size_t>(observation_size)) {
      throw std::invalid_argument("seedrl::cartpole: observation buffer holds " +
                                  std::to_string(observation.size()) + " floats, needs 4");
    }
  }

  void write_observation(std::span<float> observation) const noexcept {
    observation[0] = static_cast<float>(state_.x);
    observation[1] = static_cast<float>(state_.x_dot);
    observation[2] = static_cast<float>(state_.theta);
    observation[3] = static_cast<float>(state_.theta_dot);
  }

  random_generator rng_;
  state state_;
  std::int32_t steps_ = 0;
  bool ended_ = true;  // step() before the first reset() is an error too
};

static_assert(check_environment<cartpole>());

}  // namespace seedrl
