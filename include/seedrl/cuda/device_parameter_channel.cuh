#pragma once
/// \file
/// `cuda::device_parameter_channel<S>`: the GPU trainer publishes parameters to the GPU
/// inference engine device to device, with no host round trip. Three device buffers rotated by
/// `triple_buffer_index` (seedrl/runtime/triple_buffer.hpp, whose logic the CPU tests check):
///   - trainer: `S* p = begin_write(stream)`, write the new set into p on `stream` (e.g. a D2D
///     copy of the trainer's parameters after its step), then `publish(stream)`: an event is
///     recorded on `stream` after the writes and the version goes up;
///   - engine: `copy_if_newer(dst, stream, &version)` between batches: when a newer set was
///     published, `stream` waits for that set's event, copies it into dst (the engine's spare
///     parameter buffer) and records that the copy is done; the engine then swaps buffers.
/// A set is never read before its writes finished (the event) and never written while a copy
/// from it may still run (begin_write makes the writer's stream wait for the last copy out of the
/// buffer it hands back). Host-only CUDA runtime calls (no kernel): plain C++ units may include
/// it, as memory.cuh. The writer and the engine must be on one device (the channel's events
/// are recorded on both sides' streams). The learner reaches it as a
/// `channel_parameter_source<device_parameter_channel<S>>` (seedrl/runtime/parameter_source.hpp),
/// which the GPU trainer's publish_on_device makes (seedrl/cuda/agent_trainer.hpp).

#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <cstdint>

#include "seedrl/cuda/error.cuh"
#include "seedrl/cuda/memory.cuh"
#include "seedrl/runtime/triple_buffer.hpp"

namespace seedrl::cuda {

/// See the file comment.
template <class S>
class device_parameter_channel {
 public:
  using scalar_type = S;
  using stream_type = cudaStream_t;

  /// Three buffers of `n` parameters on the current device.
  explicit device_parameter_channel(std::size_t n)
      : n_(n), buffers_{device_buffer<S>(n), device_buffer<S>(n), device_buffer<S>(n)} {
    for (std::size_t i = 0; i < 3; ++i) {
      SEEDRL_CUDA_CHECK(cudaEventCreateWithFlags(&written_[i], cudaEventDisableTiming));
      SEEDRL_CUDA_CHECK(cudaEventCreateWithFlags(&read_[i], cudaEventDisableTiming));
      // Nothing read yet: record on the legacy stream so the first begin_write does not wait.
      SEEDRL_CUDA_CHECK(cudaEventRecord(read_[i], nullptr));
    }
  }

  device_parameter_channel(const device_parameter_channel&) = delete;
  device_parameter_channel& operator=(const device_parameter_channel&) = delete;

  ~device_parameter_channel() {
    for (std::size_t i = 0; i < 3; ++i) {
      (void)cudaEventDestroy(written_[i]);  // a destructor cannot report
      (void)cudaEventDestroy(read_[i]);
    }
  }

  std::size_t size() const noexcept { return n_; }

  /// The buffer the writer fills next; `stream` (the writer's) first waits until no copy out of
  /// it is still running.
  S* begin_write(cudaStream_t stream) {
    const auto w = static_cast<std::size_t>(index_.write_index());
    SEEDRL_CUDA_CHECK(cudaStreamWaitEvent(stream, read_[w], 0));
    return buffers_[w].data();
  }

  /// The set written on `stream` since begin_write becomes the newest; returns its version.
  std::uint64_t publish(cudaStream_t stream) {
    const auto w = static_cast<std::size_t>(index_.write_index());
    SEEDRL_CUDA_CHECK(cudaEventRecord(written_[w], stream));
    return index_.publish();
  }

  /// When a set newer than `*version` was published: `stream` waits for its writes, copies it
  /// into `dst` (n device values), and `*version` becomes its version; returns whether it did.
  bool copy_if_newer(S* dst, cudaStream_t stream, std::uint64_t* version) {
    const auto a = index_.acquire();
    if (!a || a->version <= *version)
      return false;
    const auto r = static_cast<std::size_t>(a->index);
    SEEDRL_CUDA_CHECK(cudaStreamWaitEvent(stream, written_[r], 0));
    SEEDRL_CUDA_CHECK(
        cudaMemcpyAsync(dst, buffers_[r].data(), n_ * sizeof(S), cudaMemcpyDeviceToDevice, stream));
    SEEDRL_CUDA_CHECK(cudaEventRecord(read_[r], stream));
    *version = a->version;
    return true;
  }

  /// Sets published so far.
  std::uint64_t version() const { return index_.version(); }

 private:
  std::size_t n_;
  std::array<device_buffer<S>, 3> buffers_;
  std::array<cudaEvent_t, 3> written_{}, read_{};
  triple_buffer_index index_;
};

}  // namespace seedrl::cuda
