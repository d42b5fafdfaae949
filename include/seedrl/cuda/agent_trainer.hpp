#pragma once
/// \file
/// `cuda::agent_trainer<S, Recipe>`: trains an agent on a GPU as a `seedrl::Trainer`
/// (seedrl/runtime/trainer.hpp) the learner can use instead of `host_trainer`. The step is
/// `backend_agent_trainer` (seedrl/train/agent_trainer.hpp) on `cuda::cuda_backend` with the
/// torso part the recipe names: parameters, optimizer state and every activation stay on the
/// GPU; each step uploads the batch and downloads the new parameters into `net.parameters()`
/// (what the learner publishes to the actors). `cuda::mlp_lstm_trainer<S>`
/// (seedrl/cuda/mlp_lstm_trainer.hpp) and `cuda::pixel_lstm_trainer<S, TorsoConfig>`
/// (seedrl/cuda/pixel_lstm_trainer.hpp) are this class with the library's recipes.
///
/// A `Recipe` says how a host network maps onto the backend trainer:
///   - `static constexpr const char* name`: how errors name the trainer;
///   - `using shape_type = ...;` the network's shape in plain config types (no Eigen);
///   - `template <class Net> static shape_type shape_of(const Net&)`;
///   - `static std::string describe(const shape_type&)`: equal strings mean the same network
///     (a new shape re-creates the GPU network);
///   - `template <class Net> static constexpr void check_network()`: static_asserts that `Net`
///     is a network this recipe trains, with messages that say what to use instead;
///   - `template <class Backend, class S> using torso = ...;` the BackendTorso part;
///   - `template <class Trainer, class Backend> static std::unique_ptr<Trainer>
///     make_trainer(Backend&, const shape_type&)`: builds the backend trainer
///     (`backend_agent_trainer<Backend, S, torso<Backend, S>>`) for a shape.
///
/// Plain C++: no CUDA header, no kernel, so programs compiled by g++ or clang (the learner)
/// include it. The GPU side is a `detail::agent_trainer_engine` made by the constructor, which
/// is defined in seedrl/cuda/agent_trainer.cuh; instantiate it once, in one .cu file of the
/// program compiled by nvcc:
///
///   #include "seedrl/cuda/agent_trainer.cuh"
///   template class seedrl::cuda::agent_trainer<float, my_recipe>;
///
/// and link it with `seedrl::cuda`. Every other member is defined here and reaches the GPU
/// through the engine's virtual functions, so the one explicit instantiation is all a program
/// needs (the old names' .cuh files work the same way). This header includes no Eigen: the
/// Trainer members take the network, the optimizer and the loss as template parameters, so
/// that nvcc never sees their definitions.
///
/// State: the first `train_step` (or `load_from_host`) uploads the network's parameters and the
/// optimizer's configuration, step count and arrays; from then on the GPU holds the truth for
/// the optimizer (the host optimizer object is not updated) until `sync_to_host` writes it
/// back, which the learner does before a checkpoint. `load_from_host` makes the host copies the
/// truth again (after a restored checkpoint). Not thread-safe; every member may be called from
/// any one thread at a time (each sets the trainer's device first).
///
/// Device publication (DevicePublishingTrainer, seedrl/runtime/trainer.hpp): `publish_on_device`
/// makes a `device_parameter_channel` on the trainer's device and returns it as a
/// parameter_source (seedrl/runtime/parameter_source.hpp). From then on each step, after the
/// optimizer's update, copies the parameters into the channel's write buffer on the trainer's
/// stream and publishes them with an event; the step no longer downloads them into
/// `net.parameters()`, nor waits for the update to finish (the next host call that waits on the
/// stream reports its errors). A GPU inference engine on the same device takes the sets device
/// to device (cuda::inference_engine::update_parameters_on_device). No conversion: the trainer's
/// flat array and the engine's are both train/detail/agent_layout.hpp's, which is the CPU
/// network's `parameters()` order (each uploads that array as is).

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

#include "seedrl/algo/impala_loss_config.hpp"
#include "seedrl/algo/loss_choice.hpp"
#include "seedrl/algo/policy_distribution.hpp"
#include "seedrl/detail/optimizer_math.hpp"
#include "seedrl/detail/type_traits.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/optim/rmsprop.hpp"
#include "seedrl/runtime/parameter_source.hpp"
#include "seedrl/runtime/training_batch.hpp"

namespace seedrl::cuda {

namespace detail {

/// The GPU side of an `agent_trainer`: a backend trainer on a cuda_backend, on one device.
/// Defined (detail::agent_trainer_engine_impl) in seedrl/cuda/agent_trainer.cuh; each member
/// makes the engine's device current first.
template <class S, class Shape>
class agent_trainer_engine {
 public:
  virtual ~agent_trainer_engine() = default;
  /// Builds the GPU network for `shape` (kept when its description is unchanged) and uploads
  /// `params` (the CPU network's layout).
  virtual void upload_model(const Shape& shape, std::span<const S> params) = 0;
  virtual void upload_optimizer(const adam_config& config, std::int64_t steps,
                                std::span<const std::span<const S>> state) = 0;
  virtual void upload_optimizer(const rmsprop_config& config, std::int64_t steps,
                                std::span<const std::span<const S>> state) = 0;
  /// One step; downloads the new parameters into `params_out` unless it is empty; publishes
  /// them into the channel once publish_on_device made one.
  virtual train_step_result step(const training_batch<S>& batch, const impala_loss_config<S>& loss,
                                 double max_grad_norm, std::span<S> params_out) = 0;
  /// The same with the loss a learner chose at run time: IMPALA, or PPO's update schedule, over
  /// categorical policies or over the action spec's (a Gaussian for continuous actions).
  virtual train_step_result step(const training_batch<S>& batch, const loss_choice<S>& loss,
                                 double max_grad_norm, std::span<S> params_out) = 0;
  virtual train_step_result step(const training_batch<S>& batch,
                                 const loss_choice<S, spec_distribution<S>>& loss,
                                 double max_grad_norm, std::span<S> params_out) = 0;
  /// Makes the channel (once; needs upload_model first), publishes the parameters into it and
  /// returns it; upload_model and step publish into it from then on.
  virtual std::shared_ptr<parameter_source<S>> publish_on_device() = 0;
  virtual void download_parameters(std::span<S> params_out) const = 0;
  virtual std::int64_t optimizer_steps() const = 0;
  virtual std::vector<std::vector<S>> optimizer_arrays() const = 0;
  virtual double learning_rate() const = 0;
  virtual std::size_t num_parameters() const = 0;
};

/// The losses agent_trainer::train_step takes: IMPALA's (its config alone for categorical
/// policies) and PPO's, and the run-time choice of either, over categorical policies or the
/// action spec's distribution.
template <class L, class S>
concept gpu_loss =
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

/// Fails to compile, one message per missing member, unless R has what agent_trainer reads
/// outside its .cuh (the rest is checked where the .cuh and the Trainer members use it).
template <class R>
consteval bool check_recipe() {
  static_assert(recipe_has_name<R>,
                "seedrl: this type is not a cuda::agent_trainer Recipe: it lacks `static "
                "constexpr const char* name`");
  static_assert(recipe_has_shape<R>,
                "seedrl: this type is not a cuda::agent_trainer Recipe: it lacks `using "
                "shape_type = ...;`");
  static_assert(recipe_has_describe<R>,
                "seedrl: this type is not a cuda::agent_trainer Recipe: it lacks `static "
                "std::string describe(const shape_type&)`");
  return recipe_has_name<R> && recipe_has_describe<R>;
}

}  // namespace detail

/// Trains the agent `Recipe` describes on a GPU; see the file comment.
template <std::floating_point S, class Recipe>
class agent_trainer {
  static_assert(detail::check_recipe<Recipe>());

 public:
  using scalar_type = S;                           ///< parameter type
  using recipe_type = Recipe;                      ///< how networks map onto the GPU step
  using shape_type = typename Recipe::shape_type;  ///< the network's shape
  using engine_type = detail::agent_trainer_engine<S, shape_type>;  ///< the GPU side

  /// Uses CUDA device `device`; throws std::runtime_error saying what to do when no usable
  /// device has that number (no GPU, no driver, or too few GPUs). Defined in agent_trainer.cuh.
  explicit agent_trainer(int device = 0);

  agent_trainer(agent_trainer&&) noexcept = default;
  agent_trainer& operator=(agent_trainer&&) noexcept = default;
  agent_trainer(const agent_trainer&) = delete;
  agent_trainer& operator=(const agent_trainer&) = delete;
  ~agent_trainer() = default;  // the engine frees its arrays on its own device

  // --- seedrl::Trainer ---------------------------------------------------------------------

  /// One training step on the GPU; afterwards `net.parameters()` holds the new parameters.
  /// The first call uploads `net` and `opt` (load_from_host). `Net` is a network the recipe
  /// trains, `Opt` an adam<S> or rmsprop<S>, `Loss` IMPALA's or PPO's loss or the run-time
  /// choice of them (`loss_choice`, as host_trainer takes them; PPO's minibatches drawn as
  /// host_trainer draws them), over categorical policies or `spec_distribution<S>` (a
  /// Gaussian for continuous actions; a categorical loss on a Gaussian network is refused).
  template <class Net, class Opt, class Loss>
  requires detail::gpu_loss<Loss, S> train_step_result train_step(const training_batch<S>& batch,
                                                                  Net& net, Opt& opt,
                                                                  const Loss& loss,
                                                                  double max_grad_norm) {
    check_types<Net, Opt>();
    if (!loaded_) {
      load_from_host(net, opt);
    } else if (loaded_kind_ != kind_of<Opt>()) {
      throw std::logic_error(std::string(Recipe::name) +
                             "::train_step: the GPU holds another optimizer's state than the one "
                             "passed; call load_from_host(net, opt) after switching optimizers");
    }
    // Publishing on the device: no download (the host gets the parameters at sync_to_host).
    const std::span<S> params_out = publishing_ ? std::span<S>() : std::span<S>(net.parameters());
    using spec_choice = loss_choice<S, spec_distribution<S>>;
    if constexpr (std::same_as<Loss, impala_loss<S>>)
      return step(batch, loss.config(), max_grad_norm, params_out);
    else if constexpr (std::same_as<Loss, loss_choice<S>> || std::same_as<Loss, spec_choice>)
      return engine().step(batch, loss, max_grad_norm, params_out);
    else if constexpr (std::same_as<Loss, ppo_loss<S>>)
      return engine().step(batch, loss_choice<S>(loss), max_grad_norm, params_out);
    else
      return engine().step(batch, spec_choice(loss), max_grad_norm, params_out);
  }

  /// DevicePublishingTrainer (see the file comment): uploads `net` and `opt` unless done
  /// already, publishes the parameters as the returned source's first set; from then on each
  /// train_step publishes there and leaves `net.parameters()` alone.
  template <class Net, class Opt>
  std::shared_ptr<parameter_source<S>> publish_on_device(Net& net, Opt& opt) {
    check_types<Net, Opt>();
    if (!loaded_)
      load_from_host(net, opt);
    auto source = engine().publish_on_device();
    publishing_ = true;
    return source;
  }

  /// Writes the GPU's parameters into `net` and its optimizer state into `opt` (through
  /// opt.load_state, so the host optimizer then resumes exactly where the GPU is). Does
  /// nothing before the first upload: the host copies are the truth then.
  template <class Net, class Opt>
  void sync_to_host(Net& net, Opt& opt) {
    check_types<Net, Opt>();
    if (!loaded_) {
      return;
    }
    if (loaded_kind_ != kind_of<Opt>()) {
      throw std::logic_error(std::string(Recipe::name) +
                             "::sync_to_host: the GPU holds another optimizer's state than the "
                             "one passed");
    }
    download_parameters(net.parameters());
    const std::vector<std::vector<S>> arrays = optimizer_arrays();
    std::vector<std::span<const S>> spans(arrays.begin(), arrays.end());
    opt.load_state(seedrl::detail::save_optimizer_state<S>(
        kind_of<Opt>(), optimizer_steps(), std::span<const std::span<const S>>(spans)));
  }

  /// Takes `net`'s parameters and shape and `opt`'s configuration, step count and state as the
  /// new truth (re-creating the GPU network when the shape changed). If it throws, the next
  /// train_step uploads again.
  template <class Net, class Opt>
  void load_from_host(Net& net, Opt& opt) {
    check_types<Net, Opt>();
    loaded_ = false;
    const auto params = net.parameters();  // frame_stacked has no const parameters()
    upload_model(Recipe::shape_of(std::as_const(net)),
                 std::span<const S>(params.data(), params.size()));
    if constexpr (kind_of<Opt>() == seedrl::detail::optimizer_kind::adam) {
      const std::span<const S> arrays[] = {opt.first_moment(), opt.second_moment()};
      upload_optimizer(opt.config(), opt.step_count(), state_of(opt.step_count(), arrays));
    } else {
      const std::span<const S> arrays[] = {opt.mean_square(), opt.momentum_buffer()};
      const std::size_t count = opt.config().momentum > 0.0 ? 2 : 1;
      upload_optimizer(
          opt.config(), opt.step_count(),
          state_of(opt.step_count(), std::span<const std::span<const S>>(arrays, count)));
    }
    loaded_ = true;
    loaded_kind_ = kind_of<Opt>();
  }

  // --- the GPU side ------------------------------------------------------------------------

  /// The CUDA device this trainer runs on.
  int device() const noexcept { return device_; }

  /// Builds the GPU network for `shape` (kept when the shape is unchanged) and uploads
  /// `params` (the CPU network's `parameters()` layout).
  void upload_model(const shape_type& shape, std::span<const S> params) {
    engine().upload_model(shape, params);
  }

  /// Sets Adam after `steps` steps with state {m, v} (empty: zeros; see
  /// backend_agent_trainer::set_optimizer). Needs upload_model first.
  void upload_optimizer(const adam_config& config, std::int64_t steps,
                        std::span<const std::span<const S>> state) {
    engine().upload_optimizer(config, steps, state);
  }

  /// Sets RMSProp after `steps` steps with state {v[, momentum buffer]}.
  void upload_optimizer(const rmsprop_config& config, std::int64_t steps,
                        std::span<const std::span<const S>> state) {
    engine().upload_optimizer(config, steps, state);
  }

  /// One training step; downloads the new parameters into `params_out` (num_parameters(); empty:
  /// no download); publishes them into the device channel once publish_on_device made one.
  train_step_result step(const training_batch<S>& batch, const impala_loss_config<S>& loss,
                         double max_grad_norm, std::span<S> params_out) {
    return engine().step(batch, loss, max_grad_norm, params_out);
  }

  /// Copies the GPU's parameters into `params_out`.
  void download_parameters(std::span<S> params_out) const {
    engine().download_parameters(params_out);
  }

  /// The GPU's optimizer step count.
  std::int64_t optimizer_steps() const { return engine().optimizer_steps(); }

  /// The GPU's optimizer arrays in the CPU optimizer's order (adam: m, v; rmsprop: v[, momentum
  /// buffer]), each empty while the step count is 0.
  std::vector<std::vector<S>> optimizer_arrays() const { return engine().optimizer_arrays(); }

  /// The learning rate of the next step.
  double learning_rate() const { return engine().learning_rate(); }

  /// Parameters of the GPU network (0 before upload_model).
  std::size_t num_parameters() const { return engine().num_parameters(); }

 protected:
  /// For the named recipes' classes (mlp_lstm_trainer, pixel_lstm_trainer), whose own
  /// constructors (in their .cuh) make the engine, so that their explicit instantiation alone
  /// gives a program the GPU side.
  agent_trainer(int device, std::unique_ptr<engine_type> engine)
      : device_(device), engine_(std::move(engine)) {}

 private:
  engine_type& engine() const {
    if (!engine_) {
      throw std::logic_error(std::string(Recipe::name) +
                             ": this trainer was moved from; it has no GPU side");
    }
    return *engine_;
  }

  template <class Opt>
  static constexpr seedrl::detail::optimizer_kind kind_of() {
    using config_type = std::remove_cvref_t<decltype(std::declval<const Opt&>().config())>;
    if constexpr (std::is_same_v<config_type, adam_config>) {
      return seedrl::detail::optimizer_kind::adam;
    } else {
      return seedrl::detail::optimizer_kind::rmsprop;
    }
  }

  template <class Net, class Opt>
  static constexpr void check_types() {
    static_assert(std::is_same_v<typename Net::scalar_type, S>,
                  "seedrl: cuda::agent_trainer<S, Recipe> trains a network of the same S");
    Recipe::template check_network<Net>();
    using config_type = std::remove_cvref_t<decltype(std::declval<const Opt&>().config())>;
    if constexpr (!std::is_same_v<config_type, adam_config> &&
                  !std::is_same_v<config_type, rmsprop_config>) {
      static_assert(seedrl::detail::dependent_false<Opt>,
                    "seedrl: the CUDA trainers support seedrl::adam and seedrl::rmsprop; use "
                    "host_trainer for other optimizers");
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

  int device_ = 0;
  std::unique_ptr<engine_type> engine_;
  bool loaded_ = false;
  bool publishing_ = false;  // publish_on_device was called: steps publish on the device
  seedrl::detail::optimizer_kind loaded_kind_ = seedrl::detail::optimizer_kind::adam;
};

}  // namespace seedrl::cuda
