#pragma once
/// \file
/// The GPU side of `cuda::agent_trainer` (seedrl/cuda/agent_trainer.hpp): the engine, the
/// recipe's backend trainer (`detail::recipe_model`, what `backend_trainer` runs on the CPU) on
/// a `cuda_backend` on one device plus the device's own work (setting the device, publication
/// into a device channel), and the constructor that makes it. Include it from exactly one .cu file
/// of a program, compiled by nvcc, next to one explicit instantiation per scalar type and recipe
/// the program uses:
///
///   #include "seedrl/cuda/agent_trainer.cuh"
///   template class seedrl::cuda::agent_trainer<float, my_recipe>;
///
/// Includes no Eigen (only the recipe's config headers), so nvcc never compiles the CPU
/// networks.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "seedrl/cuda/agent_trainer.hpp"
#include "seedrl/cuda/cuda_backend.cuh"
#include "seedrl/cuda/device.cuh"
#include "seedrl/cuda/device_parameter_channel.cuh"
#include "seedrl/cuda/error.cuh"
#include "seedrl/runtime/parameter_source.hpp"
#include "seedrl/train/detail/recipe_model.hpp"

namespace seedrl::cuda {

namespace detail {

/// Throws std::runtime_error with what to do when CUDA device `device` cannot be used by the
/// trainer `name`.
inline void require_agent_trainer_device(const char* name, int device) {
  const std::string who = std::string(name) + " (device " + std::to_string(device) + ")";
  require_device(who);
  const device_presence p = query_devices();
  if (device < 0 || device >= p.count) {
    throw std::runtime_error("seedrl: " + who + " asks for CUDA device " + std::to_string(device) +
                             ", but this machine has " + std::to_string(p.count) +
                             " usable device(s), numbered from 0; pick one of them (or set "
                             "CUDA_VISIBLE_DEVICES)");
  }
}

/// Makes `device` current on the calling thread (the learner may train on another thread than
/// the one that made the trainer).
inline void use_agent_trainer_device(int device) {
  SEEDRL_CUDA_CHECK(cudaSetDevice(device));
}

/// The engine of `agent_trainer<S, Recipe>`; see agent_trainer_engine.
template <class S, class Recipe>
class agent_trainer_engine_impl final
    : public agent_trainer_engine<S, typename Recipe::shape_type> {
  using shape_type = typename Recipe::shape_type;
  using model_type = seedrl::detail::recipe_model<cuda_backend, S, Recipe>;
  using channel_source = channel_parameter_source<device_parameter_channel<S>>;

 public:
  explicit agent_trainer_engine_impl(int device)
      : device_(device), name_(std::string(Recipe::name) + " on CUDA") {
    require_agent_trainer_device(name_.c_str(), device);
    use_agent_trainer_device(device);
    backend_ = std::make_unique<cuda_backend>();
    model_ = std::make_unique<model_type>(*backend_, name_);
  }

  ~agent_trainer_engine_impl() override {
    (void)cudaSetDevice(device_);  // free on the right device; a destructor cannot report
    model_.reset();
    backend_.reset();
  }

  agent_trainer_engine_impl(const agent_trainer_engine_impl&) = delete;
  agent_trainer_engine_impl& operator=(const agent_trainer_engine_impl&) = delete;

  void upload_model(const shape_type& shape, std::span<const S> params) override {
    use_agent_trainer_device(device_);
    model_->upload_model(shape, params);
    if (channel_)
      publish();  // e.g. a restored checkpoint: inference takes it from the channel
  }

  void upload_optimizer(const adam_config& config, std::int64_t steps,
                        std::span<const std::span<const S>> state) override {
    use_agent_trainer_device(device_);
    model_->upload_optimizer(config, steps, state);
  }

  void upload_optimizer(const rmsprop_config& config, std::int64_t steps,
                        std::span<const std::span<const S>> state) override {
    use_agent_trainer_device(device_);
    model_->upload_optimizer(config, steps, state);
  }

  train_step_result step(const training_batch<S>& batch, const impala_loss_config<S>& loss,
                         double max_grad_norm, std::span<S> params_out) override {
    return run_step(batch, loss, max_grad_norm, params_out);
  }

  train_step_result step(const training_batch<S>& batch, const loss_choice<S>& loss,
                         double max_grad_norm, std::span<S> params_out) override {
    return run_step(batch, loss, max_grad_norm, params_out);
  }

  train_step_result step(const training_batch<S>& batch,
                         const loss_choice<S, spec_distribution<S>>& loss, double max_grad_norm,
                         std::span<S> params_out) override {
    return run_step(batch, loss, max_grad_norm, params_out);
  }

  std::shared_ptr<parameter_source<S>> publish_on_device() override {
    use_agent_trainer_device(device_);
    const auto& m = model_->model("publish_on_device");
    if (!channel_)  // on this device: the events and buffers belong to it
      channel_ = std::make_shared<channel_source>(m.num_parameters());
    publish();
    return channel_;
  }

  void set_gradient_reducer(std::shared_ptr<distributed::gradient_reducer> reducer) override {
    model_->set_gradient_reducer(std::move(reducer));
  }

  void download_parameters(std::span<S> params_out) const override {
    use_agent_trainer_device(device_);
    model_->download_parameters(params_out);
  }

  std::int64_t optimizer_steps() const override { return model_->optimizer_steps(); }

  std::vector<std::vector<S>> optimizer_arrays() const override {
    use_agent_trainer_device(device_);
    return model_->optimizer_arrays();
  }

  double learning_rate() const override { return model_->learning_rate(); }

  std::size_t num_parameters() const override { return model_->num_parameters(); }

  const std::string& name() const override { return name_; }

 private:
  /// One step of the loss `loss` (IMPALA's config or the loss chosen at run time).
  template <class Loss>
  train_step_result run_step(const training_batch<S>& batch, const Loss& loss, double max_grad_norm,
                             std::span<S> params_out) {
    use_agent_trainer_device(device_);
    train_step_result r = model_->step(batch, loss, max_grad_norm, {});
    if (channel_)
      publish();  // after the optimizer's update on the stream; nothing waits for it
    if (!params_out.empty())
      model_->download_parameters(params_out);  // waits for the step
    return r;
  }

  /// The parameters into the channel's write buffer, on the trainer's stream after the work
  /// given so far (the write waits for the last copy out of that buffer), then published.
  void publish() {
    auto& channel = channel_->channel();
    const auto& m = model_->model("publish");
    if (m.num_parameters() != channel.size()) {
      throw std::logic_error(name_ + ": the network now has " + std::to_string(m.num_parameters()) +
                             " parameters, the device channel holds " +
                             std::to_string(channel.size()));
    }
    S* dst = channel.begin_write(backend_->stream());
    m.copy_parameters_to(dst);
    channel.publish(backend_->stream());
  }

  int device_ = 0;
  std::string name_;
  std::unique_ptr<cuda_backend> backend_;  ///< behind a pointer: the model keeps its address
  std::unique_ptr<model_type> model_;
  /// Device publication (publish_on_device); shared with the inference side, which may outlive
  /// this engine.
  std::shared_ptr<channel_source> channel_;
};

/// The GPU side of an agent_trainer<S, Recipe> on `device`.
template <class S, class Recipe>
std::unique_ptr<agent_trainer_engine<S, typename Recipe::shape_type>> make_agent_trainer_engine(
    int device) {
  return std::make_unique<agent_trainer_engine_impl<S, Recipe>>(device);
}

}  // namespace detail

template <std::floating_point S, class Recipe>
agent_trainer<S, Recipe>::agent_trainer(int device)
    : agent_trainer(device, detail::make_agent_trainer_engine<S, Recipe>(device)) {}

}  // namespace seedrl::cuda
