#pragma once
/// \file
/// The GPU side of `cuda::inference_engine` (seedrl/cuda/inference_engine.hpp): the device
/// engine (`backend_agent_step` on a `cuda_backend`, the LSTM step by `lstm_step_runner`, the
/// state table, pinned staging) and `inference_engine::make_device`. Include it from exactly one
/// .cu file of a program, compiled by nvcc, next to one explicit instantiation per scalar type
/// and recipe:
///
///   #include "seedrl/cuda/inference_engine.cuh"
///   template class seedrl::cuda::inference_engine<float, seedrl::cuda::mlp_lstm_recipe>;
///
/// Includes no Eigen.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "seedrl/core/counter_random.hpp"
#include "seedrl/cuda/cuda_backend.cuh"
#include "seedrl/cuda/device.cuh"
#include "seedrl/cuda/error.cuh"
#include "seedrl/cuda/inference_engine.hpp"
#include "seedrl/cuda/lstm_step.cuh"
#include "seedrl/train/agent_step.hpp"

namespace seedrl::cuda {

namespace detail {

/// Page-locked host memory (cudaMallocHost), so that copies to and from the device run
/// asynchronously at full bandwidth.
template <class T>
class pinned_buffer {
 public:
  pinned_buffer() = default;
  explicit pinned_buffer(std::size_t n) : size_(n) {
    if (n != 0) {
      void* p = nullptr;
      SEEDRL_CUDA_CHECK(cudaMallocHost(&p, n * sizeof(T)));
      data_ = static_cast<T*>(p);
    }
  }
  pinned_buffer(pinned_buffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  pinned_buffer& operator=(pinned_buffer&& o) noexcept {
    if (this != &o) {
      release();
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  pinned_buffer(const pinned_buffer&) = delete;
  pinned_buffer& operator=(const pinned_buffer&) = delete;
  ~pinned_buffer() { release(); }

  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }

 private:
  void release() noexcept {
    if (data_ != nullptr)
      (void)cudaFreeHost(data_);  // a destructor cannot report
    data_ = nullptr;
  }
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

/// `backend_agent_step`'s LSTM step on the GPU: the hand-written kernels through
/// lstm_step_runner (fused up to B = 256, cuBLAS + pointwise above), on the backend's stream.
/// The kernels apply the rows' resets to the incoming state, as the backend step does.
template <class S>
struct cuda_lstm_step {
  std::unique_ptr<lstm_step_runner<S>> runner;

  void operator()(cuda_backend& backend, const seedrl::detail::lstm_step_args<S>& a) {
    if (!runner)
      runner = std::make_unique<lstm_step_runner<S>>(backend.stream());
    lstm_layer_device<S> layer;
    layer.weight = a.weight;
    layer.bias = a.bias;
    layer.input_size = static_cast<int>(a.I);
    layer.hidden_size = static_cast<int>(a.H);
    lstm_step_operands<S> op;
    op.batch = static_cast<int>(a.B);
    op.x = a.x;
    op.x_stride = static_cast<int>(a.ldx);
    op.dones = a.resets;
    op.h_prev = a.h_prev;
    op.c_prev = a.c_prev;
    op.prev_stride = static_cast<int>(a.ld_prev);
    op.h = a.h;
    op.c = a.c;
    op.out_stride = static_cast<int>(a.ld_out);
    runner->step(layer, op);
  }
};

/// table[slots[r], k] = 0 over n rows of `width`: the queued reset_state calls.
template <class S>
struct zero_rows_kernel {
  const std::uint32_t* slots;
  std::size_t width;
  S* table;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    table[static_cast<std::size_t>(slots[i / width]) * width + i % width] = S(0);
  }
};

/// Row r's action and log-prob by the counter generator (seedrl/core/counter_random.hpp), the
/// same function the CPU reference runs: i = r.
template <class S>
struct counter_sample_kernel {
  const S* logits;
  int A;
  std::uint64_t seed;
  std::uint64_t counter;
  std::int32_t* actions;
  S* log_probs;

  SEEDRL_HOST_DEVICE void operator()(std::size_t r) const {
    actions[r] = counter_categorical(logits + r * static_cast<std::size_t>(A), A,
                                     counter_uniform(seed, counter, r), log_probs + r);
  }
};

/// Byte offsets of the per-batch download: logits S[B*A] | values S[B] | log-probs S[B] |
/// actions int32[B] | the kept rows' states before S[K*W] (K <= B rows, compacted on the
/// device: the rows agent_step_input::keep_state asks for). infer() brings back logits to the
/// K states, sampling values to the K states: one contiguous copy either way, `bytes` for K = B.
struct download_layout {
  std::size_t logits = 0, values = 0, log_probs = 0, actions = 0, before = 0, bytes = 0;

  template <class S>
  static download_layout of(std::size_t B, std::size_t A, std::size_t W) {
    download_layout l;
    l.values = B * A * sizeof(S);
    l.log_probs = l.values + B * sizeof(S);
    l.actions = l.log_probs + B * sizeof(S);
    // The states start S-aligned (B int32s may end 4 bytes short of a double).
    l.before = (l.actions + B * sizeof(std::int32_t) + sizeof(S) - 1) / sizeof(S) * sizeof(S);
    l.bytes = l.before + B * W * sizeof(S);
    return l;
  }
  /// Where the download of K kept states ends.
  template <class S>
  std::size_t end(std::size_t K, std::size_t W) const {
    return before + K * W * sizeof(S);
  }
};

/// Byte offsets of the packed per-batch upload, each aligned to 16 bytes: rewards, slots,
/// previous actions, reset flags, the rows whose states come back (K uint32, at most B), the
/// observations (S each, or 1 byte each for uint8 frames: `frames` = true) and the queued reset
/// slots. Every offset up to the observations' depends on B alone, so a captured step reads
/// the same addresses whatever the observations' type.
struct upload_layout {
  std::size_t rewards = 0, slots = 0, prev = 0, prev_continuous = 0, resets = 0, keep = 0, obs = 0,
              reset_slots = 0, bytes = 0;

  /// `D` elements of a continuous previous action per row (0: discrete actions).
  template <class S>
  static upload_layout of(std::size_t B, std::size_t obs_size, std::size_t n_reset,
                          bool frames = false, std::size_t D = 0) {
    const auto up = [](std::size_t n) { return (n + 15) / 16 * 16; };
    upload_layout l;
    l.rewards = 0;
    l.slots = up(l.rewards + B * sizeof(S));
    l.prev = up(l.slots + B * sizeof(std::uint32_t));
    l.prev_continuous = up(l.prev + B * sizeof(std::int32_t));
    l.resets = up(l.prev_continuous + B * D * sizeof(S));
    l.keep = up(l.resets + B);
    l.obs = up(l.keep + B * sizeof(std::uint32_t));
    l.reset_slots = up(l.obs + B * obs_size * (frames ? 1 : sizeof(S)));
    l.bytes = l.reset_slots + n_reset * sizeof(std::uint32_t);
    return l;
  }
};

/// The device engine of inference_engine<S, Recipe>; see the .hpp's file comment.
template <class S, class Recipe>
class inference_engine_device_impl final : public inference_engine_device<S> {
  using shape_type = typename Recipe::shape_type;
  using step_type =
      backend_agent_step<cuda_backend, S, typename Recipe::template torso<cuda_backend, S>,
                         cuda_lstm_step<S>>;
  static constexpr const char* who = "seedrl::cuda::inference_engine";

 public:
  inference_engine_device_impl(int device, const shape_type& shape, std::span<const S> params,
                               const inference_engine_config& c)
      : device_(device), max_envs_(c.max_envs), max_batch_(c.max_batch) {
    require_device(std::string(who) + " (device " + std::to_string(device) + ")");
    SEEDRL_CUDA_CHECK(cudaSetDevice(device));
    backend_ = std::make_unique<cuda_backend>();
    step_ = Recipe::template make_trainer<step_type>(*backend_, shape);
    A_ = step_->num_actions();
    D_ = step_->continuous_action_size();
    W_ = step_->state_size();
    obs_ = step_->observation_size();
    P_ = step_->num_parameters();
    if (c.policy_width != A_) {
      throw std::invalid_argument(std::string(who) + ": the network writes " + std::to_string(A_) +
                                  " policy outputs per row, the engine was asked for " +
                                  std::to_string(c.policy_width));
    }
    if (params.size() != P_) {
      throw std::invalid_argument(std::string(who) + ": " + std::to_string(params.size()) +
                                  " parameters, the network has " + std::to_string(P_));
    }
    if (max_batch_ > step_->max_rows()) {
      throw std::invalid_argument(std::string(who) + ": a batch of " + std::to_string(max_batch_) +
                                  " rows is more than the torso's tensors hold (" +
                                  std::to_string(step_->max_rows()) + ")");
    }
    check_memory();
    // One row more than the slots: padded rows of a graph bucket use it as scratch.
    table_ = backend_->template allocate<S>((max_envs_ + 1) * W_);
    before_ = backend_->template allocate<S>(max_batch_ * W_);
    kept_[0].assign(max_batch_, not_kept);
    kept_[1].assign(max_batch_, not_kept);
    params_[0] = backend_->template allocate<S>(P_);
    params_[1] = backend_->template allocate<S>(P_);
    const std::size_t in_bytes = upload_layout::of<S>(max_batch_, obs_, max_envs_, false, D_).bytes;
    const std::size_t out_bytes = download_layout::of<S>(max_batch_, A_, W_).bytes;
    // Two of each host-side buffer and of the device input: batch k+1 uploads while batch k
    // computes. One device output suffices: steps and downloads are ordered on one stream.
    for (std::size_t io = 0; io < 2; ++io) {
      in_dev_[io] = backend_->template allocate<unsigned char>(in_bytes);
      in_host_[io] = pinned_buffer<unsigned char>(in_bytes);
      std::memset(in_host_[io].data(), 0, in_bytes);  // padded rows read finite zeros
      out_host_[io] = pinned_buffer<unsigned char>(out_bytes);
      SEEDRL_CUDA_CHECK(cudaEventCreateWithFlags(&uploaded_[io], cudaEventDisableTiming));
      SEEDRL_CUDA_CHECK(cudaEventCreateWithFlags(&done_[io], cudaEventDisableTiming));
    }
    SEEDRL_CUDA_CHECK(cudaEventCreateWithFlags(&params_copied_, cudaEventDisableTiming));
    // Non-blocking: the uploads wait for nothing on the legacy default stream.
    SEEDRL_CUDA_CHECK(cudaStreamCreateWithFlags(&upload_, cudaStreamNonBlocking));
    const char* env = std::getenv("SEEDRL_CUDA_GRAPHS");
    graphs_enabled_ = !(env != nullptr && std::string(env) == "0");
    graphs_.resize(graph_max_rows + 1);
    out_dev_ = backend_->template allocate<unsigned char>(out_bytes);
    params_host_ = pinned_buffer<S>(P_);
    pending_.reserve(max_envs_);
    queued_.assign(max_envs_, 0);
    step_->reserve(max_batch_);
    std::copy(params.begin(), params.end(), params_host_.data());
    set_parameters_from_staging();
    backend_->synchronize();
  }

  ~inference_engine_device_impl() override {
    (void)cudaSetDevice(device_);  // free on the right device; a destructor cannot report
    // A batch may still be in flight (the loop stopped after a failure): nothing may still
    // read or write the buffers freed below.
    if (upload_ != nullptr)
      (void)cudaStreamSynchronize(upload_);
    if (backend_)
      (void)cudaStreamSynchronize(backend_->stream());
    for (auto& g : graphs_) {
      for (auto& per_params : g.exec) {
        for (auto& per_io : per_params) {
          for (auto& e : per_io) {
            if (e != nullptr)
              (void)cudaGraphExecDestroy(e);
          }
        }
      }
    }
    for (std::size_t io = 0; io < 2; ++io) {
      if (uploaded_[io] != nullptr)
        (void)cudaEventDestroy(uploaded_[io]);
      if (done_[io] != nullptr)
        (void)cudaEventDestroy(done_[io]);
    }
    if (params_copied_ != nullptr)
      (void)cudaEventDestroy(params_copied_);
    if (upload_ != nullptr)
      (void)cudaStreamDestroy(upload_);
    step_.reset();
    backend_.reset();
  }

  inference_engine_device_impl(const inference_engine_device_impl&) = delete;
  inference_engine_device_impl& operator=(const inference_engine_device_impl&) = delete;

  std::size_t state_width() const override { return W_; }
  std::size_t num_parameters() const override { return P_; }

  void reset_state(std::size_t slot) override {
    if (queued_[slot] == 0) {
      queued_[slot] = 1;
      pending_.push_back(static_cast<std::uint32_t>(slot));
    }
  }

  void infer(std::span<const std::uint32_t> slots, const agent_step_input<S>& in,
             const agent_step_output<S>& out) override {
    require_idle("infer");
    begin(slots, in, out);
    finish();
  }

  void infer_and_sample(std::span<const std::uint32_t> slots, const agent_step_input<S>& in,
                        const agent_step_output<S>& out, std::uint64_t seed, std::uint64_t counter,
                        std::span<std::int32_t> actions, std::span<S> log_probs) override {
    require_idle("infer_and_sample");
    begin_and_sample(slots, in, out, seed, counter, actions, log_probs);
    finish();
  }

  void begin(std::span<const std::uint32_t> slots, const agent_step_input<S>& in,
             const agent_step_output<S>& out) override {
    submit(slots, in, out, nullptr);
  }

  void begin_and_sample(std::span<const std::uint32_t> slots, const agent_step_input<S>& in,
                        const agent_step_output<S>& out, std::uint64_t seed, std::uint64_t counter,
                        std::span<std::int32_t> actions, std::span<S> log_probs) override {
    if (actions.size() != slots.size() || log_probs.size() != slots.size())
      throw std::invalid_argument(std::string(who) +
                                  "::infer_and_sample: actions and log_probs must hold B values");
    if (D_ > 0)  // the device samples categorical policies; the loop samples Gaussians itself
      throw std::logic_error(std::string(who) +
                             "::infer_and_sample: the network's actions are continuous; "
                             "infer() and sample on the host");
    const sample_request r{seed, counter, actions, log_probs};
    submit(slots, in, out, &r);
  }

  /// Waits for the oldest batch in flight and hands over its outputs.
  void finish() override {
    if (in_flight_ == 0)
      throw std::logic_error(std::string(who) + "::finish: no batch in flight");
    SEEDRL_CUDA_CHECK(cudaSetDevice(device_));
    const flight& f = flights_[oldest_];
    const cudaError_t e = cudaEventSynchronize(done_[f.io]);
    if (e != cudaSuccess) {
      throw cuda_error(std::string("seedrl: ") + who +
                       ": the inference step failed on the device (one of its kernels: "
                       "zero_rows, widen, gather_rows, the torso's convolutions or GEMMs, "
                       "lstm_step_fused_kernel or lstm_pointwise_kernel, the heads' GEMMs, "
                       "scatter_rows, counter_sample): " +
                       cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
    }
    oldest_ = 1 - oldest_;
    --in_flight_;
    last_io_ = f.io;
    last_before_ = f.o.before;
    const std::size_t B = f.B;
    const unsigned char* oh = out_host_[f.io].data();
    std::memcpy(f.out.values.data(), oh + f.o.values, B * sizeof(S));
    if (!f.sampled) {
      std::memcpy(f.out.logits.data(), oh + f.o.logits, B * A_ * sizeof(S));
    } else {
      std::memcpy(f.actions.data(), oh + f.o.actions, B * sizeof(std::int32_t));
      std::memcpy(f.log_probs.data(), oh + f.o.log_probs, B * sizeof(S));
    }
  }

  /// A row the last step's keep_state did not ask for has no state here: an empty span.
  std::span<const S> state_before(std::size_t row) const override {
    const std::size_t k = kept_[last_io_][row];
    if (k == not_kept)
      return {};
    return {reinterpret_cast<const S*>(out_host_[last_io_].data() + last_before_) + k * W_, W_};
  }

  std::span<S> parameter_staging() override {
    // The previous set's upload may still read the pinned source (it is queued behind the
    // steps in flight); the caller is about to overwrite it.
    SEEDRL_CUDA_CHECK(cudaSetDevice(device_));
    SEEDRL_CUDA_CHECK(cudaEventSynchronize(params_copied_));
    return {params_host_.data(), P_};
  }

  std::size_t captured_graphs() const override {
    std::size_t n = 0;
    for (const auto& g : graphs_)
      for (const auto& per_params : g.exec)
        for (const auto& per_io : per_params)
          for (const auto e : per_io)
            n += e != nullptr ? 1 : 0;
    return n;
  }

  void set_parameters_from_staging() override {
    SEEDRL_CUDA_CHECK(cudaSetDevice(device_));
    const std::size_t next = 1 - current_;
    // Ordered on the compute stream after every step already begun and before the next: no
    // step reads a half-written set, and a batch in flight keeps the set it began with (it
    // uses the other buffer, or ran before the copy in stream order). The event tells
    // parameter_staging() when the pinned source is free again; the host does not wait here,
    // so a batch in flight keeps computing.
    SEEDRL_CUDA_CHECK(cudaMemcpyAsync(params_[next].data(), params_host_.data(), P_ * sizeof(S),
                                      cudaMemcpyHostToDevice, backend_->stream()));
    SEEDRL_CUDA_CHECK(cudaEventRecord(params_copied_, backend_->stream()));
    current_ = next;
  }

  bool update_on_device(const std::function<bool(S*, void*)>& copy) override {
    SEEDRL_CUDA_CHECK(cudaSetDevice(device_));
    const std::size_t next = 1 - current_;
    // The copy is enqueued on the engine's stream: ordered after every step already given and
    // before the next, which reads the new set.
    if (!copy(params_[next].data(), static_cast<void*>(backend_->stream())))
      return false;
    current_ = next;
    return true;
  }

 private:
  /// A bucket's captured steps, one per parameter buffer, device input buffer (a graph bakes in
  /// the addresses it reads) and observation type (S, or uint8 frames widened by the step:
  /// another kernel sequence).
  struct graph_entry {
    cudaGraphExec_t exec[2][2][2] = {};  ///< [parameter buffer][input buffer][frames]
    bool warmed[2] = {false, false};     ///< ran plain once: its lazily made objects exist
    bool failed[2] = {false, false};     ///< capture failed: plain launches from now on
  };

  /// The step as the bucket's graph for the parameter buffer in use: captured at the second use,
  /// replayed after; plain launches when capture fails. The warm-up and the capture run with
  /// the backend's convolutions pinned: the cuDNN objects and workspaces the graph bakes in
  /// (made by the warm-up, found again by the capture) are never dropped from its shape cache
  /// nor reallocated while the engine lives, whatever other batch sizes run plain meanwhile.
  void graph_step(const agent_step_operands<S>& op, graph_entry& g, std::size_t io) {
    const std::size_t frames = op.observations_u8 != nullptr ? 1 : 0;
    cudaGraphExec_t& exec = g.exec[current_][io][frames];
    if (exec == nullptr && g.warmed[frames] && !g.failed[frames]) {
      const auto pin = backend_->pin_convolutions();
      g.failed[frames] = !capture(op, exec);
    }
    if (exec == nullptr) {
      const auto pin = backend_->pin_convolutions();
      step_->step(op);
      g.warmed[frames] = true;
      return;
    }
    SEEDRL_CUDA_CHECK(cudaGraphLaunch(exec, backend_->stream()));
  }

  /// Captures one step on the engine's stream into `exec`; false (and nothing launched) when
  /// the step cannot be captured.
  bool capture(const agent_step_operands<S>& op, cudaGraphExec_t& exec) {
    const cudaStream_t s = backend_->stream();
    if (cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    bool ok = true;
    try {
      step_->step(op);
    } catch (const std::exception&) {
      ok = false;
    }
    cudaGraph_t graph = nullptr;
    ok = cudaStreamEndCapture(s, &graph) == cudaSuccess && ok && graph != nullptr;
    if (ok)
      ok = cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess;
    if (graph != nullptr)
      (void)cudaGraphDestroy(graph);
    if (!ok)
      exec = nullptr;
    (void)cudaGetLastError();  // a failed capture's error is not the next launch's
    return ok;
  }

  struct sample_request {
    std::uint64_t seed, counter;
    std::span<std::int32_t> actions;
    std::span<S> log_probs;
  };

  /// A batch begun and not finished: where its outputs sit and where they go.
  struct flight {
    std::size_t io = 0;  ///< its host buffers and device input
    std::size_t B = 0;
    download_layout o;
    agent_step_output<S> out;
    bool sampled = false;
    std::span<std::int32_t> actions;
    std::span<S> log_probs;
  };

  void require_idle(const char* call) const {
    if (in_flight_ != 0)
      throw std::logic_error(std::string(who) + "::" + call + " with a batch in flight");
  }

  /// Begins one batch: the inputs packed into this batch's pinned buffer go up in one copy on
  /// the upload stream (overlapping the batch in flight), then on the compute stream, once that
  /// copy is done: the queued resets, the step, sampling when asked, the kept rows' states
  /// compacted, and one download into this batch's pinned output. Returns without waiting;
  /// finish() waits.
  void submit(std::span<const std::uint32_t> slots, const agent_step_input<S>& in,
              const agent_step_output<S>& out, const sample_request* sample) {
    const std::size_t B = slots.size();
    check_batch(slots, in, out);
    if (in_flight_ == 2)
      throw std::logic_error(std::string(who) + "::begin: two batches in flight already");
    SEEDRL_CUDA_CHECK(cudaSetDevice(device_));  // the loop's thread, not the constructor's
    // This batch's buffers were last used by the batch two before it, finished by now (at
    // most two in flight, finished in order): the host may overwrite them.
    const std::size_t io = next_io_;
    const std::size_t n_reset = pending_.size();
    const bool frames = !in.observations_u8.empty();
    // As a graph, the step runs on a bucket's rows: every offset below depends on them only.
    const std::size_t bucket = graphs_enabled_ ? graph_bucket(B, max_batch_) : 0;
    const std::size_t rows = bucket > 0 ? bucket : B;
    const auto l = upload_layout::of<S>(rows, obs_, n_reset, frames, D_);
    unsigned char* h = in_host_[io].data();
    if (frames)
      std::memcpy(h + l.obs, in.observations_u8.data(), B * obs_);
    else
      std::memcpy(h + l.obs, in.observations.data(), B * obs_ * sizeof(S));
    std::memcpy(h + l.rewards, in.rewards.data(), B * sizeof(S));
    std::memcpy(h + l.slots, slots.data(), B * sizeof(std::uint32_t));
    std::memcpy(h + l.prev, in.prev_actions.data(), B * sizeof(std::int32_t));
    if (!in.prev_continuous_actions.empty())
      std::memcpy(h + l.prev_continuous, in.prev_continuous_actions.data(), B * D_ * sizeof(S));
    else if (D_ > 0)  // a network that does not read them: finite zeros all the same
      std::memset(h + l.prev_continuous, 0, B * D_ * sizeof(S));
    std::memcpy(h + l.resets, in.dones.data(), B);
    const std::size_t obs_bytes = obs_ * (frames ? 1 : sizeof(S));
    if (rows > B)  // padded rows read finite zeros, whatever the last batch left there
      std::memset(h + l.obs + B * obs_bytes, 0, (rows - B) * obs_bytes);
    for (std::size_t r = B; r < rows; ++r) {  // padding: the scratch row, from zeros
      const auto scratch = static_cast<std::uint32_t>(max_envs_);
      std::memcpy(h + l.slots + r * sizeof(std::uint32_t), &scratch, sizeof(scratch));
      h[l.resets + r] = 1;
    }
    // The rows whose states come back, in row order (all of them when keep_state is empty);
    // kept[r] is where row r's state lands in this batch's download.
    std::vector<std::size_t>& kept = kept_[io];
    std::size_t n_keep = 0;
    for (std::size_t r = 0; r < B; ++r) {
      if (!in.keep_state.empty() && in.keep_state[r] == 0) {
        kept[r] = not_kept;
        continue;
      }
      const auto row = static_cast<std::uint32_t>(r);
      std::memcpy(h + l.keep + n_keep * sizeof(std::uint32_t), &row, sizeof(row));
      kept[r] = n_keep++;
    }
    if (n_reset > 0)
      std::memcpy(h + l.reset_slots, pending_.data(), n_reset * sizeof(std::uint32_t));
    const cudaStream_t stream = backend_->stream();
    unsigned char* d = in_dev_[io].data();
    SEEDRL_CUDA_CHECK(cudaMemcpyAsync(d, h, l.bytes, cudaMemcpyHostToDevice, upload_));
    SEEDRL_CUDA_CHECK(cudaEventRecord(uploaded_[io], upload_));
    // Outside any graph: the captured part is the step alone, which reads d.
    SEEDRL_CUDA_CHECK(cudaStreamWaitEvent(stream, uploaded_[io], 0));
    if (n_reset > 0 && W_ > 0) {
      backend_->for_each(
          n_reset * W_,
          zero_rows_kernel<S>{reinterpret_cast<const std::uint32_t*>(d + l.reset_slots), W_,
                              table_.data()});
    }
    for (const auto s : pending_)
      queued_[s] = 0;
    pending_.clear();
    const auto o = download_layout::of<S>(rows, A_, W_);
    unsigned char* od = out_dev_.data();
    agent_step_operands<S> op;
    op.B = rows;
    op.slots = reinterpret_cast<const std::uint32_t*>(d + l.slots);
    // uint8 frames go up as bytes; the step widens them on the device before its first layer.
    if (frames)
      op.observations_u8 = reinterpret_cast<const std::uint8_t*>(d + l.obs);
    else
      op.observations = reinterpret_cast<const S*>(d + l.obs);
    op.rewards = reinterpret_cast<const S*>(d + l.rewards);
    op.resets = reinterpret_cast<const std::uint8_t*>(d + l.resets);
    op.prev_actions = reinterpret_cast<const std::int32_t*>(d + l.prev);
    if (D_ > 0)
      op.prev_continuous_actions = reinterpret_cast<const S*>(d + l.prev_continuous);
    op.params = params_[current_].data();
    op.table = table_.data();
    op.logits = reinterpret_cast<S*>(od + o.logits);
    op.values = reinterpret_cast<S*>(od + o.values);
    op.before = before_.data();
    if (bucket > 0)
      graph_step(op, graphs_[bucket], io);
    else
      step_->step(op);
    // Only the kept rows' states travel back, packed in row order behind the small outputs.
    if (n_keep > 0 && W_ > 0) {
      backend_->for_each(n_keep * W_,
                         seedrl::detail::gather_rows_kernel<S>{
                             before_.data(), reinterpret_cast<const std::uint32_t*>(d + l.keep), W_,
                             reinterpret_cast<S*>(od + o.before)});
    }
    // One copy back: logits to the kept states, or (sampled here) values to the kept states. On
    // the compute stream: the next batch's step, which overwrites out_dev_, comes after it.
    std::size_t first = o.logits;
    const std::size_t last = o.template end<S>(n_keep, W_);
    if (sample != nullptr) {
      backend_->for_each(B, counter_sample_kernel<S>{
                                op.logits, static_cast<int>(A_), sample->seed, sample->counter,
                                reinterpret_cast<std::int32_t*>(od + o.actions),
                                reinterpret_cast<S*>(od + o.log_probs)});
      first = o.values;
    }
    SEEDRL_CUDA_CHECK(cudaMemcpyAsync(out_host_[io].data() + first, od + first, last - first,
                                      cudaMemcpyDeviceToHost, stream));
    SEEDRL_CUDA_CHECK(cudaEventRecord(done_[io], stream));
    flight& f = flights_[(oldest_ + in_flight_) % 2];
    f.io = io;
    f.B = B;
    f.o = o;
    f.out = out;
    f.sampled = sample != nullptr;
    f.actions = sample != nullptr ? sample->actions : std::span<std::int32_t>();
    f.log_probs = sample != nullptr ? sample->log_probs : std::span<S>();
    ++in_flight_;
    next_io_ = 1 - io;
  }

  void check_batch(std::span<const std::uint32_t> slots, const agent_step_input<S>& in,
                   const agent_step_output<S>& out) const {
    const std::size_t B = slots.size();
    const auto fail = [&](const std::string& what) {
      throw std::invalid_argument(std::string(who) + "::infer: " + what);
    };
    if (B > max_batch_)
      fail("a batch of " + std::to_string(B) + " rows, built for at most " +
           std::to_string(max_batch_));
    for (const auto s : slots) {
      if (s >= max_envs_)
        fail("slot " + std::to_string(s) + " is outside [0, " + std::to_string(max_envs_) + ")");
    }
    const bool obs_ok = in.observations_u8.empty()
                            ? in.observations.size() == B * obs_
                            : in.observations.empty() && in.observations_u8.size() == B * obs_;
    if (!obs_ok || in.rewards.size() != B || in.dones.size() != B || in.prev_actions.size() != B ||
        (!in.keep_state.empty() && in.keep_state.size() != B) || out.logits.size() != B * A_ ||
        out.values.size() != B)
      fail("the inputs or outputs do not hold B = " + std::to_string(B) + " rows");
    if (!in.prev_continuous_actions.empty() && in.prev_continuous_actions.size() != B * D_)
      fail("prev_continuous_actions holds " + std::to_string(in.prev_continuous_actions.size()) +
           " values, expected B * D = " + std::to_string(B * D_) +
           (D_ == 0 ? " (the network's actions are discrete)" : ""));
  }

  /// Refuses a configuration whose buffers do not fit in the device's free memory, naming the
  /// figures (the torso's own work buffers come on top; they are a few activations per row).
  void check_memory() const {
    std::size_t free_bytes = 0, total = 0;
    SEEDRL_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total));
    const std::size_t in_bytes = upload_layout::of<S>(max_batch_, obs_, max_envs_, false, D_).bytes;
    const std::size_t need =
        ((max_envs_ + 1) * W_ + 2 * P_ + max_batch_ * (step_->work_elements_per_row() + W_)) *
            sizeof(S) +
        download_layout::of<S>(max_batch_, A_, W_).bytes + 2 * in_bytes;
    if (need > free_bytes) {
      throw std::runtime_error(std::string("seedrl: ") + who + ": the state table of " +
                               std::to_string(max_envs_) + " env slots (" + std::to_string(W_) +
                               " values each), 2 parameter sets and the buffers "
                               "of a batch of " +
                               std::to_string(max_batch_) + " need " + std::to_string(need) +
                               " bytes of GPU memory, and device " + std::to_string(device_) +
                               " has " + std::to_string(free_bytes) + " free (of " +
                               std::to_string(total) +
                               "); use fewer env slots (--max-envs) or a smaller batch");
    }
  }

  int device_ = 0;
  std::size_t max_envs_ = 0, max_batch_ = 0, A_ = 0, D_ = 0, W_ = 0, obs_ = 0, P_ = 0;
  std::unique_ptr<cuda_backend> backend_;  ///< behind a pointer: the step keeps its address
  std::unique_ptr<step_type> step_;
  cuda_backend::buffer<S> table_;
  cuda_backend::buffer<S> params_[2];
  std::size_t current_ = 0;                        ///< the parameter set in use
  cuda_backend::buffer<unsigned char> in_dev_[2];  ///< upload_layout, one per batch in flight
  cuda_backend::buffer<unsigned char> out_dev_;    ///< download_layout
  pinned_buffer<unsigned char> in_host_[2], out_host_[2];
  cudaStream_t upload_ = nullptr;        ///< the inputs' copies; the steps run on backend_'s
  cudaEvent_t uploaded_[2] = {};         ///< batch io's inputs are on the device
  cudaEvent_t done_[2] = {};             ///< batch io's outputs are in out_host_[io]
  cudaEvent_t params_copied_ = nullptr;  ///< params_host_ may be overwritten
  flight flights_[2];                    ///< in flight, oldest first from oldest_
  std::size_t oldest_ = 0, in_flight_ = 0, next_io_ = 0;
  std::size_t last_io_ = 0;  ///< the last finished batch's buffers (state_before)
  pinned_buffer<S> params_host_;
  std::vector<std::uint32_t> pending_;  ///< queued reset_state slots
  std::vector<std::uint8_t> queued_;    ///< [max_envs] 1 while a slot is in pending_
  cuda_backend::buffer<S> before_;      ///< [max_batch, W] each row's state before the step
  static constexpr std::size_t not_kept = static_cast<std::size_t>(-1);
  /// [input buffer][max_batch] row -> its state's index in that batch's download
  std::vector<std::size_t> kept_[2];
  std::size_t last_before_ = 0;  ///< where its kept states sit in out_host_[last_io_]
  bool graphs_enabled_ = false;
  std::vector<graph_entry> graphs_;  ///< indexed by bucket rows
};

}  // namespace detail

template <std::floating_point S, class Recipe>
std::unique_ptr<typename inference_engine<S, Recipe>::device_type>
inference_engine<S, Recipe>::make_device(int device, const shape_type& shape,
                                         std::span<const S> params,
                                         const inference_engine_config& config) {
  return std::make_unique<detail::inference_engine_device_impl<S, Recipe>>(device, shape, params,
                                                                           config);
}

}  // namespace seedrl::cuda
