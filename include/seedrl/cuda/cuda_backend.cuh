#pragma once
/// \file
/// `cuda::cuda_backend`: the GPU model of `seedrl::ComputeBackend`
/// (seedrl/backend/compute_backend.hpp; `host_backend` is the CPU reference). Everything runs in
/// order on one CUDA stream, with one cuBLAS handle bound to it:
///   - buffers are `device_buffer`s, zeroed on that stream when allocated;
///   - upload / copy / fill / for_each / gemm / vtrace are asynchronous; download,
///     sum_of_squares and sums wait for the stream, since they hand results to the host;
///   - GEMMs are cuBLAS S/DGEMM in CUBLAS_DEFAULT_MATH, which never uses TF32 tensor cores for
///     float (that takes CUBLAS_TF32_TENSOR_OP_MATH), so float products keep float's 24-bit
///     mantissa and match the CPU to float rounding of a differently ordered sum;
///   - sum_of_squares and sums are fixed-shape two-pass reductions in double without atomics:
///     the same input gives the same bits on every run;
///   - vtrace is the one-thread-per-column scan of cuda/vtrace.cuh;
///   - convolutions go through cuDNN (`cudnn_conv2d`, plain FMA math, one object per shape kept
///     for reuse: 32 shapes, the least recently used going first) when seedrl::cuda was built
///     with it (SEEDRL_HAS_CUDNN), else through the im2col + cuBLAS path host_backend runs
///     (backend/detail/conv2d_gemm.hpp);
///   - `pin_convolutions()` returns a scope inside which every convolution's objects and
///     workspaces (cuDNN's, or the GEMM path's scratch) are kept for the backend's lifetime,
///     never dropped or reallocated: a CUDA graph captured there replays their addresses.
/// Needs nvcc (it launches kernels); include it from .cu files only. Not thread-safe: one
/// backend per thread, or external locking. The device is the one current when the backend is
/// made; a caller on another thread must make the same device current first (cudaSetDevice).

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "seedrl/backend/compute_backend.hpp"
#include "seedrl/backend/detail/conv2d_gemm.hpp"
#include "seedrl/cuda/blas.cuh"
#if defined(SEEDRL_HAS_CUDNN)
#include "seedrl/cuda/cudnn_conv.cuh"
#endif
#include "seedrl/cuda/detail/launch.cuh"
#include "seedrl/cuda/error.cuh"
#include "seedrl/cuda/memory.cuh"
#include "seedrl/cuda/vtrace.cuh"
#include "seedrl/detail/pinnable_cache.hpp"
#include "seedrl/detail/vtrace_step.hpp"

namespace seedrl::cuda {

namespace detail {

/// Grid-stride loop calling f(i) for i in [0, n).
template <class F>
static __global__ void for_each_kernel(std::size_t n, F f) {
  for (std::size_t i = global_index(); i < n; i += grid_stride()) {
    f(i);
  }
}

template <class T>
static __global__ void fill_kernel(T* dst, std::size_t n, T value) {
  for (std::size_t i = global_index(); i < n; i += grid_stride()) {
    dst[i] = value;
  }
}

/// C[r][c] = beta == 0 ? 0 : beta * C[r][c] over an m x n block with row stride ldc: the GEMM
/// with k = 0 (or alpha = 0), done here so that beta = 0 ignores NaN as BLAS promises.
template <class S>
static __global__ void scale_matrix_kernel(int m, int n, S beta, S* c, int ldc) {
  const std::size_t total = static_cast<std::size_t>(m) * static_cast<std::size_t>(n);
  for (std::size_t i = global_index(); i < total; i += grid_stride()) {
    S& x = c[(i / static_cast<std::size_t>(n)) * static_cast<std::size_t>(ldc) +
             i % static_cast<std::size_t>(n)];
    x = beta == S(0) ? S(0) : beta * x;
  }
}

inline constexpr int sum_threads = 256;  ///< threads per block of both reduction passes
inline constexpr unsigned int sum_max_blocks = 1024;  ///< partial sums of the first pass, at most

/// First pass: block b writes the sum of x_i^2 (Square) or of x_i (in double) over its
/// grid-stride share. Each thread sums its elements in index order and the block combines them
/// with a fixed tree, so for a given n (which fixes the grid) the result never varies.
template <class S, bool Square>
static __global__ void __launch_bounds__(sum_threads)
    sum_partial_kernel(const S* x, std::size_t n, double* partial) {
  __shared__ double s[sum_threads];
  double acc = 0.0;
  for (std::size_t i = global_index(); i < n; i += grid_stride()) {
    const double d = static_cast<double>(x[i]);
    acc += Square ? d * d : d;
  }
  s[threadIdx.x] = acc;
  __syncthreads();
  for (int half = sum_threads / 2; half > 0; half /= 2) {
    if (static_cast<int>(threadIdx.x) < half) {
      s[threadIdx.x] += s[threadIdx.x + half];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    partial[blockIdx.x] = s[0];
  }
}

/// Second pass, one block: out[0] = sum of partial[0 .. count), in a fixed order. (A template
/// so that a translation unit that includes this header without calling it gets no unused
/// static function.)
template <class Acc>
static __global__ void __launch_bounds__(sum_threads)
    sum_partials_kernel(const Acc* partial, unsigned int count, Acc* out) {
  __shared__ Acc s[sum_threads];
  Acc acc = Acc(0);
  for (unsigned int i = threadIdx.x; i < count; i += sum_threads) {
    acc += partial[i];
  }
  s[threadIdx.x] = acc;
  __syncthreads();
  for (int half = sum_threads / 2; half > 0; half /= 2) {
    if (static_cast<int>(threadIdx.x) < half) {
      s[threadIdx.x] += s[threadIdx.x + half];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    out[0] = s[0];
  }
}

}  // namespace detail

/// Runs the ComputeBackend primitives on one CUDA stream; see the file comment.
class cuda_backend {
 public:
  template <class T>
  using buffer = device_buffer<T>;

  /// Buffers live in device memory: a reducer that reaches it (NCCL) averages gradients there.
  static constexpr bool device_memory = true;

  /// Creates and owns a stream (blocking with respect to the legacy default stream, so that
  /// device_buffer's synchronous copies elsewhere stay ordered with this backend's work).
  cuda_backend() : stream_(stream_holder::create()), blas_(stream_.get()) { set_math_mode(); }

  /// Works on `stream`, which the caller owns and keeps alive (nullptr: the legacy default
  /// stream).
  explicit cuda_backend(cudaStream_t stream) : stream_(stream, false), blas_(stream) {
    set_math_mode();
  }

  cuda_backend(const cuda_backend&) = delete;
  cuda_backend& operator=(const cuda_backend&) = delete;

  /// The stream everything runs on.
  cudaStream_t stream() const noexcept { return stream_.get(); }
  /// The cuBLAS handle, bound to stream().
  cublasHandle_t blas() const noexcept { return blas_.get(); }

  /// n elements of device memory, zeroed on the stream.
  template <class T>
  buffer<T> allocate(std::size_t n) const {
    buffer<T> b(n);
    if (n != 0) {
      SEEDRL_CUDA_CHECK(cudaMemsetAsync(b.data(), 0, b.size_bytes(), stream_.get()));
    }
    return b;
  }

  /// Copies host -> device on the stream. From pageable memory (std::vector and the like) the
  /// runtime has read `host` when this returns; from page-locked memory the copy is
  /// asynchronous, and `host` must stay unchanged until the next synchronisation.
  template <class T>
  void upload(std::span<const T> host, T* dst) const {
    if (!host.empty()) {
      SEEDRL_CUDA_CHECK(cudaMemcpyAsync(dst, host.data(), host.size_bytes(), cudaMemcpyHostToDevice,
                                        stream_.get()));
    }
  }
  template <class T>
  void upload(std::span<T> host, T* dst) const {
    upload(std::span<const T>(host), dst);
  }

  /// Copies device -> host after the work already on the stream, and waits for it.
  template <class T>
  void download(const T* src, std::span<T> host) const {
    if (!host.empty()) {
      SEEDRL_CUDA_CHECK(cudaMemcpyAsync(host.data(), src, host.size_bytes(), cudaMemcpyDeviceToHost,
                                        stream_.get()));
    }
    synchronize();
  }

  /// Copies n elements within device memory, on the stream.
  template <class T>
  void copy(const T* src, T* dst, std::size_t n) const {
    if (n != 0) {
      SEEDRL_CUDA_CHECK(
          cudaMemcpyAsync(dst, src, n * sizeof(T), cudaMemcpyDeviceToDevice, stream_.get()));
    }
  }

  /// dst[0 .. n) = value: a memset when value's bytes are all zero, else a kernel.
  template <class T>
  void fill(T* dst, std::size_t n, T value) const {
    static_assert(std::is_trivially_copyable_v<T>, "seedrl: fill takes trivially copyable T");
    if (n == 0) {
      return;
    }
    unsigned char bytes[sizeof(T)];
    std::memcpy(bytes, &value, sizeof(T));
    bool zero = true;
    for (const unsigned char b : bytes) {
      zero = zero && b == 0;
    }
    if (zero) {
      SEEDRL_CUDA_CHECK(cudaMemsetAsync(dst, 0, n * sizeof(T), stream_.get()));
      return;
    }
    detail::fill_kernel<T>
        <<<detail::elementwise_blocks(n), detail::elementwise_threads, 0, stream_.get()>>>(dst, n,
                                                                                           value);
    check_launch("seedrl::cuda::detail::fill_kernel");
  }

  /// f(i) for every i in [0, n) in a grid-stride kernel; `f` is copied to the device by value,
  /// so it must hold only values and device pointers.
  template <class F>
  void for_each(std::size_t n, const F& f) const {
    static_assert(std::is_trivially_copyable_v<F>,
                  "seedrl: a for_each body is copied to the GPU, so it must be trivially "
                  "copyable (values and device pointers only)");
    if (n == 0) {
      return;
    }
    detail::for_each_kernel<F>
        <<<detail::elementwise_blocks(n), detail::elementwise_threads, 0, stream_.get()>>>(n, f);
    check_launch("seedrl::cuda::detail::for_each_kernel");
  }

  /// Row-major C[m, n] = alpha op(A) op(B) + beta C (see compute_backend.hpp). As in
  /// host_backend: nothing happens when m or n is 0, and k = 0 or alpha = 0 only scales C by
  /// beta (beta = 0 writes zeros over whatever C held, NaN included).
  template <class S>
  void gemm(bool trans_a, bool trans_b, int m, int n, int k, S alpha, const S* a, int lda,
            const S* b, int ldb, S beta, S* c, int ldc) const {
    static_assert(std::is_same_v<S, float> || std::is_same_v<S, double>,
                  "seedrl: cuda_backend::gemm supports float and double");
    if (m <= 0 || n <= 0) {
      return;
    }
    if (k <= 0 || alpha == S(0)) {
      if (beta != S(1)) {
        const std::size_t total = static_cast<std::size_t>(m) * static_cast<std::size_t>(n);
        detail::scale_matrix_kernel<S>
            <<<detail::elementwise_blocks(total), detail::elementwise_threads, 0, stream_.get()>>>(
                m, n, beta, c, ldc);
        check_launch("seedrl::cuda::detail::scale_matrix_kernel");
      }
      return;
    }
    gemm_row_major(blas_.get(), trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }

  /// The sum of x_i^2 in double; deterministic (see the file comment). Waits for the stream.
  template <class S>
  double sum_of_squares(const S* x, std::size_t n) const {
    if (n == 0) {
      return 0.0;
    }
    reserve_partials(1);
    reduce<S, true>(x, n, 0);
    double result = 0.0;
    SEEDRL_CUDA_CHECK(cudaMemcpyAsync(&result, partials_.data() + detail::sum_max_blocks,
                                      sizeof(double), cudaMemcpyDeviceToHost, stream_.get()));
    synchronize();
    return result;
  }

  /// out[a] = the sum of x[a*n .. a*n+n), a < arrays, in double; deterministic (see the file
  /// comment). Waits for the stream.
  void sums(const double* x, std::size_t arrays, std::size_t n, std::span<double> out) const {
    if (out.size() < arrays) {
      throw std::invalid_argument("seedrl::cuda::cuda_backend::sums: " + std::to_string(arrays) +
                                  " sums into " + std::to_string(out.size()) + " places");
    }
    if (arrays == 0) {
      return;
    }
    if (n == 0) {
      std::fill_n(out.begin(), arrays, 0.0);
      return;
    }
    reserve_partials(arrays);
    for (std::size_t a = 0; a < arrays; ++a) {
      reduce<double, false>(x + a * n, n, a);
    }
    SEEDRL_CUDA_CHECK(cudaMemcpyAsync(out.data(), partials_.data() + detail::sum_max_blocks,
                                      arrays * sizeof(double), cudaMemcpyDeviceToHost,
                                      stream_.get()));
    synchronize();
  }

  /// V-trace (cuda/vtrace.cuh) on the stream; see compute_backend.hpp. Asynchronous.
  template <class S>
  void vtrace(const seedrl::detail::vtrace_coefficients<S>& k, const vtrace_operands<S>& op) const {
    cuda::vtrace(k, op, stream_.get());
  }

  /// y = conv(x, w) + bias on the stream; see compute_backend.hpp and the file comment.
  template <class S>
  void conv2d_forward(const conv2d_shape& shape, const S* x, const S* w, const S* bias,
                      S* y) const {
    seedrl::detail::check_conv2d_shape(shape, "seedrl::cuda::cuda_backend::conv2d_forward");
    if (shape.batch == 0) {
      return;
    }
#if defined(SEEDRL_HAS_CUDNN)
    convolution<S>(shape).forward(x, w, bias, y);
#else
    seedrl::detail::conv2d_gemm_forward(*this, conv_scratch<S>(shape),
                                        seedrl::detail::conv2d_gemm_geometry(shape), x, w, bias, y);
#endif
  }

  /// dw += d/dw, dbias += d/dbias, dx = d/dx (when not null), on the stream.
  template <class S>
  void conv2d_backward(const conv2d_shape& shape, const S* x, const S* w, const S* dy, S* dx, S* dw,
                       S* dbias) const {
    seedrl::detail::check_conv2d_shape(shape, "seedrl::cuda::cuda_backend::conv2d_backward");
    if (shape.batch == 0) {
      return;
    }
#if defined(SEEDRL_HAS_CUDNN)
    convolution<S>(shape).backward(x, w, dy, dx, dw, dbias);
#else
    seedrl::detail::conv2d_gemm_backward(*this, conv_scratch<S>(shape),
                                         seedrl::detail::conv2d_gemm_geometry(shape), x, w, dy, dx,
                                         dw, dbias);
#endif
  }

  /// Waits until everything given to the stream is done; reports errors of earlier kernels.
  void synchronize() const {
    SEEDRL_CUDA_CHECK(cudaStreamSynchronize(stream_.get()));
  }

  /// While one lives, the convolutions the backend runs are pinned; see pin_convolutions.
  class pin_scope {
   public:
    explicit pin_scope(const cuda_backend& b) noexcept : b_(&b) { ++b_->pinning_; }
    pin_scope(const pin_scope&) = delete;
    pin_scope& operator=(const pin_scope&) = delete;
    ~pin_scope() { --b_->pinning_; }

   private:
    const cuda_backend* b_;
  };

  /// Until the returned scope ends, every convolution run keeps its cuDNN descriptors,
  /// algorithms and workspace (without cuDNN: the GEMM path's scratch buffers) for the rest of
  /// the backend's life: not dropped from the shape cache, not reallocated, so a CUDA graph
  /// captured in the scope (or after a first run in it made them) can replay their addresses.
  [[nodiscard]] pin_scope pin_convolutions() const noexcept {
    return pin_scope(*this);
  }

 private:
  /// Room for the first pass's partial sums and, after them, `results` totals.
  void reserve_partials(std::size_t results) const {
    if (partials_.size() < detail::sum_max_blocks + results) {
      partials_ = device_buffer<double>(detail::sum_max_blocks + (results > 8 ? results : 8));
    }
  }

  /// Both passes over x[0, n) (squared with Square): the total lands in
  /// partials_[sum_max_blocks + slot]. Asynchronous.
  template <class S, bool Square>
  void reduce(const S* x, std::size_t n, std::size_t slot) const {
    const std::size_t wanted = (n + detail::sum_threads - 1) / detail::sum_threads;
    const unsigned int blocks = static_cast<unsigned int>(
        wanted < detail::sum_max_blocks ? wanted : detail::sum_max_blocks);
    double* partial = partials_.data();
    detail::sum_partial_kernel<S, Square>
        <<<blocks, detail::sum_threads, 0, stream_.get()>>>(x, n, partial);
    check_launch("seedrl::cuda::detail::sum_partial_kernel");
    detail::sum_partials_kernel<double><<<1, detail::sum_threads, 0, stream_.get()>>>(
        partial, blocks, partial + detail::sum_max_blocks + slot);
    check_launch("seedrl::cuda::detail::sum_partials_kernel");
  }

  /// The stream, destroyed (after its work finishes) when owned.
  class stream_holder {
   public:
    static stream_holder create() {
      cudaStream_t s = nullptr;
      SEEDRL_CUDA_CHECK(cudaStreamCreate(&s));
      return stream_holder(s, true);
    }
    stream_holder(cudaStream_t s, bool owned) noexcept : s_(s), owned_(owned) {}
    stream_holder(stream_holder&& o) noexcept : s_(o.s_), owned_(std::exchange(o.owned_, false)) {}
    stream_holder& operator=(stream_holder&&) = delete;
    ~stream_holder() {
      if (owned_) {
        (void)cudaStreamSynchronize(s_);  // a destructor cannot report errors
        (void)cudaStreamDestroy(s_);
      }
    }
    cudaStream_t get() const noexcept { return s_; }

   private:
    cudaStream_t s_;
    bool owned_;
  };

  void set_math_mode() {
    // The default already; set anyway so that a changed cuBLAS default cannot bring TF32 in.
    SEEDRL_CUDA_CHECK(cublasSetMathMode(blas_.get(), CUBLAS_DEFAULT_MATH));
  }

#if defined(SEEDRL_HAS_CUDNN)
  /// Most unpinned convolution shapes kept at once; past it the least recently used goes (a
  /// trainer uses a handful). Pinned ones (pin_convolutions) come on top.
  static constexpr std::size_t max_convolutions = 32;

  template <class S>
  using conv_cache = seedrl::detail::pinnable_cache<conv2d_shape, cudnn_conv2d<S>>;

  /// The cuDNN convolution of `shape` on this stream, made at its first use; pinned inside a
  /// pin_scope.
  template <class S>
  cudnn_conv2d<S>& convolution(const conv2d_shape& shape) const {
    auto& cache = [this]() -> conv_cache<S>& {
      if constexpr (std::is_same_v<S, float>) {
        return convs_float_;
      } else {
        static_assert(std::is_same_v<S, double>,
                      "seedrl: cuda_backend convolutions take float or double");
        return convs_double_;
      }
    }();
    // A dropped entry's workspace cudaFree waits for the work using it.
    return cache.get(shape, pinning_ > 0,
                     [&] { return std::make_unique<cudnn_conv2d<S>>(shape, stream_.get()); });
  }
#else
  /// The GEMM path's scratch, ready for `shape`. Once a convolution ran pinned, a graph may
  /// hold the scratch's addresses: growing then keeps the old buffers (retired) instead of
  /// freeing them.
  template <class S>
  seedrl::detail::conv2d_gemm_scratch<device_buffer<S>>& conv_scratch(
      const conv2d_shape& shape) const {
    const auto held = [this]() {
      if constexpr (std::is_same_v<S, float>) {
        return std::pair(&conv_float_, &retired_float_);
      } else {
        static_assert(std::is_same_v<S, double>,
                      "seedrl: cuda_backend convolutions take float or double");
        return std::pair(&conv_double_, &retired_double_);
      }
    }();
    auto* const scratch = held.first;
    auto* const retired = held.second;
    scratch_pinned_ = scratch_pinned_ || pinning_ > 0;
    if (scratch_pinned_) {
      // The sizes seedrl::detail::reserve_conv2d_gemm grows to.
      const seedrl::detail::conv2d_gemm_geometry g(shape);
      const auto retire = [&](device_buffer<S>& b, std::size_t n) {
        if (b.size() < n && b.size() != 0)
          retired->push_back(std::move(b));
      };
      retire(scratch->col, g.col_elements());
      retire(scratch->z, g.z_elements());
    }
    return *scratch;
  }
#endif

  // Destroyed in reverse order: scratch and cuDNN handles, the cuBLAS handle, then the stream.
  stream_holder stream_;
  blas_handle blas_;
  // Scratch grown on demand; mutable so that the primitives are const, as host_backend's are.
  mutable device_buffer<double> partials_;
  mutable int pinning_ = 0;  ///< live pin_scopes
#if defined(SEEDRL_HAS_CUDNN)
  mutable conv_cache<float> convs_float_{max_convolutions};
  mutable conv_cache<double> convs_double_{max_convolutions};
#else
  mutable seedrl::detail::conv2d_gemm_scratch<device_buffer<float>> conv_float_;
  mutable seedrl::detail::conv2d_gemm_scratch<device_buffer<double>> conv_double_;
  mutable bool scratch_pinned_ = false;  ///< a convolution ran pinned: never free scratch
  mutable std::vector<device_buffer<float>> retired_float_;
  mutable std::vector<device_buffer<double>> retired_double_;
#endif
};

static_assert(ComputeBackend<cuda_backend>);

}  // namespace seedrl::cuda
