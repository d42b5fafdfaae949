#pragma once
/// \file
/// `nccl_reducer`: the gradient_reducer of GPU learner ranks, over NCCL (link seedrl::nccl).
/// Each rank drives one CUDA device; the ranks share a communicator made from one
/// `ncclUniqueId` that rank 0 draws (`new_nccl_id`) and the others receive, over MPI (from
/// `mpi_reducer`, `nccl_id_over`) or over the MASTER_ADDR bootstrap
/// (distributed/tcp_bootstrap.hpp). A trainer whose gradient lives on the device averages it
/// there (`mean_on_device`: one in-place ncclAllReduce with ncclAvg on the fused buffer); host
/// arrays are staged through the device.
///
/// Nothing waits forever: the communicator is non-blocking, and every wait polls NCCL's error
/// state, so a rank that dies (its peers see ncclRemoteError) or never arrives ends the others
/// with an error that says so, within `nccl_reducer_config::timeout`. With a `control` reducer
/// (the mpi_reducer the ranks met on) the small gathers and abort_all go through it.
///
/// Host code only (the CUDA runtime and NCCL's C API): any C++ compiler builds it.

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "seedrl/distributed/gradient_reducer.hpp"

namespace seedrl::distributed {

/// The bytes of an ncclUniqueId, as the bootstraps carry them.
using nccl_id_bytes = std::array<std::byte, NCCL_UNIQUE_ID_BYTES>;

namespace detail {

inline void nccl_check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess && r != ncclInProgress)
    throw std::runtime_error(std::string("seedrl::nccl_reducer: ") + what + " failed: " +
                             ncclGetErrorString(r) + " (" + ncclGetLastError(nullptr) + ")");
}

inline void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("seedrl::nccl_reducer: ") + what +
                             " failed: " + cudaGetErrorString(e));
}

template <class T>
ncclDataType_t nccl_type();
template <>
inline ncclDataType_t nccl_type<float>() {
  return ncclFloat32;
}
template <>
inline ncclDataType_t nccl_type<double>() {
  return ncclFloat64;
}
template <>
inline ncclDataType_t nccl_type<std::uint64_t>() {
  return ncclUint64;
}

}  // namespace detail

/// A fresh unique id (rank 0 draws it; the others must receive the same bytes).
inline nccl_id_bytes new_nccl_id() {
  ncclUniqueId id;
  detail::nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  nccl_id_bytes bytes{};
  std::memcpy(bytes.data(), &id, bytes.size());
  return bytes;
}

/// Rank 0's id on every rank, carried by `via` (e.g. the mpi_reducer the ranks met on): each
/// rank contributes its bytes and takes rank 0's. Only rank 0's `mine` matters.
inline nccl_id_bytes nccl_id_over(gradient_reducer& via, const nccl_id_bytes& mine) {
  constexpr std::size_t words = (NCCL_UNIQUE_ID_BYTES + sizeof(double) - 1) / sizeof(double);
  std::array<double, words> packed{};  // bit patterns, copied as they are
  std::memcpy(packed.data(), mine.data(), mine.size());
  const std::vector<double> all = via.gather(std::span<const double>(packed));
  nccl_id_bytes id{};
  std::memcpy(id.data(), all.data(), id.size());  // rank 0's words come first
  return id;
}

/// How an nccl_reducer waits.
struct nccl_reducer_config {
  /// The longest a collective, or the communicator's creation, may take before the ranks are
  /// declared lost (a peer that died is noticed sooner: NCCL reports it).
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
};

/// See the file comment.
class nccl_reducer final : public gradient_reducer {
 public:
  /// Joins rank `rank` of `ranks` on CUDA device `device` with rank 0's id. Throws
  /// std::runtime_error naming the call when CUDA or NCCL fails, or when the other ranks do not
  /// arrive within the timeout.
  nccl_reducer(int rank, int ranks, const nccl_id_bytes& id, int device,
               std::shared_ptr<gradient_reducer> control = nullptr, nccl_reducer_config config = {})
      : rank_(rank), ranks_(ranks), device_(device), control_(std::move(control)), config_(config) {
    if (ranks < 1 || rank < 0 || rank >= ranks)
      throw std::invalid_argument("seedrl::nccl_reducer: rank " + std::to_string(rank) + " of " +
                                  std::to_string(ranks));
    detail::cuda_check(cudaSetDevice(device_), "cudaSetDevice");
    detail::cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
                       "cudaStreamCreate");
    ncclUniqueId uid;
    std::memcpy(&uid, id.data(), id.size());
    ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
    c.blocking = 0;  // creation and collectives return at once; wait() polls with a deadline
    try {
      detail::nccl_check(ncclCommInitRankConfig(&comm_, ranks_, uid, rank_, &c),
                         "ncclCommInitRankConfig");
      wait_for_nccl("creating the communicator (are all ranks started, with the same id?)");
    } catch (...) {
      release();
      throw;
    }
  }
  nccl_reducer(const nccl_reducer&) = delete;
  nccl_reducer& operator=(const nccl_reducer&) = delete;
  ~nccl_reducer() override { release(); }

  int rank() const override { return rank_; }
  int ranks() const override { return ranks_; }

  void mean(std::span<float> values) override { host_mean(values); }
  void mean(std::span<double> values) override { host_mean(values); }

  bool mean_on_device(float* device_values, std::size_t n) override {
    device_mean(device_values, n);
    return true;
  }
  bool mean_on_device(double* device_values, std::size_t n) override {
    device_mean(device_values, n);
    return true;
  }

  std::vector<std::uint64_t> gather(std::uint64_t value) override {
    if (control_)
      return control_->gather(value);
    std::vector<std::uint64_t> all(static_cast<std::size_t>(ranks_));
    all_gather(std::span<const std::uint64_t>(&value, 1), std::span<std::uint64_t>(all));
    return all;
  }

  std::vector<double> gather(std::span<const double> values) override {
    if (control_)
      return control_->gather(values);
    std::vector<double> all(values.size() * static_cast<std::size_t>(ranks_));
    all_gather(values, std::span<double>(all));
    return all;
  }

  [[noreturn]] void abort_all(int code) noexcept override {
    if (comm_ != nullptr)
      ncclCommAbort(comm_);  // the others' collectives fail (ncclRemoteError) and they stop
    if (control_)
      control_->abort_all(code);
    std::_Exit(code);
  }

  std::string describe() const override {
    return "NCCL, " + std::to_string(ranks_) + " ranks, this one on CUDA device " +
           std::to_string(device_);
  }

  /// The CUDA device this rank uses.
  int device() const noexcept { return device_; }

 private:
  template <class T>
  void device_mean(T* values, std::size_t n) {
    if (n == 0)
      return;
    detail::cuda_check(cudaSetDevice(device_), "cudaSetDevice");
    // The trainer's kernels that made the gradient ran on its own stream: they finish first.
    detail::cuda_check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    detail::nccl_check(
        ncclAllReduce(values, values, n, detail::nccl_type<T>(), ncclAvg, comm_, stream_),
        "ncclAllReduce");
    wait("the gradient all-reduce");
  }

  template <class T>
  void host_mean(std::span<T> values) {
    if (values.empty())
      return;
    detail::cuda_check(cudaSetDevice(device_), "cudaSetDevice");  // the stream's device
    T* d = staging<T>(values.size());
    copy(d, values.data(), values.size_bytes(), cudaMemcpyHostToDevice);
    detail::nccl_check(
        ncclAllReduce(d, d, values.size(), detail::nccl_type<T>(), ncclAvg, comm_, stream_),
        "ncclAllReduce");
    copy(values.data(), d, values.size_bytes(), cudaMemcpyDeviceToHost);
    wait("an all-reduce");
  }

  template <class T>
  void all_gather(std::span<const T> mine, std::span<T> all) {
    detail::cuda_check(cudaSetDevice(device_), "cudaSetDevice");
    T* d = staging<T>(all.size());
    copy(d + static_cast<std::size_t>(rank_) * mine.size(), mine.data(), mine.size_bytes(),
         cudaMemcpyHostToDevice);
    detail::nccl_check(ncclAllGather(d + static_cast<std::size_t>(rank_) * mine.size(), d,
                                     mine.size(), detail::nccl_type<T>(), comm_, stream_),
                       "ncclAllGather");
    copy(all.data(), d, all.size_bytes(), cudaMemcpyDeviceToHost);
    wait("a gather");
  }

  void copy(void* to, const void* from, std::size_t bytes, cudaMemcpyKind kind) {
    wait_for_nccl("an earlier call");  // a non-blocking communicator may still be enqueuing
    detail::cuda_check(cudaMemcpyAsync(to, from, bytes, kind, stream_), "cudaMemcpyAsync");
  }

  /// Device memory for `n` values of T (grown, kept).
  template <class T>
  T* staging(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    if (bytes > staging_bytes_) {
      detail::cuda_check(cudaSetDevice(device_), "cudaSetDevice");
      if (staging_ != nullptr)
        cudaFree(staging_);
      staging_ = nullptr;
      staging_bytes_ = 0;
      detail::cuda_check(cudaMalloc(&staging_, bytes), "cudaMalloc");
      staging_bytes_ = bytes;
    }
    return static_cast<T*>(staging_);
  }

  /// Waits until NCCL has enqueued the last call (a non-blocking communicator may return
  /// ncclInProgress), checking its error state.
  void wait_for_nccl(const char* what) {
    const auto deadline = std::chrono::steady_clock::now() + config_.timeout;
    for (;;) {
      ncclResult_t state = ncclSuccess;
      detail::nccl_check(ncclCommGetAsyncError(comm_, &state), "ncclCommGetAsyncError");
      if (state == ncclSuccess)
        return;
      if (state != ncclInProgress)
        fail(what, std::string(ncclGetErrorString(state)) +
                       (state == ncclRemoteError ? " (another rank failed or went away)" : ""));
      if (std::chrono::steady_clock::now() > deadline)
        fail(what, "not done after " + std::to_string(config_.timeout.count()) + " ms");
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  /// Waits for the stream's work, polling NCCL's error state so that a dead peer ends the wait.
  void wait(const char* what) {
    wait_for_nccl(what);
    const auto deadline = std::chrono::steady_clock::now() + config_.timeout;
    for (;;) {
      const cudaError_t e = cudaStreamQuery(stream_);
      if (e == cudaSuccess)
        return;
      if (e != cudaErrorNotReady)
        fail(what, cudaGetErrorString(e));
      ncclResult_t state = ncclSuccess;
      ncclCommGetAsyncError(comm_, &state);
      if (state != ncclSuccess && state != ncclInProgress)
        fail(what, std::string(ncclGetErrorString(state)) +
                       (state == ncclRemoteError ? " (another rank failed or went away)" : ""));
      if (std::chrono::steady_clock::now() > deadline)
        fail(what, "not done after " + std::to_string(config_.timeout.count()) +
                       " ms: a rank stopped taking part");
      std::this_thread::yield();
    }
  }

  [[noreturn]] void fail(const char* what, const std::string& why) {
    if (comm_ != nullptr) {
      ncclCommAbort(comm_);  // frees the communicator: the others' waits fail too
      comm_ = nullptr;
    }
    throw std::runtime_error("seedrl::nccl_reducer: rank " + std::to_string(rank_) + " of " +
                             std::to_string(ranks_) + ": " + what + ": " + why);
  }

  void release() noexcept {
    cudaSetDevice(device_);
    if (comm_ != nullptr) {
      // Finalize flushes and needs every rank; a destructor must not wait on others.
      ncclCommAbort(comm_);
      comm_ = nullptr;
    }
    if (staging_ != nullptr)
      cudaFree(staging_);
    staging_ = nullptr;
    if (stream_ != nullptr)
      cudaStreamDestroy(stream_);
    stream_ = nullptr;
  }

  int rank_;
  int ranks_;
  int device_;
  std::shared_ptr<gradient_reducer> control_;
  nccl_reducer_config config_;
  cudaStream_t stream_ = nullptr;
  ncclComm_t comm_ = nullptr;
  void* staging_ = nullptr;
  std::size_t staging_bytes_ = 0;
};

}  // namespace seedrl::distributed
