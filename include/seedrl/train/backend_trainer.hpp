#pragma once
/// \file
/// `backend_trainer<S, Recipe, Backend = host_backend>`: trains a recipe's network (seedrl/train/
/// mlp_lstm_recipe.hpp, pixel_lstm_recipe.hpp) as a `seedrl::Trainer` on a backend object of
/// its own: `backend_agent_trainer` through `recipe_trainer` (seedrl/train/recipe_trainer.hpp),
/// the code the CUDA trainers run, here on the CPU's host_backend. The parameters, the
/// optimizer state and the activations live in the backend's memory; each step copies the new
/// parameters into `net.parameters()`.
///
///   seedrl::backend_trainer<float, seedrl::mlp_lstm_recipe> trainer;
///   trainer.train_step(batch, net, opt, loss, max_grad_norm);  // net: an mlp_lstm_agent<float>
///
/// Not thread-safe (one step at a time, as the learner's trainer thread runs it).

#include <concepts>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "seedrl/backend/host_backend.hpp"
#include "seedrl/train/detail/recipe_model.hpp"
#include "seedrl/train/recipe_trainer.hpp"

namespace seedrl {

/// See the file comment.
template <std::floating_point S, class Recipe, class Backend = host_backend>
class backend_trainer : public recipe_trainer<backend_trainer<S, Recipe, Backend>, S, Recipe> {
  friend class recipe_trainer<backend_trainer<S, Recipe, Backend>, S, Recipe>;

 public:
  using backend_type = Backend;

  backend_trainer()
      : backend_(std::make_unique<Backend>()),
        model_(std::make_unique<model_type>(*backend_,
                                            std::string(Recipe::name) + " on host_backend")) {}

  backend_trainer(backend_trainer&&) noexcept = default;
  backend_trainer& operator=(backend_trainer&& other) noexcept {
    model_ = std::move(other.model_);  // the old model goes before the backend it points to
    backend_ = std::move(other.backend_);
    recipe_trainer<backend_trainer, S, Recipe>::operator=(std::move(other));
    return *this;
  }
  backend_trainer(const backend_trainer&) = delete;
  backend_trainer& operator=(const backend_trainer&) = delete;
  ~backend_trainer() = default;  // the model (declared last) goes first

 private:
  using model_type = detail::recipe_model<Backend, S, Recipe>;

  model_type& engine() const {
    if (!model_)
      throw std::logic_error(std::string(Recipe::name) +
                             " on host_backend: this trainer was "
                             "moved from; it has no model");
    return *model_;
  }

  // Behind pointers: the model keeps the backend's address, and the trainer stays movable.
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<model_type> model_;
};

}  // namespace seedrl
