#pragma once
/// \file
/// `cuda::inference_engine<S, Recipe>`: the learner's inference on a GPU, a model of
/// `seedrl::InferenceEngine` (seedrl/runtime/inference_engine.hpp) for the networks the GPU
/// trainer's recipes cover (`mlp_lstm_recipe`: mlp_lstm_agent; `pixel_lstm_recipe<TorsoConfig>`:
/// frame_stacked<pixel_lstm_agent> over the Nature CNN, the IMPALA ResNet or the small conv
/// stack). The step is `backend_agent_step` (seedrl/train/agent_step.hpp) on
/// `cuda::cuda_backend`: the recipe's torso part (cuDNN convolutions, cuBLAS GEMMs), the LSTM
/// step by the hand-written kernels (`lstm_step_runner`: fused kernel up to B = 256, cuBLAS +
/// pointwise above), the heads by cuBLAS.
///
/// What lives on the device: both parameter sets (the one in use and the one the next update
/// writes), the per-slot state table (max_envs rows of the CPU network's state: frame history,
/// then (h, c) per LSTM layer) and the step's buffers. reset_state() is queued on the host and
/// applied on the device at the next batch begun, before the gather (a kernel zeroes the queued
/// rows); done resets are the step's own (rows start from zeros where the reset flag is set).
///
/// Per batch: the inputs (observations, rewards, slots, previous actions, reset flags, the rows
/// whose states are wanted and the queued reset slots) are packed into one pinned host buffer
/// and go up in one copy on the upload stream; uint8 frames (agent_step_input::observations_u8)
/// go up as bytes and the step widens them on the device. The step runs on the compute stream
/// (the backend's) once that copy is done; the logits, values and the states before the step of
/// the rows agent_step_input::keep_state asks for (every row when it is empty; compacted on the
/// device) come back in one copy into pinned memory (state_before() points there; another
/// row's is empty).
///
/// Pipelined (seedrl::PipelinedInferenceEngine): begin() enqueues a batch and returns, finish()
/// waits for the oldest and hands over its outputs; infer() is begin() then finish(). With two
/// streams, two pinned input and output buffers and two device input buffers (one pair per
/// batch in flight, events ordering them), batch k+1's packing and upload run while batch k
/// computes; the steps stay in order on the compute stream, so one device output buffer, the
/// state table and the step's work buffers serve both.
///
/// Parameters: update_parameters copies the store's newest set into pinned memory, then in one
/// copy on the compute stream into the device buffer not in use, and swaps; the copy is
/// ordered after the steps already begun and before the next, so no step reads a half-written
/// set and a batch in flight keeps its set. The host does not wait for it (an event guards the
/// pinned source until the next update).
///
/// Errors: a launch error throws `cuda_error` naming the kernel; an error inside a kernel
/// surfaces at the end-of-batch wait as a `cuda_error` saying which step failed. The inference
/// loop turns either into a clean learner stop (learner_stats::trainer_error). The constructor
/// refuses, with std::runtime_error naming the bytes needed and free, a configuration whose
/// state table and buffers do not fit in the device's free memory.
///
/// CUDA graphs: a batch of B <= 256 rows runs padded to a bucket (detail::graph_bucket) as a
/// captured graph of the step (compute only: the upload and the wait for it stay outside), one
/// per bucket, parameter buffer, device input buffer and observation type, captured at the
/// bucket's second use (the first, plain, makes every lazily created object); padded rows read
/// and write a scratch table row with the reset flag set, and their outputs are dropped. For the
/// convolutional torsos, the warm-up and the capture run inside cuda_backend::pin_convolutions:
/// the cuDNN descriptors, algorithms and workspaces of a bucket's shapes stay in the backend's
/// shape cache for the engine's life (unpinned shapes, e.g. of batches above 256, still come and
/// go), so a graph never replays a freed workspace. A failed capture falls back to plain
/// launches for that bucket; captured_graphs() counts the captures that worked.
/// SEEDRL_CUDA_GRAPHS=0 in the environment turns graphs off.
///
/// Device-to-device parameters (DeviceParameterEngine): `update_parameters_on_device(copy)`
/// hands the copy the spare parameter buffer and the engine's stream, and swaps when it enqueued
/// a whole set; with the GPU trainer in the same learner the copy comes from the trainer's
/// `device_parameter_channel` (seedrl/runtime/parameter_source.hpp), so sets never visit the host.
///
/// Sampling: `infer_and_sample` (seedrl::SamplingInferenceEngine) samples each row's action on
/// the device with the counter generator, so the inference loop gets actions, log-probs and
/// values back instead of logits.
///
/// Plain C++ (no CUDA header): the learner's g++ units include it. The GPU side is a
/// `detail::inference_engine_device` made by `make_device` (defined in
/// seedrl/cuda/inference_engine.cuh); instantiate it once, in one .cu file of the program:
///
///   #include "seedrl/cuda/inference_engine.cuh"
///   template class seedrl::cuda::inference_engine<float, seedrl::cuda::mlp_lstm_recipe>;

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "seedrl/net/agent_step_io.hpp"
#include "seedrl/runtime/inference_engine.hpp"
#include "seedrl/runtime/parameter_store.hpp"

namespace seedrl::cuda {

namespace detail {

/// Batches up to this many rows run as a captured CUDA graph (the fused LSTM kernel's range,
/// which needs no workspace that could move between captures).
inline constexpr std::size_t graph_max_rows = 256;

/// The rows a batch of B runs as when steps are captured as CUDA graphs: B padded up to the
/// next power of two, at most max_batch (the buffers' size); 0 when B is above graph_max_rows
/// or B is 0 (plain launches). A few buckets, so a few captures serve every batch size.
constexpr std::size_t graph_bucket(std::size_t B, std::size_t max_batch) {
  if (B == 0 || B > graph_max_rows || B > max_batch)
    return 0;
  std::size_t rows = 1;
  while (rows < B)
    rows *= 2;
  return rows < max_batch ? rows : max_batch;
}

/// The GPU side of an inference_engine; see the file comment. Defined in
/// seedrl/cuda/inference_engine.cuh.
template <class S>
class inference_engine_device {
 public:
  virtual ~inference_engine_device() = default;
  virtual std::size_t state_width() const = 0;
  virtual std::size_t num_parameters() const = 0;
  /// Queues `slot`'s reset for the next infer.
  virtual void reset_state(std::size_t slot) = 0;
  virtual void infer(std::span<const std::uint32_t> slots, const agent_step_input<S>& in,
                     const agent_step_output<S>& out) = 0;
  /// infer, then row r's action by counter_categorical (SamplingInferenceEngine).
  virtual void infer_and_sample(std::span<const std::uint32_t> slots, const agent_step_input<S>& in,
                                const agent_step_output<S>& out, std::uint64_t seed,
                                std::uint64_t counter, std::span<std::int32_t> actions,
                                std::span<S> log_probs) = 0;
  /// PipelinedInferenceEngine: infer's (infer_and_sample's) step without the wait, and the
  /// wait for the oldest batch begun.
  virtual void begin(std::span<const std::uint32_t> slots, const agent_step_input<S>& in,
                     const agent_step_output<S>& out) = 0;
  virtual void begin_and_sample(std::span<const std::uint32_t> slots, const agent_step_input<S>& in,
                                const agent_step_output<S>& out, std::uint64_t seed,
                                std::uint64_t counter, std::span<std::int32_t> actions,
                                std::span<S> log_probs) = 0;
  virtual void finish() = 0;
  virtual std::span<const S> state_before(std::size_t row) const = 0;
  /// Pinned host memory of num_parameters() values that set_parameters uploads.
  virtual std::span<S> parameter_staging() = 0;
  /// Uploads parameter_staging() into the parameter buffer not in use, then swaps.
  virtual void set_parameters_from_staging() = 0;
  /// Calls copy(spare parameter buffer, the engine's cudaStream_t as void*); swaps to the spare
  /// when it returns true (it enqueued a copy of a whole set on that stream).
  virtual bool update_on_device(const std::function<bool(S*, void*)>& copy) = 0;
  /// CUDA graphs captured so far (one per bucket and parameter buffer).
  virtual std::size_t captured_graphs() const = 0;
};

}  // namespace detail

/// The learner's inference on a GPU; see the file comment.
template <std::floating_point S, class Recipe>
class inference_engine {
 public:
  using scalar_type = S;
  using recipe_type = Recipe;
  using shape_type = typename Recipe::shape_type;
  using device_type = detail::inference_engine_device<S>;

  /// The network `net` (a network the recipe covers: its shape and parameters) on CUDA device
  /// `device` for `config`'s sizes. Throws std::invalid_argument for a config the engine cannot
  /// serve, std::runtime_error when the device is unusable or its free memory too small.
  template <class Net>
  inference_engine(const Net& net, const inference_engine_config& config, int device = 0)
      : max_envs_(config.max_envs),
        max_batch_(config.max_batch),
        policy_width_(config.policy_width) {
    Recipe::template check_network<Net>();
    static_assert(std::is_same_v<typename Net::scalar_type, S>,
                  "seedrl: cuda::inference_engine<S, Recipe> infers with a network of the same S");
    if (config.max_batch == 0 || config.max_envs == 0)
      throw std::invalid_argument(
          std::string(Recipe::name) +
          " CUDA inference engine: max_envs and max_batch must be positive");
    Net copy(net);  // frame_stacked has no const parameters()
    const auto p = copy.parameters();
    device_ =
        make_device(device, Recipe::shape_of(net), std::span<const S>(p.data(), p.size()), config);
  }

  inference_engine(const inference_engine&) = delete;
  inference_engine& operator=(const inference_engine&) = delete;
  inference_engine(inference_engine&&) noexcept = default;
  inference_engine& operator=(inference_engine&&) noexcept = default;
  ~inference_engine() = default;

  std::size_t max_envs() const noexcept { return max_envs_; }
  std::size_t max_batch() const noexcept { return max_batch_; }
  std::size_t state_width() const { return device_->state_width(); }
  std::size_t policy_width() const noexcept { return policy_width_; }

  void reset_state(std::size_t slot) {
    if (slot >= max_envs_) {
      throw std::out_of_range(std::string(Recipe::name) + " CUDA inference engine: slot " +
                              std::to_string(slot) + " is outside [0, " +
                              std::to_string(max_envs_) + ")");
    }
    device_->reset_state(slot);
  }

  void infer(std::span<const std::uint32_t> slots, const agent_step_input<S>& in,
             const agent_step_output<S>& out) {
    device_->infer(slots, in, out);
  }

  /// SamplingInferenceEngine: the step, then each row's action sampled on the device by the
  /// counter generator (seedrl/core/counter_random.hpp); only values, actions and log-probs
  /// (and the requested states before) come back; out.logits is left alone.
  void infer_and_sample(std::span<const std::uint32_t> slots, const agent_step_input<S>& in,
                        const agent_step_output<S>& out, std::uint64_t seed, std::uint64_t counter,
                        std::span<std::int32_t> actions, std::span<S> log_probs) {
    device_->infer_and_sample(slots, in, out, seed, counter, actions, log_probs);
  }

  /// PipelinedInferenceEngine: infer()'s step, enqueued; returns before it runs. The inputs are
  /// copied into pinned memory before it returns; `out` must stay valid until finish().
  void begin(std::span<const std::uint32_t> slots, const agent_step_input<S>& in,
             const agent_step_output<S>& out) {
    device_->begin(slots, in, out);
  }

  /// PipelinedInferenceEngine: infer_and_sample()'s step, enqueued; `out`, `actions` and
  /// `log_probs` must stay valid until finish().
  void begin_and_sample(std::span<const std::uint32_t> slots, const agent_step_input<S>& in,
                        const agent_step_output<S>& out, std::uint64_t seed, std::uint64_t counter,
                        std::span<std::int32_t> actions, std::span<S> log_probs) {
    device_->begin_and_sample(slots, in, out, seed, counter, actions, log_probs);
  }

  /// PipelinedInferenceEngine: waits for the oldest batch begun, writes its outputs; a failed
  /// step throws cuda_error here.
  void finish() { device_->finish(); }

  std::span<const S> state_before(std::size_t row) const { return device_->state_before(row); }

  /// CUDA graphs of the step captured so far, one per batch-size bucket and parameter buffer
  /// (0 with SEEDRL_CUDA_GRAPHS=0, or where every capture failed and the steps run plain).
  std::size_t captured_graphs() const { return device_->captured_graphs(); }

  bool update_parameters(const parameter_store<S>& params, std::uint64_t* version) {
    if (!params.update_if_newer(version, device_->parameter_staging()))
      return false;
    device_->set_parameters_from_staging();
    return true;
  }

  /// Device to device, from the GPU trainer's `cuda::device_parameter_channel<S>`
  /// (seedrl/cuda/device_parameter_channel.cuh): when it holds a set newer than `*version`, the
  /// engine's stream waits for that set's writes and copies it into the spare parameter buffer,
  /// and the next step uses it. True when it took a set.
  template <class Channel>
  requires requires(Channel& c, S* dst, typename Channel::stream_type stream, std::uint64_t* v) {
    { c.copy_if_newer(dst, stream, v) } -> std::convertible_to<bool>;
  }
  bool update_parameters(Channel& channel, std::uint64_t* version) {
    return device_->update_on_device([&](S* dst, void* stream) {
      return channel.copy_if_newer(dst, static_cast<typename Channel::stream_type>(stream),
                                   version);
    });
  }

  /// DeviceParameterEngine: calls `copy(spare parameter buffer, the engine's cudaStream_t)`
  /// between batches; when it returns true (it enqueued a copy of a whole set on that stream,
  /// after that set's writes), the next step uses the new set.
  bool update_parameters_on_device(const device_parameter_copy<S>& copy) {
    return device_->update_on_device(copy);
  }

  /// Uploads `params` (the CPU network's layout) as the parameters of the next step.
  void set_parameters(std::span<const S> params) {
    const auto staging = device_->parameter_staging();
    if (params.size() != staging.size()) {
      throw std::invalid_argument(std::string(Recipe::name) +
                                  " CUDA inference engine: " + std::to_string(params.size()) +
                                  " parameters, the network has " + std::to_string(staging.size()));
    }
    std::copy(params.begin(), params.end(), staging.begin());
    device_->set_parameters_from_staging();
  }

 private:
  /// The GPU side; defined in seedrl/cuda/inference_engine.cuh.
  static std::unique_ptr<device_type> make_device(int device, const shape_type& shape,
                                                  std::span<const S> params,
                                                  const inference_engine_config& config);

  std::size_t max_envs_, max_batch_, policy_width_;
  std::unique_ptr<device_type> device_;
};

}  // namespace seedrl::cuda
