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
/// The Trainer members are `recipe_trainer`'s (seedrl/train/recipe_trainer.hpp), the code
/// `backend_trainer` runs on the CPU; a `Recipe` (seedrl/train/mlp_lstm_recipe.hpp,
/// pixel_lstm_recipe.hpp) says how a host network maps onto the backend trainer. Only the
/// device's own work is here and in the .cuh: the device, its stream, and publication into a
/// device channel.
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
/// State: as recipe_trainer's (the GPU holds the optimizer's truth between load_from_host and
/// sync_to_host). Not thread-safe; every member may be called from any one thread at a time
/// (each sets the trainer's device first).
///
/// Device publication (DevicePublishingTrainer, seedrl/runtime/trainer.hpp): `publish_on_device`
/// makes a `device_parameter_channel` on the trainer's device and returns it as a
/// parameter_source (seedrl/runtime/parameter_source.hpp). From then on each step, after the
/// optimizer's update, copies the parameters into the channel's write buffer on the trainer's
/// stream and publishes them with an event; the step no longer downloads them into
/// `net.parameters()`, nor waits for the update to finish (the next host call that waits on the
/// stream reports its errors). A GPU inference engine on the same device takes the sets device
/// to device (cuda::inference_engine::update_parameters_on_device). No conversion: the trainer's
/// flat array and the engine's are both detail::agent_body's layout (net/detail/agent_body.hpp),
/// which is the CPU network's `parameters()` order (each uploads that array as is).

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "seedrl/algo/impala_loss_config.hpp"
#include "seedrl/algo/loss_choice.hpp"
#include "seedrl/algo/policy_distribution.hpp"
#include "seedrl/distributed/gradient_reducer.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/optim/rmsprop.hpp"
#include "seedrl/runtime/parameter_source.hpp"
#include "seedrl/runtime/training_batch.hpp"
#include "seedrl/train/recipe_trainer.hpp"

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
  /// Data-parallel training (recipe_model::set_gradient_reducer).
  virtual void set_gradient_reducer(std::shared_ptr<distributed::gradient_reducer> reducer) = 0;
  virtual std::int64_t optimizer_steps() const = 0;
  virtual std::vector<std::vector<S>> optimizer_arrays() const = 0;
  virtual double learning_rate() const = 0;
  virtual std::size_t num_parameters() const = 0;
  /// The recipe's name and " on CUDA", for messages.
  virtual const std::string& name() const = 0;
};

}  // namespace detail

/// Trains the agent `Recipe` describes on a GPU; see the file comment.
template <std::floating_point S, class Recipe>
class agent_trainer : public recipe_trainer<agent_trainer<S, Recipe>, S, Recipe> {
  friend class recipe_trainer<agent_trainer<S, Recipe>, S, Recipe>;

 public:
  using engine_type = detail::agent_trainer_engine<S, typename Recipe::shape_type>;  ///< GPU side

  /// Uses CUDA device `device`; throws std::runtime_error saying what to do when no usable
  /// device has that number (no GPU, no driver, or too few GPUs). Defined in agent_trainer.cuh.
  explicit agent_trainer(int device = 0);

  agent_trainer(agent_trainer&&) noexcept = default;
  agent_trainer& operator=(agent_trainer&&) noexcept = default;
  agent_trainer(const agent_trainer&) = delete;
  agent_trainer& operator=(const agent_trainer&) = delete;
  ~agent_trainer() = default;  // the engine frees its arrays on its own device

  /// The CUDA device this trainer runs on.
  int device() const noexcept { return device_; }

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
                             " on CUDA: this trainer was moved from; it has no GPU side");
    }
    return *engine_;
  }

  int device_ = 0;
  std::unique_ptr<engine_type> engine_;
};

}  // namespace seedrl::cuda
