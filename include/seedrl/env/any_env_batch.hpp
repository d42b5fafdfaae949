#pragma once
/// \file
/// `any_env_batch`: an `env_batch` (seedrl/env/env_batch.hpp) behind a virtual interface, so
/// that the loops around it (the actor's link loop, eval's episode loop) are compiled once
/// rather than once per environment type. The compiled `seedrl::app` (docs/getting-started.md)
/// builds them into its library; a user's program then compiles only its environment and
/// `env_batch_of<Env>`. One virtual call per batch step costs nothing beside k environment
/// steps.
///
/// `env_batch_of<E>` holds an `env_batch<E>`; `make_env_batch_factory(make_env)` turns an
/// environment factory into an `env_batch_factory`, which builds batches of k environments
/// seeded as `env_batch(envs, seed)` seeds them.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

#include "seedrl/core/spec.hpp"
#include "seedrl/env/env_batch.hpp"
#include "seedrl/env/environment.hpp"

namespace seedrl {

/// k environments stepped in lockstep, whatever their type; see the file comment and
/// env_batch, whose members these are.
class any_env_batch {
 public:
  virtual ~any_env_batch() = default;

  virtual std::size_t size() const noexcept = 0;
  virtual const seedrl::observation_spec& observation_spec() const noexcept = 0;
  virtual const seedrl::action_spec& action_spec() const noexcept = 0;
  /// Action elements per environment: 1 when discrete.
  virtual std::size_t action_size() const noexcept = 0;

  /// Every observation as stored (`observation_spec().type`), environment after environment:
  /// what the actor sends as it is.
  virtual std::span<const std::byte> observation_bytes() const noexcept = 0;
  /// The same observations converted to float or double, size() * elements values.
  virtual void observations(std::span<float> out) const = 0;
  virtual void observations(std::span<double> out) const = 0;

  virtual std::span<const float> rewards() const noexcept = 0;
  virtual std::span<const std::uint8_t> dones() const noexcept = 0;
  virtual std::span<const std::uint8_t> truncated() const noexcept = 0;
  virtual std::span<const episode_summary> finished_episodes() const noexcept = 0;

  /// Discrete actions, one per environment; std::logic_error on a continuous batch.
  virtual void step(std::span<const std::int32_t> actions) = 0;
  /// Continuous actions, size() * action_size() floats; std::logic_error on a discrete batch.
  virtual void step(std::span<const float> actions) = 0;
};

/// An env_batch<E> as an any_env_batch.
template <class E>
class env_batch_of final : public any_env_batch {
  static_assert(check_environment<E>());
  static constexpr bool discrete = std::is_integral_v<typename E::action_type>;
  static_assert(std::is_same_v<typename E::action_type, std::int32_t> ||
                    std::is_same_v<typename E::action_type, std::span<const float>>,
                "seedrl: the action type must be std::int32_t (discrete) or "
                "std::span<const float> (continuous)");

 public:
  /// As env_batch(std::move(envs), seed).
  env_batch_of(std::vector<E> envs, std::uint64_t seed) : batch_(std::move(envs), seed) {}

  std::size_t size() const noexcept override { return batch_.size(); }
  const seedrl::observation_spec& observation_spec() const noexcept override {
    return batch_.observation_spec();
  }
  const seedrl::action_spec& action_spec() const noexcept override { return batch_.action_spec(); }
  std::size_t action_size() const noexcept override { return batch_.action_size(); }

  std::span<const std::byte> observation_bytes() const noexcept override {
    return std::as_bytes(batch_.observations());
  }
  void observations(std::span<float> out) const override { convert(out); }
  void observations(std::span<double> out) const override { convert(out); }

  std::span<const float> rewards() const noexcept override { return batch_.rewards(); }
  std::span<const std::uint8_t> dones() const noexcept override { return batch_.dones(); }
  std::span<const std::uint8_t> truncated() const noexcept override { return batch_.truncated(); }
  std::span<const episode_summary> finished_episodes() const noexcept override {
    return batch_.finished_episodes();
  }

  void step(std::span<const std::int32_t> actions) override {
    if constexpr (discrete)
      batch_.step(actions);
    else
      throw std::logic_error("seedrl::env_batch_of::step: discrete actions for continuous ones");
  }
  void step(std::span<const float> actions) override {
    if constexpr (!discrete)
      batch_.step(actions);
    else
      throw std::logic_error("seedrl::env_batch_of::step: continuous actions for discrete ones");
  }

  /// The batch itself (e.g. to reach an environment).
  env_batch<E>& batch() noexcept { return batch_; }

 private:
  template <class T>
  void convert(std::span<T> out) const {
    const auto in = batch_.observations();
    if (out.size() != in.size()) {
      throw std::invalid_argument(
          "seedrl::env_batch_of::observations: " + std::to_string(out.size()) + " values for " +
          std::to_string(in.size()) + " observation elements");
    }
    for (std::size_t i = 0; i < in.size(); ++i)
      out[i] = static_cast<T>(in[i]);
  }

  env_batch<E> batch_;
};

/// Builds a batch of `k` environments seeded from `seed`.
using env_batch_factory =
    std::function<std::unique_ptr<any_env_batch>(std::size_t k, std::uint64_t seed)>;

/// The factory of batches whose environment i is `make_env(i)`.
template <class E>
env_batch_factory make_env_batch_factory(std::function<E(std::size_t)> make_env) {
  return [make_env = std::move(make_env)](std::size_t k, std::uint64_t seed) {
    std::vector<E> envs;
    envs.reserve(k);
    for (std::size_t i = 0; i < k; ++i)
      envs.push_back(make_env(i));
    return std::unique_ptr<any_env_batch>(new env_batch_of<E>(std::move(envs), seed));
  };
}

}  // namespace seedrl
