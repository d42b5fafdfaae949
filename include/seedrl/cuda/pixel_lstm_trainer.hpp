#pragma once
/// \file
/// `cuda::pixel_lstm_trainer<S, TorsoConfig>`: trains the Atari example's networks on a GPU,
/// `frame_stacked<nature_cnn_lstm_agent<S>>` (TorsoConfig = nature_cnn_config, the default) or
/// `frame_stacked<impala_resnet_lstm_agent<S>>` (TorsoConfig = impala_resnet_config), as a
/// `seedrl::Trainer` (seedrl/runtime/trainer.hpp) the learner can use instead of `host_trainer`, as
/// `cuda::mlp_lstm_trainer` does for the MLP agent. The step is `backend_pixel_lstm_trainer`
/// (seedrl/train/pixel_lstm_trainer.hpp) on `cuda::cuda_backend`: parameters, optimizer state and
/// every activation stay on the GPU; each step uploads the batch and downloads the new parameters
/// into `net.parameters()` (what the learner publishes to the actors).
///
/// Plain C++: no CUDA header, no kernel, so programs compiled by g++ or clang (the learner)
/// include it. The members that touch the GPU are defined in seedrl/cuda/pixel_lstm_trainer.cuh;
/// instantiate them once, in one .cu file of the program compiled by nvcc:
///
///   #include "seedrl/cuda/pixel_lstm_trainer.cuh"
///   template class seedrl::cuda::pixel_lstm_trainer<float>;  // Nature CNN
///   template class seedrl::cuda::pixel_lstm_trainer<float, seedrl::impala_resnet_config>;
///
/// and link it with `seedrl::cuda`. That header includes this one, which is why this one
/// includes no Eigen either: the Trainer members take the network, the optimizer and the loss as
/// template parameters (a `frame_stacked<pixel_lstm_agent<Torso, S>>`, `adam<S>` or `rmsprop<S>`,
/// `impala_loss<S>`), so that nvcc never sees their definitions.
///
/// State: the first `train_step` (or `load_from_host`) uploads the network's parameters and the
/// optimizer's configuration, step count and arrays; from then on the GPU holds the truth for
/// the optimizer (the host optimizer object is not updated) until `sync_to_host` writes it
/// back, which the learner does before a checkpoint. `load_from_host` makes the host copies the
/// truth again (after a restored checkpoint). Not thread-safe; every member may be called from
/// any one thread at a time (each sets the trainer's device first).

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
#include "seedrl/detail/optimizer_math.hpp"
#include "seedrl/detail/type_traits.hpp"
#include "seedrl/net/frame_stack_config.hpp"
#include "seedrl/net/impala_resnet_config.hpp"
#include "seedrl/net/nature_cnn_config.hpp"
#include "seedrl/net/pixel_lstm_agent_config.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/optim/rmsprop.hpp"
#include "seedrl/runtime/training_batch.hpp"

namespace seedrl::cuda {

/// Trains a `frame_stacked<pixel_lstm_agent<Torso, S>>` on a GPU, the torso given by its config
/// type; see the file comment.
template <std::floating_point S, class TorsoConfig = nature_cnn_config>
class pixel_lstm_trainer {
 public:
  using scalar_type = S;                                      ///< parameter type
  using agent_config = pixel_lstm_agent_config<TorsoConfig>;  ///< the network's shape

  /// Uses CUDA device `device`; throws std::runtime_error saying what to do when no usable
  /// device has that number (no GPU, no driver, or too few GPUs).
  explicit pixel_lstm_trainer(int device = 0);
  ~pixel_lstm_trainer();
  pixel_lstm_trainer(pixel_lstm_trainer&&) noexcept;
  pixel_lstm_trainer& operator=(pixel_lstm_trainer&&) noexcept;
  pixel_lstm_trainer(const pixel_lstm_trainer&) = delete;
  pixel_lstm_trainer& operator=(const pixel_lstm_trainer&) = delete;

  // --- seedrl::Trainer ---------------------------------------------------------------------

  /// One training step on the GPU; afterwards `net.parameters()` holds the new parameters.
  /// The first call uploads `net` and `opt` (load_from_host). `Net` is a
  /// frame_stacked<pixel_lstm_agent<Torso, S>> whose torso's config is TorsoConfig, `Opt` an
  /// adam<S> or rmsprop<S>, `Loss` an impala_loss<S> (only its config is used).
  template <class Net, class Opt, class Loss>
  train_step_result train_step(const training_batch<S>& batch, Net& net, Opt& opt, const Loss& loss,
                               double max_grad_norm) {
    check_types<Net, Opt>();
    if (!loaded_) {
      load_from_host(net, opt);
    } else if (loaded_kind_ != kind_of<Opt>()) {
      throw std::logic_error(
          "seedrl::cuda::pixel_lstm_trainer::train_step: the GPU holds another optimizer's state "
          "than the one passed; call load_from_host(net, opt) after switching optimizers");
    }
    return step(batch, loss.config(), max_grad_norm, net.parameters());
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
      throw std::logic_error(
          "seedrl::cuda::pixel_lstm_trainer::sync_to_host: the GPU holds another optimizer's "
          "state than the one passed");
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
    upload_model(net.stack_config(), net.inner().config(),
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

  // --- the GPU side (defined in pixel_lstm_trainer.cuh) ---------------------------------------

  /// The CUDA device this trainer runs on.
  int device() const noexcept { return device_; }

  /// Builds the GPU network for `stack` and `agent` (kept when the shape is unchanged) and
  /// uploads `params` (the CPU network's `parameters()` layout).
  void upload_model(const frame_stack_config& stack, const agent_config& agent,
                    std::span<const S> params);

  /// Sets Adam after `steps` steps with state {m, v} (empty: zeros; see
  /// backend_pixel_lstm_trainer::set_optimizer). Needs upload_model first.
  void upload_optimizer(const adam_config& config, std::int64_t steps,
                        std::span<const std::span<const S>> state);

  /// Sets RMSProp after `steps` steps with state {v[, momentum buffer]}.
  void upload_optimizer(const rmsprop_config& config, std::int64_t steps,
                        std::span<const std::span<const S>> state);

  /// One training step; downloads the new parameters into `params_out` (num_parameters()).
  train_step_result step(const training_batch<S>& batch, const impala_loss_config<S>& loss,
                         double max_grad_norm, std::span<S> params_out);

  /// Copies the GPU's parameters into `params_out`.
  void download_parameters(std::span<S> params_out) const;

  /// The GPU's optimizer step count.
  std::int64_t optimizer_steps() const;

  /// The GPU's optimizer arrays in the CPU optimizer's order (adam: m, v; rmsprop: v[, momentum
  /// buffer]), each empty while the step count is 0.
  std::vector<std::vector<S>> optimizer_arrays() const;

  /// The learning rate of the next step.
  double learning_rate() const;

  /// Parameters of the GPU network (0 before upload_model).
  std::size_t num_parameters() const;

 private:
  struct impl;

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
                  "seedrl: cuda::pixel_lstm_trainer<S> trains a network of the same S");
    static_assert(
        std::is_same_v<std::remove_cvref_t<decltype(std::declval<const Net&>().stack_config())>,
                       frame_stack_config> &&
            std::is_same_v<
                std::remove_cvref_t<decltype(std::declval<const Net&>().inner().config())>,
                agent_config>,
        "seedrl: cuda::pixel_lstm_trainer<S, TorsoConfig> trains a "
        "seedrl::frame_stacked<pixel_lstm_agent> whose torso's config is TorsoConfig "
        "(nature_cnn_config or impala_resnet_config); use host_trainer for other networks");
    using config_type = std::remove_cvref_t<decltype(std::declval<const Opt&>().config())>;
    if constexpr (!std::is_same_v<config_type, adam_config> &&
                  !std::is_same_v<config_type, rmsprop_config>) {
      static_assert(seedrl::detail::dependent_false<Opt>,
                    "seedrl: cuda::pixel_lstm_trainer supports seedrl::adam and seedrl::rmsprop; "
                    "use host_trainer for other optimizers");
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
  std::unique_ptr<impl> impl_;
  bool loaded_ = false;
  seedrl::detail::optimizer_kind loaded_kind_ = seedrl::detail::optimizer_kind::adam;
};

}  // namespace seedrl::cuda
