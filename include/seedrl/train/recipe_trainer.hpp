#pragma once
/// \file
/// The one trainer of the library's recipes, on any backend: `recipe_trainer<Derived, S,
/// Recipe>` gives a class the `seedrl::Trainer` members (seedrl/runtime/trainer.hpp) over a
/// `backend_agent_trainer` that holds the parameters, the optimizer state and every activation
/// in the backend's memory; `detail::recipe_model<Backend, S, Recipe>`
/// (seedrl/train/detail/recipe_model.hpp) is that backend trainer for a host network's shape.
/// `backend_trainer<S, Recipe>` (seedrl/train/backend_trainer.hpp) runs them on the CPU's
/// `host_backend`, `cuda::agent_trainer<S, Recipe>` (seedrl/cuda/agent_trainer.hpp) on a GPU,
/// behind a virtual engine so that g++ units reach it. So the Trainer a GPU user runs is the code
/// the CPU tests execute, up to the backend's primitives.
///
/// A `Recipe` says how a host network maps onto the backend trainer (seedrl/train/
/// mlp_lstm_recipe.hpp, pixel_lstm_recipe.hpp):
///   - `static constexpr const char* name`: the trainer's name in messages (the device follows
///     it: "seedrl::mlp_lstm_trainer on CUDA");
///   - `using shape_type = ...;` the network's shape in plain config types (no Eigen);
///   - `template <class Net> static shape_type shape_of(const Net&)`;
///   - `static std::string describe(const shape_type&)`: equal strings mean the same network
///     (a new shape re-creates the backend network);
///   - `template <class Net> static constexpr void check_network()`: static_asserts that `Net`
///     is a network this recipe trains, with messages that say what to use instead;
///   - `template <class Backend, class S> using torso = ...;` the BackendTorso part;
///   - `template <class Trainer, class Backend> static std::unique_ptr<Trainer>
///     make_trainer(Backend&, const shape_type&)`: builds the backend trainer
///     (`backend_agent_trainer<Backend, S, torso<Backend, S>>`) for a shape.
///
/// State: the first `train_step` (or `load_from_host`) uploads the network's parameters and the
/// optimizer's configuration, step count and arrays; from then on the backend holds the truth
/// for the optimizer (the host optimizer object is not updated) until `sync_to_host` writes it
/// back, which the learner does before a checkpoint. `load_from_host` makes the host copies the
/// truth again (after a restored checkpoint). Each step writes the new parameters into
/// `net.parameters()` (what the learner publishes), unless the trainer publishes on its device.
/// Includes no Eigen, no CUDA header and not the backend trainer.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/algo/impala_loss_config.hpp"
#include "seedrl/algo/loss_choice.hpp"
#include "seedrl/algo/policy_distribution.hpp"
#include "seedrl/algo/ppo_loss.hpp"
#include "seedrl/detail/optimizer_math.hpp"
#include "seedrl/detail/type_traits.hpp"
#include "seedrl/distributed/gradient_reducer.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/optim/rmsprop.hpp"
#include "seedrl/runtime/parameter_source.hpp"
#include "seedrl/runtime/training_batch.hpp"

namespace seedrl {

namespace detail {

/// The losses a recipe trainer takes: IMPALA's (its config alone for categorical policies) and
/// PPO's, and the run-time choice of either, over categorical policies or the action spec's
/// distribution.
template <class L, class S>
concept recipe_loss =
    std::same_as<L, loss_choice<S>> || std::same_as<L, loss_choice<S, spec_distribution<S>>> ||
    std::same_as<L, impala_loss<S>> || std::same_as<L, impala_loss<S, spec_distribution<S>>> ||
    std::same_as<L, ppo_loss<S>> || std::same_as<L, ppo_loss<S, spec_distribution<S>>>;

template <class R>
concept recipe_has_name = requires {
  { R::name } -> std::convertible_to<const char*>;
};
template <class R>
concept recipe_has_shape = requires {
  typename R::shape_type;
};
template <class R>
concept recipe_has_describe = recipe_has_shape<R> && requires(const typename R::shape_type& shape) {
  { R::describe(shape) } -> std::convertible_to<std::string>;
};

/// Fails to compile, one message per missing member, unless R has what a recipe trainer reads
/// everywhere (the rest is checked where it is used).
template <class R>
consteval bool check_recipe() {
  static_assert(recipe_has_name<R>,
                "seedrl: this type is not a trainer Recipe: it lacks `static constexpr const "
                "char* name`");
  static_assert(recipe_has_shape<R>,
                "seedrl: this type is not a trainer Recipe: it lacks `using shape_type = ...;`");
  static_assert(recipe_has_describe<R>,
                "seedrl: this type is not a trainer Recipe: it lacks `static std::string "
                "describe(const shape_type&)`");
  return recipe_has_name<R> && recipe_has_describe<R>;
}

}  // namespace detail

/// The seedrl::Trainer members of a recipe trainer (see the file comment) over
/// `Derived::engine()`, which has recipe_model's members (upload_model, upload_optimizer for
/// Adam and RMSProp, step for an IMPALA config and both loss choices, download_parameters,
/// optimizer_steps, optimizer_arrays, learning_rate, num_parameters, name) and, on a device
/// that publishes parameters, `publish_on_device()`.
template <class Derived, std::floating_point S, class Recipe>
class recipe_trainer {
  static_assert(detail::check_recipe<Recipe>());

 public:
  using scalar_type = S;                           ///< parameter type
  using recipe_type = Recipe;                      ///< how networks map onto the backend step
  using shape_type = typename Recipe::shape_type;  ///< the network's shape

  // --- seedrl::Trainer ---------------------------------------------------------------------

  /// One training step on the backend; afterwards `net.parameters()` holds the new parameters
  /// (unless they are published on the device). The first call uploads `net` and `opt`
  /// (load_from_host). `Net` is a network the recipe trains, `Opt` an adam<S> or rmsprop<S>,
  /// `Loss` IMPALA's or PPO's loss or the run-time choice of them (`loss_choice`, as
  /// host_trainer takes them; PPO's minibatches drawn as host_trainer draws them), over
  /// categorical policies or `spec_distribution<S>` (a Gaussian for continuous actions; a
  /// categorical loss on a Gaussian network is refused).
  template <class Net, class Opt, class Loss>
  requires detail::recipe_loss<Loss, S> train_step_result train_step(const training_batch<S>& batch,
                                                                     Net& net, Opt& opt,
                                                                     const Loss& loss,
                                                                     double max_grad_norm) {
    check_types<Net, Opt>();
    if (!loaded_) {
      load_from_host(net, opt);
    } else if (loaded_kind_ != kind_of<Opt>()) {
      throw std::logic_error(name() +
                             "::train_step: the backend holds another optimizer's state than "
                             "the one passed; call load_from_host(net, opt) after switching "
                             "optimizers");
    }
    // Publishing on the device: no download (the host gets the parameters at sync_to_host).
    const std::span<S> params_out = publishing_ ? std::span<S>() : std::span<S>(net.parameters());
    using spec_choice = loss_choice<S, spec_distribution<S>>;
    if constexpr (std::same_as<Loss, impala_loss<S>>)
      return engine().step(batch, loss.config(), max_grad_norm, params_out);
    else if constexpr (std::same_as<Loss, loss_choice<S>> || std::same_as<Loss, spec_choice>)
      return engine().step(batch, loss, max_grad_norm, params_out);
    else if constexpr (std::same_as<Loss, ppo_loss<S>>)
      return engine().step(batch, loss_choice<S>(loss), max_grad_norm, params_out);
    else
      return engine().step(batch, spec_choice(loss), max_grad_norm, params_out);
  }

  /// DevicePublishingTrainer, where the engine publishes on a device: uploads `net` and `opt`
  /// unless done already, publishes the parameters as the returned source's first set; from
  /// then on each train_step publishes there and leaves `net.parameters()` alone.
  template <class Net, class Opt, class D = Derived>  // D: checked when called, not at the base
  requires requires(D& d) { d.engine().publish_on_device(); }
  std::shared_ptr<parameter_source<S>> publish_on_device(Net& net, Opt& opt) {
    check_types<Net, Opt>();
    if (!loaded_)
      load_from_host(net, opt);
    auto source = engine().publish_on_device();
    publishing_ = true;
    return source;
  }

  /// Writes the backend's parameters into `net` and its optimizer state into `opt` (through
  /// opt.load_state, so the host optimizer then resumes exactly where the backend is). Does
  /// nothing before the first upload: the host copies are the truth then.
  template <class Net, class Opt>
  void sync_to_host(Net& net, Opt& opt) {
    check_types<Net, Opt>();
    if (!loaded_)
      return;
    if (loaded_kind_ != kind_of<Opt>()) {
      throw std::logic_error(name() +
                             "::sync_to_host: the backend holds another optimizer's state than "
                             "the one passed");
    }
    engine().download_parameters(net.parameters());
    const std::vector<std::vector<S>> arrays = engine().optimizer_arrays();
    std::vector<std::span<const S>> spans(arrays.begin(), arrays.end());
    opt.load_state(seedrl::detail::save_optimizer_state<S>(
        kind_of<Opt>(), engine().optimizer_steps(), std::span<const std::span<const S>>(spans)));
  }

  /// Takes `net`'s parameters and shape and `opt`'s configuration, step count and state as the
  /// new truth (re-creating the backend network when the shape changed). If it throws, the next
  /// train_step uploads again.
  template <class Net, class Opt>
  void load_from_host(Net& net, Opt& opt) {
    check_types<Net, Opt>();
    loaded_ = false;
    const auto params = net.parameters();  // frame_stacked has no const parameters()
    engine().upload_model(Recipe::shape_of(std::as_const(net)),
                          std::span<const S>(params.data(), params.size()));
    if constexpr (kind_of<Opt>() == seedrl::detail::optimizer_kind::adam) {
      const std::span<const S> arrays[] = {opt.first_moment(), opt.second_moment()};
      engine().upload_optimizer(opt.config(), opt.step_count(), state_of(opt.step_count(), arrays));
    } else {
      const std::span<const S> arrays[] = {opt.mean_square(), opt.momentum_buffer()};
      const std::size_t count = opt.config().momentum > 0.0 ? 2 : 1;
      engine().upload_optimizer(
          opt.config(), opt.step_count(),
          state_of(opt.step_count(), std::span<const std::span<const S>>(arrays, count)));
    }
    loaded_ = true;
    loaded_kind_ = kind_of<Opt>();
  }

  /// Data-parallel training, as host_trainer::set_gradient_reducer: each gradient step's
  /// gradient is averaged over `reducer`'s ranks before clipping and the optimizer
  /// (distributed/gradient_reducer.hpp). Every rank calls it before its first step.
  void set_gradient_reducer(std::shared_ptr<distributed::gradient_reducer> reducer) {
    engine().set_gradient_reducer(reducer);
    reducer_ = std::move(reducer);
  }
  const std::shared_ptr<distributed::gradient_reducer>& reducer() const noexcept {
    return reducer_;
  }

  // --- what the backend holds ---------------------------------------------------------

  /// The backend's optimizer step count; throws std::logic_error before the first upload.
  std::int64_t optimizer_steps() const { return engine().optimizer_steps(); }

  /// The learning rate of the next step.
  double learning_rate() const { return engine().learning_rate(); }

  /// Parameters of the backend network (0 before upload_model).
  std::size_t num_parameters() const { return engine().num_parameters(); }

 private:
  decltype(auto) engine() { return static_cast<Derived&>(*this).engine(); }
  decltype(auto) engine() const { return static_cast<const Derived&>(*this).engine(); }
  std::string name() const { return std::string(engine().name()); }

  template <class Opt>
  static constexpr seedrl::detail::optimizer_kind kind_of() {
    using config_type = std::remove_cvref_t<decltype(std::declval<const Opt&>().config())>;
    if constexpr (std::is_same_v<config_type, adam_config>)
      return seedrl::detail::optimizer_kind::adam;
    else
      return seedrl::detail::optimizer_kind::rmsprop;
  }

  template <class Net, class Opt>
  static constexpr void check_types() {
    static_assert(std::is_same_v<typename Net::scalar_type, S>,
                  "seedrl: a recipe trainer <S, Recipe> trains a network of the same S");
    Recipe::template check_network<Net>();
    using config_type = std::remove_cvref_t<decltype(std::declval<const Opt&>().config())>;
    if constexpr (!std::is_same_v<config_type, adam_config> &&
                  !std::is_same_v<config_type, rmsprop_config>) {
      static_assert(seedrl::detail::dependent_false<Opt>,
                    "seedrl: the recipe trainers (backend_trainer, the CUDA trainers) support "
                    "seedrl::adam and seedrl::rmsprop; use host_trainer for other optimizers");
    } else {
      static_assert(std::is_same_v<typename Opt::scalar_type, S>,
                    "seedrl: the optimizer's scalar type must be the trainer's S");
    }
  }

  /// The state to upload: empty (zeros) before the optimizer's first step, as the CPU
  /// optimizers hold no arrays then.
  static std::span<const std::span<const S>> state_of(std::int64_t steps,
                                                      std::span<const std::span<const S>> arrays) {
    return steps == 0 ? std::span<const std::span<const S>>() : arrays;
  }

  std::shared_ptr<distributed::gradient_reducer> reducer_;  // null: one rank
  bool loaded_ = false;
  bool publishing_ = false;  // publish_on_device was called: steps publish on the device
  seedrl::detail::optimizer_kind loaded_kind_ = seedrl::detail::optimizer_kind::adam;
};

}  // namespace seedrl
