#pragma once
/// \file
/// `mlp_lstm_recipe`: how `seedrl::mlp_lstm_agent` maps onto the backend trainer, a Recipe of
/// `recipe_trainer` (seedrl/train/recipe_trainer.hpp): the network's shape is its
/// `mlp_lstm_agent_config`, the torso `backend_mlp_torso`. The trainers on it:
/// `backend_trainer<S, mlp_lstm_recipe>` (the CPU, host_backend) and `cuda::mlp_lstm_trainer<S>`
/// (a GPU). Plain C++ without Eigen, so nvcc compiles it.

#include <memory>
#include <string>
#include <type_traits>
#include <utility>

#include "seedrl/net/mlp_lstm_agent_config.hpp"
#include "seedrl/train/mlp_torso.hpp"

namespace seedrl {

/// See the file comment.
struct mlp_lstm_recipe {
  /// The trainer's name in messages (with " on CUDA" or " on host_backend" after it).
  static constexpr const char* name = "seedrl::mlp_lstm_trainer";
  using shape_type = mlp_lstm_agent_config;

  template <class Net>
  static shape_type shape_of(const Net& net) {
    return net.config();
  }

  static std::string describe(const shape_type& shape) { return seedrl::describe(shape); }

  template <class Net>
  static constexpr void check_network() {
    static_assert(std::is_same_v<std::remove_cvref_t<decltype(std::declval<const Net&>().config())>,
                                 mlp_lstm_agent_config>,
                  "seedrl: the mlp_lstm_trainer recipe trains seedrl::mlp_lstm_agent only; use "
                  "host_trainer for other networks");
  }

  template <class Backend, class S>
  using torso = backend_mlp_torso<Backend, S>;

  template <class Trainer, class Backend>
  static std::unique_ptr<Trainer> make_trainer(Backend& backend, const shape_type& shape) {
    return std::make_unique<Trainer>(backend, shape);
  }
};

}  // namespace seedrl
