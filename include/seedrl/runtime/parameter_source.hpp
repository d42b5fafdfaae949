#pragma once
/// \file
/// `parameter_source<S>`: where the inference loop takes trained parameters between batches.
/// The plug point between how the trainer publishes and how the engine takes a set:
///   - `store_parameter_source` (the default): the host `parameter_store` the training loop
///     publishes into after each step; the engine copies the newest snapshot
///     (`update_parameters(store, &version)`);
///   - `channel_parameter_source<Channel>`: a channel of device buffers the trainer writes on
///     its device (`cuda::device_parameter_channel`: the GPU trainer's parameters after each
///     optimizer step, seedrl/cuda/agent_trainer.hpp `publish_on_device`); the engine's stream
///     copies the newest set into its spare parameter buffer, device to device
///     (DeviceParameterEngine, seedrl/runtime/inference_engine.hpp), with no host round trip.
/// A source sees the engine as a `parameter_target<S>`, the two ways an engine takes a set, so
/// that one inference loop (and one learner type, with any_inference_engine) serves both.
///
/// Versions: a source numbers its sets 1, 2, ... in publication order and `version()` is the
/// count so far. The inference loop records, for each step, the version of the set its action
/// came from, and the training loop measures the policy lag against `version()` of the same
/// source (the set it is about to train), so the two count alike whichever source is in use.
///
/// Threads: update() on the inference thread, between batches; version() on any thread.

#include <concepts>
#include <cstdint>
#include <stdexcept>
#include <utility>

#include "seedrl/runtime/inference_engine.hpp"
#include "seedrl/runtime/parameter_store.hpp"

namespace seedrl {

/// An inference engine as a parameter source sees it; see the file comment.
template <std::floating_point S>
class parameter_target {
 public:
  /// The engine's update_parameters(store, version): takes the store's newest set when it is
  /// newer than `*version`; true when it took it.
  virtual bool take_from_store(const parameter_store<S>& store, std::uint64_t* version) = 0;
  /// The engine's update_parameters_on_device(copy) (DeviceParameterEngine). Throws
  /// std::logic_error when the engine keeps its parameters in host memory.
  virtual bool take_on_device(const device_parameter_copy<S>& copy) = 0;

 protected:
  ~parameter_target() = default;
};

/// See the file comment.
template <std::floating_point S>
class parameter_source {
 public:
  virtual ~parameter_source() = default;
  /// Sets published so far (the newest one's version).
  virtual std::uint64_t version() const = 0;
  /// Between batches: when a set newer than `*version` was published, hands it to `engine`
  /// (whole, before its next step) and sets `*version` to its version; true when it did.
  virtual bool update(parameter_target<S>& engine, std::uint64_t* version) = 0;
};

/// The host parameter_store as a source (the default).
template <std::floating_point S>
class store_parameter_source final : public parameter_source<S> {
 public:
  /// `store` must outlive the source.
  explicit store_parameter_source(const parameter_store<S>& store) : store_(store) {}
  std::uint64_t version() const override { return store_.version(); }
  bool update(parameter_target<S>& engine, std::uint64_t* version) override {
    return engine.take_from_store(store_, version);
  }

 private:
  const parameter_store<S>& store_;
};

/// A channel of device buffers as a source. `Channel` (e.g. cuda::device_parameter_channel<S>)
/// provides `scalar_type`, `stream_type` (a pointer type), `std::uint64_t version() const` and
/// `bool copy_if_newer(scalar_type* dst, stream_type stream, std::uint64_t* version)`: when a
/// set newer than `*version` was published, enqueue its copy into dst on `stream` after its
/// writes, set `*version`, return true. The writer reaches the channel through channel().
template <class Channel>
class channel_parameter_source final : public parameter_source<typename Channel::scalar_type> {
 public:
  using S = typename Channel::scalar_type;
  using stream_type = typename Channel::stream_type;

  /// The channel is built from `args`.
  template <class... Args>
  explicit channel_parameter_source(Args&&... args) : channel_(std::forward<Args>(args)...) {}

  /// The writer's side (the trainer).
  Channel& channel() noexcept { return channel_; }

  std::uint64_t version() const override { return channel_.version(); }
  bool update(parameter_target<S>& engine, std::uint64_t* version) override {
    return engine.take_on_device([this, version](S* spare, void* stream) {
      return channel_.copy_if_newer(spare, static_cast<stream_type>(stream), version);
    });
  }

 private:
  Channel channel_;
};

namespace detail {

/// Whether `e` takes sets device to device: DeviceParameterEngine, and where the model is chosen
/// at run time (any_inference_engine), the chosen one does.
template <InferenceEngine E>
bool takes_device_parameters(const E& e) {
  if constexpr (requires {
                  { e.takes_device_parameters() } -> std::convertible_to<bool>;
                })
    return e.takes_device_parameters();
  else
    return DeviceParameterEngine<E>;
}

/// Engine `E` as a parameter_target (the inference loop's view of its engine).
template <InferenceEngine E>
class engine_parameter_target final : public parameter_target<typename E::scalar_type> {
  using S = typename E::scalar_type;

 public:
  explicit engine_parameter_target(E& engine) : engine_(engine) {}
  bool take_from_store(const parameter_store<S>& store, std::uint64_t* version) override {
    return engine_.update_parameters(store, version);
  }
  bool take_on_device(const device_parameter_copy<S>& copy) override {
    if constexpr (DeviceParameterEngine<E>) {
      return engine_.update_parameters_on_device(copy);
    } else {
      throw std::logic_error(
          "seedrl: this inference engine keeps its parameters in host memory; it cannot take "
          "sets from a device parameter source");
    }
  }

 private:
  E& engine_;
};

}  // namespace detail

}  // namespace seedrl
