#pragma once
/// \file
/// `device_buffer<T>`: an owning array in device memory, with whole-array copies to and from
/// the host. Host-only code; kernels take its `data()`.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "seedrl/cuda/error.cuh"

namespace seedrl::cuda {

/// An array of `size()` trivially copyable T in device memory; moves, does not copy.
template <class T>
class device_buffer {
  static_assert(std::is_trivially_copyable_v<T>,
                "seedrl: device_buffer<T> holds trivially copyable T only (bytes are copied)");

 public:
  device_buffer() = default;

  /// Uninitialised storage for n elements.
  explicit device_buffer(std::size_t n) : size_(n) {
    if (n != 0) {
      SEEDRL_CUDA_CHECK(cudaMalloc(reinterpret_cast<void**>(&data_), n * sizeof(T)));
    }
  }

  /// A copy of `host` in device memory.
  explicit device_buffer(std::span<const T> host) : device_buffer(host.size()) { upload(host); }

  device_buffer(device_buffer&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  device_buffer& operator=(device_buffer&& o) noexcept {
    if (this != &o) {
      release();
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;
  ~device_buffer() { release(); }

  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  std::size_t size_bytes() const noexcept { return size_ * sizeof(T); }

  /// Copies `host` (exactly size() elements) to the device; synchronous.
  void upload(std::span<const T> host) {
    check_size(host.size(), "upload");
    if (size_ != 0) {
      SEEDRL_CUDA_CHECK(cudaMemcpy(data_, host.data(), size_bytes(), cudaMemcpyHostToDevice));
    }
  }

  /// Copies the whole array into `host` (exactly size() elements); synchronous, so it also
  /// reports errors of kernels that wrote it.
  void download(std::span<T> host) const {
    check_size(host.size(), "download");
    if (size_ != 0) {
      SEEDRL_CUDA_CHECK(cudaMemcpy(host.data(), data_, size_bytes(), cudaMemcpyDeviceToHost));
    }
  }

  /// The whole array as a new host vector.
  std::vector<T> to_host() const {
    std::vector<T> v(size_);
    download(v);
    return v;
  }

  /// Sets every byte to zero.
  void zero() {
    if (size_ != 0) {
      SEEDRL_CUDA_CHECK(cudaMemset(data_, 0, size_bytes()));
    }
  }

 private:
  void check_size(std::size_t n, const char* what) const {
    if (n != size_) {
      throw std::invalid_argument(std::string("seedrl::cuda::device_buffer::") + what + ": " +
                                  std::to_string(n) + " elements given, the buffer holds " +
                                  std::to_string(size_));
    }
  }
  void release() noexcept {
    if (data_ != nullptr) {
      (void)cudaFree(data_);  // a destructor cannot report; a failed free leaks at worst
      data_ = nullptr;
    }
  }

  T* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace seedrl::cuda
