#pragma once
/// \file
/// `detail::recipe_model<Backend, S, Recipe>`: the backend trainer of a recipe's network
/// (seedrl/train/recipe_trainer.hpp) on one backend, rebuilt when the network's shape changes:
/// what `backend_trainer` (the CPU) and the CUDA trainers' engine run. No Eigen, so nvcc
/// compiles it.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "seedrl/distributed/gradient_reducer.hpp"
#include "seedrl/runtime/training_batch.hpp"
#include "seedrl/train/agent_trainer.hpp"

namespace seedrl::detail {

/// The backend trainer of `Recipe`'s network on `Backend`, rebuilt when the network's shape
/// changes; what a recipe trainer's engine does besides the device's own work.
template <class Backend, class S, class Recipe>
class recipe_model {
 public:
  using shape_type = typename Recipe::shape_type;
  using trainer_type =
      backend_agent_trainer<Backend, S, typename Recipe::template torso<Backend, S>>;

  /// On `backend`, which must outlive the model; `name` names it in messages.
  recipe_model(Backend& backend, std::string name) : backend_(&backend), name_(std::move(name)) {}

  /// Builds the network for `shape` (kept when its description is unchanged) and uploads
  /// `params` (the CPU network's layout).
  void upload_model(const shape_type& shape, std::span<const S> params) {
    std::string key = Recipe::describe(shape);
    if (!trainer_ || key_ != key) {
      trainer_.reset();  // free the old network's buffers before allocating the new one
      trainer_ = Recipe::template make_trainer<trainer_type>(*backend_, shape);
      trainer_->set_gradient_reducer(reducer_);
      key_ = std::move(key);
    }
    trainer_->set_parameters(params);
  }

  /// Adam or RMSProp after `steps` steps with `state` (backend_agent_trainer::set_optimizer).
  template <class Config>
  void upload_optimizer(const Config& config, std::int64_t steps,
                        std::span<const std::span<const S>> state) {
    model("upload_optimizer").set_optimizer(config, steps, state);
  }

  /// One step of `loss` (IMPALA's config, or a loss the backend trainer takes); downloads the
  /// new parameters into `params_out` unless it is empty.
  template <class Loss>
  train_step_result step(const training_batch<S>& batch, const Loss& loss, double max_grad_norm,
                         std::span<S> params_out) {
    auto& m = model("step");
    if (!params_out.empty() && params_out.size() != m.num_parameters()) {
      throw std::invalid_argument(name_ + "::step: params_out holds " +
                                  std::to_string(params_out.size()) + " values, the network has " +
                                  std::to_string(m.num_parameters()));
    }
    train_step_result r = m.train_step(batch, loss, max_grad_norm);
    if (!params_out.empty())
      m.get_parameters(params_out);
    return r;
  }

  /// Data-parallel training: the backend trainer averages each gradient step's gradient over
  /// `reducer`'s ranks (backend_agent_trainer::set_gradient_reducer), also after a new
  /// upload_model builds it afresh.
  void set_gradient_reducer(std::shared_ptr<distributed::gradient_reducer> reducer) {
    reducer_ = std::move(reducer);
    if (trainer_)
      trainer_->set_gradient_reducer(reducer_);
  }

  void download_parameters(std::span<S> params_out) const {
    model("download_parameters").get_parameters(params_out);
  }
  std::int64_t optimizer_steps() const { return model("optimizer_steps").optimizer_step_count(); }
  std::vector<std::vector<S>> optimizer_arrays() const {
    return model("optimizer_arrays").optimizer_state();
  }
  double learning_rate() const { return model("learning_rate").learning_rate(); }
  std::size_t num_parameters() const { return trainer_ ? trainer_->num_parameters() : 0; }

  /// The backend trainer; throws std::logic_error, naming `who`, before upload_model.
  trainer_type& model(const char* who) const {
    if (!trainer_) {
      throw std::logic_error(name_ + "::" + who +
                             ": no network on the backend yet; call load_from_host or "
                             "upload_model first");
    }
    return *trainer_;
  }

  const std::string& name() const noexcept { return name_; }

 private:
  Backend* backend_;
  std::string name_;
  std::unique_ptr<trainer_type> trainer_;
  std::shared_ptr<distributed::gradient_reducer> reducer_;  // null: one rank
  std::string key_;  ///< Recipe::describe of `trainer_`'s network
};

}  // namespace seedrl::detail
