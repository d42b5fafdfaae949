#pragma once
/// \file
/// `any_inference_engine<Net, GpuEngine>`: one InferenceEngine type whose model is chosen at
/// run time by `inference_engine_config::device` (learner_config::inference_device):
/// `cpu_inference_engine<Net>` for cpu, `GpuEngine` for cuda. A program thus compiles one
/// learner type per trainer whichever device infers, and the GPU model's device code stays in
/// the program's own .cu file: `GpuEngine` is `cuda::inference_engine<S, Recipe>`, a plain C++
/// class whose GPU side that .cu instantiates (seedrl/cuda/inference_engine.hpp). `GpuEngine`
/// void: the program has no GPU engine (built without CUDA, or a network the GPU recipes do not
/// cover), and asking for cuda throws std::invalid_argument.
///
/// The chosen engine sits behind a virtual interface: one indirect call per batch, nothing per
/// row. Sampling: it models SamplingInferenceEngine, and `samples()` says whether the chosen
/// engine samples where it computes; the inference loop asks, so a CPU model samples on the
/// host as the plain CPU engine does. Pipelining likewise: it models PipelinedInferenceEngine,
/// and `pipelines()` says whether the chosen engine does (the CPU model does not, and runs one
/// batch at a time as the plain CPU engine does). Device parameters too: it models
/// DeviceParameterEngine, and `takes_device_parameters()` says whether the chosen engine does
/// (the learner asks before it hands the engine the GPU trainer's device source). A GPU engine
/// that fails to start (no usable device, too little memory) throws its own exception from the
/// constructor.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include "seedrl/net/agent_step_io.hpp"
#include "seedrl/runtime/cpu_inference_engine.hpp"
#include "seedrl/runtime/inference_engine.hpp"
#include "seedrl/runtime/parameter_store.hpp"

namespace seedrl {

namespace detail {

/// The InferenceEngine operations, on a scalar type S; see the file comment.
template <class S>
class erased_inference_engine {
 public:
  virtual ~erased_inference_engine() = default;
  virtual std::size_t max_envs() const = 0;
  virtual std::size_t max_batch() const = 0;
  virtual std::size_t state_width() const = 0;
  virtual std::size_t policy_width() const = 0;
  virtual void reset_state(std::size_t slot) = 0;
  virtual void infer(std::span<const std::uint32_t> slots, const agent_step_input<S>& in,
                     const agent_step_output<S>& out) = 0;
  virtual bool samples() const = 0;
  virtual void infer_and_sample(std::span<const std::uint32_t> slots, const agent_step_input<S>& in,
                                const agent_step_output<S>& out, std::uint64_t seed,
                                std::uint64_t counter, std::span<std::int32_t> actions,
                                std::span<S> log_probs) = 0;
  virtual std::span<const S> state_before(std::size_t row) const = 0;
  virtual bool update_parameters(const parameter_store<S>& params, std::uint64_t* version) = 0;
  virtual bool pipelines() const = 0;
  virtual void begin(std::span<const std::uint32_t> slots, const agent_step_input<S>& in,
                     const agent_step_output<S>& out) = 0;
  virtual void begin_and_sample(std::span<const std::uint32_t> slots, const agent_step_input<S>& in,
                                const agent_step_output<S>& out, std::uint64_t seed,
                                std::uint64_t counter, std::span<std::int32_t> actions,
                                std::span<S> log_probs) = 0;
  virtual void finish() = 0;
  virtual bool takes_device_parameters() const = 0;
  virtual bool update_parameters_on_device(const device_parameter_copy<S>& copy) = 0;
};

/// Engine `E` behind erased_inference_engine.
template <InferenceEngine E>
class erased_inference_engine_model final
    : public erased_inference_engine<typename E::scalar_type> {
  using S = typename E::scalar_type;

 public:
  template <class... Args>
  explicit erased_inference_engine_model(Args&&... args) : e_(std::forward<Args>(args)...) {}

  std::size_t max_envs() const override { return e_.max_envs(); }
  std::size_t max_batch() const override { return e_.max_batch(); }
  std::size_t state_width() const override { return e_.state_width(); }
  std::size_t policy_width() const override { return e_.policy_width(); }
  void reset_state(std::size_t slot) override { e_.reset_state(slot); }
  void infer(std::span<const std::uint32_t> slots, const agent_step_input<S>& in,
             const agent_step_output<S>& out) override {
    e_.infer(slots, in, out);
  }
  bool samples() const override { return SamplingInferenceEngine<E>; }
  void infer_and_sample(std::span<const std::uint32_t> slots, const agent_step_input<S>& in,
                        const agent_step_output<S>& out, std::uint64_t seed, std::uint64_t counter,
                        std::span<std::int32_t> actions, std::span<S> log_probs) override {
    if constexpr (SamplingInferenceEngine<E>) {
      e_.infer_and_sample(slots, in, out, seed, counter, actions, log_probs);
    } else {
      throw std::logic_error(
          "seedrl::any_inference_engine: infer_and_sample on an engine "
          "that does not sample (check samples() first)");
    }
  }
  std::span<const S> state_before(std::size_t row) const override { return e_.state_before(row); }
  bool update_parameters(const parameter_store<S>& params, std::uint64_t* version) override {
    return e_.update_parameters(params, version);
  }
  bool pipelines() const override { return PipelinedInferenceEngine<E>; }
  void begin(std::span<const std::uint32_t> slots, const agent_step_input<S>& in,
             const agent_step_output<S>& out) override {
    if constexpr (PipelinedInferenceEngine<E>)
      e_.begin(slots, in, out);
    else
      not_pipelined();
  }
  void begin_and_sample(std::span<const std::uint32_t> slots, const agent_step_input<S>& in,
                        const agent_step_output<S>& out, std::uint64_t seed, std::uint64_t counter,
                        std::span<std::int32_t> actions, std::span<S> log_probs) override {
    if constexpr (PipelinedInferenceEngine<E> && SamplingInferenceEngine<E>)
      e_.begin_and_sample(slots, in, out, seed, counter, actions, log_probs);
    else
      not_pipelined();
  }
  void finish() override {
    if constexpr (PipelinedInferenceEngine<E>)
      e_.finish();
    else
      not_pipelined();
  }
  bool takes_device_parameters() const override { return DeviceParameterEngine<E>; }
  bool update_parameters_on_device(const device_parameter_copy<S>& copy) override {
    if constexpr (DeviceParameterEngine<E>) {
      return e_.update_parameters_on_device(copy);
    } else {
      throw std::logic_error(
          "seedrl::any_inference_engine: update_parameters_on_device on an engine that keeps "
          "its parameters in host memory (check takes_device_parameters() first)");
    }
  }

 private:
  [[noreturn]] static void not_pipelined() {
    throw std::logic_error(
        "seedrl::any_inference_engine: begin, begin_and_sample or finish on an engine that "
        "does not pipeline them (check pipelines() and samples() first)");
  }

  E e_;
};

}  // namespace detail

/// See the file comment.
template <class Net, class GpuEngine = void>
class any_inference_engine {
 public:
  using scalar_type = typename Net::scalar_type;
  using S = scalar_type;
  using gpu_engine_type = GpuEngine;

  any_inference_engine(const Net& net, const inference_engine_config& config)
      : impl_(make(net, config)), device_(config.device) {}

  /// Where the chosen engine computes.
  compute_device device() const noexcept { return device_; }

  std::size_t max_envs() const { return impl_->max_envs(); }
  std::size_t max_batch() const { return impl_->max_batch(); }
  std::size_t state_width() const { return impl_->state_width(); }
  std::size_t policy_width() const { return impl_->policy_width(); }
  void reset_state(std::size_t slot) { impl_->reset_state(slot); }
  void infer(std::span<const std::uint32_t> slots, const agent_step_input<S>& in,
             const agent_step_output<S>& out) {
    impl_->infer(slots, in, out);
  }
  /// Whether infer_and_sample may be called: the chosen engine samples where it computes.
  bool samples() const { return impl_->samples(); }
  void infer_and_sample(std::span<const std::uint32_t> slots, const agent_step_input<S>& in,
                        const agent_step_output<S>& out, std::uint64_t seed, std::uint64_t counter,
                        std::span<std::int32_t> actions, std::span<S> log_probs) {
    impl_->infer_and_sample(slots, in, out, seed, counter, actions, log_probs);
  }
  std::span<const S> state_before(std::size_t row) const { return impl_->state_before(row); }
  bool update_parameters(const parameter_store<S>& params, std::uint64_t* version) {
    return impl_->update_parameters(params, version);
  }
  /// Whether begin(), begin_and_sample() and finish() may be called: the chosen engine
  /// pipelines (PipelinedInferenceEngine).
  bool pipelines() const { return impl_->pipelines(); }
  void begin(std::span<const std::uint32_t> slots, const agent_step_input<S>& in,
             const agent_step_output<S>& out) {
    impl_->begin(slots, in, out);
  }
  void begin_and_sample(std::span<const std::uint32_t> slots, const agent_step_input<S>& in,
                        const agent_step_output<S>& out, std::uint64_t seed, std::uint64_t counter,
                        std::span<std::int32_t> actions, std::span<S> log_probs) {
    impl_->begin_and_sample(slots, in, out, seed, counter, actions, log_probs);
  }
  void finish() { impl_->finish(); }
  /// Whether update_parameters_on_device may be called: the chosen engine takes device sets.
  bool takes_device_parameters() const { return impl_->takes_device_parameters(); }
  bool update_parameters_on_device(const device_parameter_copy<S>& copy) {
    return impl_->update_parameters_on_device(copy);
  }

 private:
  static std::unique_ptr<detail::erased_inference_engine<S>> make(
      const Net& net, const inference_engine_config& config) {
    if (config.device == compute_device::cpu)
      return std::make_unique<detail::erased_inference_engine_model<cpu_inference_engine<Net>>>(
          net, config);
    if constexpr (std::is_void_v<GpuEngine>) {
      throw std::invalid_argument(
          "seedrl::any_inference_engine: this program has no GPU inference engine for its "
          "network (built without CUDA, or a network the GPU recipes do not cover)");
    } else {
      static_assert(InferenceEngine<GpuEngine>);
      static_assert(std::is_same_v<typename GpuEngine::scalar_type, S>,
                    "seedrl::any_inference_engine: the GPU engine infers in another scalar type");
      return std::make_unique<detail::erased_inference_engine_model<GpuEngine>>(net, config);
    }
  }

  std::unique_ptr<detail::erased_inference_engine<S>> impl_;
  compute_device device_;
};

}  // namespace seedrl
