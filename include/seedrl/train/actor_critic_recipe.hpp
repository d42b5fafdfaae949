#pragma once
/// \file
/// `actor_critic_recipe<Part, Config...>`: the Recipe (seedrl/train/recipe_trainer.hpp) of any
/// `actor_critic_agent<S, Part<host_backend, S>, Config...>` (seedrl/net/actor_critic_agent.hpp),
/// so that a user's torso part, written once over the backend, trains on a GPU
/// (`cuda::agent_trainer<S, actor_critic_recipe<Part, Config...>>`), infers there
/// (`cuda::inference_engine`) and trains through the recipe trainer on the CPU
/// (`backend_trainer`) with no recipe of its own. The shape is what the agent was built from:
/// the part's configs and the core and heads (`backend_core_config`).
///
/// Each config type needs `std::string describe(const Config&)`, found by argument-dependent
/// lookup: the recipe trainer re-creates its backend network when the description of the
/// network it is handed changes. Plain C++ without Eigen, so nvcc compiles it.

#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include "seedrl/train/backend_core_config.hpp"

namespace seedrl {

namespace detail {

template <template <class, class> class Part, class T>
struct is_part_instance : std::false_type {};
template <template <class, class> class Part, class Backend, class S>
struct is_part_instance<Part, Part<Backend, S>> : std::true_type {};

template <class Config>
concept describable_config = requires(const Config& c) {
  { describe(c) } -> std::convertible_to<std::string>;
};

// Outside the recipe, whose own `describe` would hide the config's from lookup.
template <describable_config Config>
std::string describe_part_config(const Config& c) {
  return describe(c);
}

}  // namespace detail

/// See the file comment.
template <template <class, class> class Part, class... Config>
struct actor_critic_recipe {
  static_assert((detail::describable_config<Config> && ...),
                "seedrl::actor_critic_recipe: each of the part's config types needs "
                "`std::string describe(const Config&)` beside it (found by argument-dependent "
                "lookup); the trainer rebuilds its network when the description changes");

  /// The trainer's name in messages (with " on CUDA" or " on host_backend" after it).
  static constexpr const char* name = "seedrl::actor_critic_trainer";

  /// What the agent was built from.
  struct shape_type {
    std::tuple<Config...> configs;
    backend_core_config core;
  };

  template <class Net>
  static shape_type shape_of(const Net& net) {
    return {net.configs(), net.core_config()};
  }

  static std::string describe(const shape_type& s) {
    std::string out = describe_core(s.core);
    std::apply(
        [&](const Config&... c) { ((out += " | ", out += detail::describe_part_config(c)), ...); },
        s.configs);
    return out;
  }

  template <class Net>
  static constexpr void check_network() {
    constexpr bool fits = requires(const Net& n) {
      typename Net::torso_type;
      { n.configs() } -> std::same_as<const std::tuple<Config...>&>;
      n.core_config();
    };
    if constexpr (fits) {
      static_assert(detail::is_part_instance<Part, typename Net::torso_type>::value,
                    "seedrl: actor_critic_recipe<Part, Config...> trains a "
                    "seedrl::actor_critic_agent whose torso is Part; use host_trainer for others");
    } else {
      static_assert(
          fits,
          "seedrl: actor_critic_recipe<Part, Config...> trains a seedrl::actor_critic_agent "
          "built from Config...; use host_trainer for other networks");
    }
  }

  template <class Backend, class S>
  using torso = Part<Backend, S>;

  template <class Trainer, class Backend>
  static std::unique_ptr<Trainer> make_trainer(Backend& backend, const shape_type& shape) {
    using S = typename Trainer::scalar_type;
    return std::apply(
        [&](const Config&... c) {
          return std::make_unique<Trainer>(backend, Part<Backend, S>(backend, c...), shape.core);
        },
        shape.configs);
  }
};

}  // namespace seedrl
