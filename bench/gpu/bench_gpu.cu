// The GPU benchmarks of issue 6, each against its baseline in the same run, timed with CUDA
// events (median of repeated timings after a warm-up). Prints one table row per measurement,
// `name | value | unit | note`, which bench/gpu/check.sh collects.
//
//   ceilings     device copy bandwidth (a read+write copy kernel) and an empty kernel launch
//   lstm step    B in {1, 32, 256, 1024}, H in {256, 512} (I = H): the fused kernel, cuBLAS GEMM
//                + separate pointwise kernel, cuDNN cudnnRNNForward with sequence length 1, the
//                per-batch-size choice, and (where it fits) the persistent kernel per step;
//                against the roofline max(bytes / copy bandwidth, empty launch)
//   vtrace       T = 80, B = 65536: achieved bandwidth against the copy bandwidth
//   train step   one mlp_lstm_agent training step (CartPole-sized and Atari-core-sized) on the
//                GPU against the same step on one CPU thread (bench_train_step.cpp)
//
//   e2e          (only with --e2e) the learner end to end, Atari network and Catch actors, GPU
//                inference and training against the CPU learner (bench_e2e.cpp)
//
// Usage: seedrl_bench_gpu [--quick]   (--quick: fewer repetitions, for a smoke run)
//        seedrl_bench_gpu --e2e SECONDS [ACTORS]   (each learner run about SECONDS long; the CPU
//                run works without a GPU, the GPU run then says it skipped)

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "bench_e2e.hpp"
#include "bench_inference.hpp"
#include "bench_train_step.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/cuda/device.cuh"
#include "seedrl/cuda/error.cuh"
#include "seedrl/cuda/lstm_step.cuh"
#include "seedrl/cuda/memory.cuh"
#include "seedrl/cuda/vtrace.cuh"
#if defined(SEEDRL_HAS_CUDNN)
#include <cudnn.h>

#include "seedrl/cuda/cudnn_conv.cuh"  // for check(cudnnStatus_t)
#endif

namespace {

using seedrl::cuda::device_buffer;

int g_repeats = 30;  // timed repetitions (median taken)
int g_inner = 20;    // launches per timed repetition

void row(const std::string& name, double value, const char* unit, const std::string& note) {
  std::printf("| %-44s | %12.3f | %-6s | %s\n", name.c_str(), value, unit, note.c_str());
  std::fflush(stdout);
}

// Median over g_repeats of the time of g_inner calls of f, per call, in microseconds.
double time_us(const std::function<void()>& f) {
  cudaEvent_t start, stop;
  SEEDRL_CUDA_CHECK(cudaEventCreate(&start));
  SEEDRL_CUDA_CHECK(cudaEventCreate(&stop));
  for (int i = 0; i < 3; ++i) {
    f();
  }
  SEEDRL_CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> ms(static_cast<std::size_t>(g_repeats));
  for (float& m : ms) {
    SEEDRL_CUDA_CHECK(cudaEventRecord(start));
    for (int i = 0; i < g_inner; ++i) {
      f();
    }
    SEEDRL_CUDA_CHECK(cudaEventRecord(stop));
    SEEDRL_CUDA_CHECK(cudaEventSynchronize(stop));
    SEEDRL_CUDA_CHECK(cudaEventElapsedTime(&m, start, stop));
  }
  SEEDRL_CUDA_CHECK(cudaEventDestroy(start));
  SEEDRL_CUDA_CHECK(cudaEventDestroy(stop));
  std::sort(ms.begin(), ms.end());
  return 1000.0 * ms[ms.size() / 2] / g_inner;
}

void fill_random(device_buffer<float>& buf, std::uint64_t seed, double lo, double hi) {
  seedrl::random_generator rng(seed);
  std::vector<float> h(buf.size());
  for (float& x : h) {
    x = static_cast<float>(rng.uniform(lo, hi));
  }
  buf.upload(h);
}

__global__ void copy_kernel(const float4* __restrict__ in, float4* __restrict__ out,
                            std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    out[i] = in[i];
  }
}

__global__ void empty_kernel() {}

struct ceilings {
  double copy_gbs = 0;   // bytes read + written per second / 1e9
  double launch_us = 0;  // an empty kernel, back to back
};

ceilings measure_ceilings(const seedrl::cuda::device_info& dev) {
  ceilings c;
  const std::size_t bytes = std::size_t(1) << 30;  // 1 GiB each way: far beyond L2
  device_buffer<float4> a(bytes / sizeof(float4));
  device_buffer<float4> b(bytes / sizeof(float4));
  a.zero();
  const unsigned blocks = static_cast<unsigned>(dev.multiprocessors * 8);
  const int inner = g_inner;
  g_inner = 4;
  const double us = time_us([&] { copy_kernel<<<blocks, 512>>>(a.data(), b.data(), a.size()); });
  g_inner = inner;
  c.copy_gbs = 2.0 * static_cast<double>(bytes) / (us * 1e-6) / 1e9;
  c.launch_us = time_us([] { empty_kernel<<<1, 32>>>(); });
  row("ceiling: device copy bandwidth (read+write)", c.copy_gbs, "GB/s", "copy kernel, 1 GiB");
  row("ceiling: empty kernel launch", c.launch_us, "us", "back to back");
  return c;
}

// ---------------------------------------------------------------------------------------------
// LSTM step

#if defined(SEEDRL_HAS_CUDNN)
// cudnnRNNForward for one LSTM layer, sequence length 1, inference mode; random weights.
struct cudnn_lstm {
  cudnnHandle_t handle = nullptr;
  cudnnRNNDescriptor_t rnn = nullptr;
  cudnnDropoutDescriptor_t dropout = nullptr;
  cudnnRNNDataDescriptor_t x_desc = nullptr, y_desc = nullptr;
  cudnnTensorDescriptor_t h_desc = nullptr;
  device_buffer<unsigned char> weights, work;
  device_buffer<std::int32_t> seq_lengths;
  std::size_t weight_bytes = 0, work_bytes = 0, reserve_bytes = 0;

  cudnn_lstm(int B, int I, int H) {
    SEEDRL_CUDA_CHECK(cudnnCreate(&handle));
    SEEDRL_CUDA_CHECK(cudnnCreateDropoutDescriptor(&dropout));
    SEEDRL_CUDA_CHECK(cudnnSetDropoutDescriptor(dropout, handle, 0.0f, nullptr, 0, 0));
    SEEDRL_CUDA_CHECK(cudnnCreateRNNDescriptor(&rnn));
    SEEDRL_CUDA_CHECK(
        cudnnSetRNNDescriptor_v8(rnn, CUDNN_RNN_ALGO_STANDARD, CUDNN_LSTM, CUDNN_RNN_DOUBLE_BIAS,
                                 CUDNN_UNIDIRECTIONAL, CUDNN_LINEAR_INPUT, CUDNN_DATA_FLOAT,
                                 CUDNN_DATA_FLOAT, CUDNN_FMA_MATH, I, H, H, 1, dropout, 0));
    std::vector<int> lengths(static_cast<std::size_t>(B), 1);
    SEEDRL_CUDA_CHECK(cudnnCreateRNNDataDescriptor(&x_desc));
    SEEDRL_CUDA_CHECK(cudnnCreateRNNDataDescriptor(&y_desc));
    SEEDRL_CUDA_CHECK(cudnnSetRNNDataDescriptor(x_desc, CUDNN_DATA_FLOAT,
                                                CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED, 1, B, I,
                                                lengths.data(), nullptr));
    SEEDRL_CUDA_CHECK(cudnnSetRNNDataDescriptor(y_desc, CUDNN_DATA_FLOAT,
                                                CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED, 1, B, H,
                                                lengths.data(), nullptr));
    SEEDRL_CUDA_CHECK(cudnnCreateTensorDescriptor(&h_desc));
    const int dims[3] = {1, B, H};
    const int strides[3] = {B * H, H, 1};
    SEEDRL_CUDA_CHECK(cudnnSetTensorNdDescriptor(h_desc, CUDNN_DATA_FLOAT, 3, dims, strides));
    SEEDRL_CUDA_CHECK(cudnnGetRNNWeightSpaceSize(handle, rnn, &weight_bytes));
    SEEDRL_CUDA_CHECK(cudnnGetRNNTempSpaceSizes(handle, rnn, CUDNN_FWD_MODE_INFERENCE, x_desc,
                                                &work_bytes, &reserve_bytes));
    weights = device_buffer<unsigned char>(weight_bytes);
    weights.zero();
    work = device_buffer<unsigned char>(std::max<std::size_t>(work_bytes, 1));
    seq_lengths = device_buffer<std::int32_t>(std::span<const std::int32_t>(lengths));
  }
  ~cudnn_lstm() {
    (void)cudnnDestroyTensorDescriptor(h_desc);
    (void)cudnnDestroyRNNDataDescriptor(y_desc);
    (void)cudnnDestroyRNNDataDescriptor(x_desc);
    (void)cudnnDestroyRNNDescriptor(rnn);
    (void)cudnnDestroyDropoutDescriptor(dropout);
    (void)cudnnDestroy(handle);
  }
  void run(const float* x, float* y, const float* hx, const float* cx, float* hy, float* cy) {
    SEEDRL_CUDA_CHECK(cudnnRNNForward(
        handle, rnn, CUDNN_FWD_MODE_INFERENCE, seq_lengths.data(), x_desc, x, y_desc, y, h_desc, hx,
        hy, h_desc, cx, cy, weight_bytes, weights.data(), work_bytes, work.data(), 0, nullptr));
  }
};
#endif

void bench_lstm(const ceilings& c, const seedrl::cuda::device_info& dev) {
  for (const int H : {256, 512}) {
    for (const int B : {1, 32, 256, 1024}) {
      const int I = H;
      const int K = I + H;
      const std::string tag = "lstm B=" + std::to_string(B) + " H=" + std::to_string(H);
      try {
        device_buffer<float> w(static_cast<std::size_t>(4) * H * K);
        device_buffer<float> bias(static_cast<std::size_t>(4) * H);
        device_buffer<float> x(static_cast<std::size_t>(B) * I);
        device_buffer<float> s0(static_cast<std::size_t>(B) * 2 * H);
        device_buffer<float> s1(static_cast<std::size_t>(B) * 2 * H);
        fill_random(w, 1, -0.05, 0.05);
        fill_random(bias, 2, -0.05, 0.05);
        fill_random(x, 3, -1, 1);
        fill_random(s0, 4, -1, 1);
        seedrl::cuda::lstm_layer_device<float> layer{w.data(), bias.data(), I, H};
        bool flip = false;
        auto operands = [&] {
          float* in = flip ? s1.data() : s0.data();
          float* out = flip ? s0.data() : s1.data();
          flip = !flip;
          seedrl::cuda::lstm_step_operands<float> op;
          op.batch = B;
          op.x = x.data();
          op.x_stride = I;
          op.h_prev = in;
          op.c_prev = in + H;
          op.prev_stride = 2 * H;
          op.h = out;
          op.c = out + H;
          op.out_stride = 2 * H;
          return op;
        };
        // Bytes a step must move at least: the weights once, x, the state in and out.
        const double bytes = 4.0 * (4.0 * H * K + 4.0 * H + B * (I + 4.0 * H));
        const double roofline_us = std::max(bytes / (c.copy_gbs * 1e3), c.launch_us);
        const double fused = time_us([&] { seedrl::cuda::lstm_step_fused(layer, operands()); });
        seedrl::cuda::blas_handle blas;
        device_buffer<float> ws(seedrl::cuda::lstm_step_gemm_workspace<float>(B, H));
        const double gemm = time_us(
            [&] { seedrl::cuda::lstm_step_gemm(blas.get(), layer, operands(), ws.data()); });
        seedrl::cuda::lstm_step_runner<float> runner;
        const double chosen = time_us([&] { runner.step(layer, operands()); });
        row(tag + " fused", fused, "us",
            "x" + std::to_string(fused / roofline_us).substr(0, 4) + " of roofline " +
                std::to_string(roofline_us).substr(0, 6) + " us");
        row(tag + " cuBLAS GEMM + pointwise", gemm, "us",
            "fused is " + std::to_string(gemm / fused).substr(0, 4) + "x faster");
        row(tag + " per-batch choice", chosen, "us",
            seedrl::cuda::choose_lstm_step_path(B) == seedrl::cuda::lstm_step_path::fused
                ? "took fused"
                : "took gemm");
#if defined(SEEDRL_HAS_CUDNN)
        try {
          cudnn_lstm rnn(B, I, H);
          device_buffer<float> y(static_cast<std::size_t>(B) * H);
          device_buffer<float> hc(static_cast<std::size_t>(B) * 4 * H);
          hc.zero();
          float* h0 = hc.data();
          float* c0 = h0 + static_cast<std::size_t>(B) * H;
          float* h1 = c0 + static_cast<std::size_t>(B) * H;
          float* c1 = h1 + static_cast<std::size_t>(B) * H;
          const double cudnn = time_us([&] { rnn.run(x.data(), y.data(), h0, c0, h1, c1); });
          row(tag + " cudnnRNNForward (seq len 1)", cudnn, "us",
              "fused is " + std::to_string(cudnn / fused).substr(0, 4) + "x faster");
        } catch (const std::exception& e) {
          row(tag + " cudnnRNNForward (seq len 1)", 0, "error", e.what());
        }
#endif
        // Persistent kernel: many steps in one launch; per-step time.
        const auto plan = seedrl::cuda::lstm_persistent_plan<float>(B, I, H, dev);
        if (plan.blocks > 0) {
          const int steps = 64;
          device_buffer<float> xs(static_cast<std::size_t>(steps) * B * I);
          fill_random(xs, 5, -1, 1);
          device_buffer<float> hbuf(static_cast<std::size_t>(2) * B * H);
          const int inner = g_inner;
          g_inner = 2;
          const double per_launch = time_us([&] {
            seedrl::cuda::lstm_persistent_steps(layer, steps, B, xs.data(), nullptr, s0.data(),
                                                2 * H, nullptr, hbuf.data(), dev);
          });
          g_inner = inner;
          row(tag + " persistent (per step of 64)", per_launch / steps, "us",
              "x" + std::to_string(per_launch / steps / roofline_us).substr(0, 4) +
                  " of the one-step roofline");
        } else {
          row(tag + " persistent", 0, "n/a", "does not fit in shared memory");
        }
      } catch (const std::exception& e) {
        row(tag, 0, "error", e.what());
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// V-trace

void bench_vtrace(const ceilings& c) {
  const int T = 80;
  const int B = 65536;
  const std::size_t n = static_cast<std::size_t>(T) * B;
  try {
    device_buffer<float> log_rhos(n), discounts(n), rewards(n), values(n), vs(n), pg(n);
    device_buffer<float> bootstrap(static_cast<std::size_t>(B));
    fill_random(log_rhos, 1, -1, 1);
    fill_random(discounts, 2, 0, 0.99);
    fill_random(rewards, 3, -1, 1);
    fill_random(values, 4, -1, 1);
    fill_random(bootstrap, 5, -1, 1);
    seedrl::cuda::vtrace_operands<float> op;
    op.T = T;
    op.B = B;
    op.log_rhos = log_rhos.data();
    op.discounts = discounts.data();
    op.rewards = rewards.data();
    op.values = values.data();
    op.bootstrap = bootstrap.data();
    op.vs = vs.data();
    op.pg_advantages = pg.data();
    const seedrl::detail::vtrace_coefficients<float> k{1.0f, 1.0f, 1.0f};
    const double us = time_us([&] { seedrl::cuda::vtrace(k, op); });
    const double bytes = 4.0 * (6.0 * static_cast<double>(n) + B);
    const double gbs = bytes / (us * 1e-6) / 1e9;
    row("vtrace T=80 B=65536", us, "us", "");
    row("vtrace T=80 B=65536 bandwidth", gbs, "GB/s",
        std::to_string(100.0 * gbs / c.copy_gbs).substr(0, 5) + "% of copy (target >= 70%)");
  } catch (const std::exception& e) {
    row("vtrace T=80 B=65536", 0, "error", e.what());
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--e2e") == 0) {
    const double seconds = argc > 2 ? std::atof(argv[2]) : 30.0;
    const int actors = argc > 3 ? std::atoi(argv[3]) : 0;
    if (!(seconds > 0)) {
      std::fprintf(stderr, "usage: seedrl_bench_gpu --e2e SECONDS [ACTORS]\n");
      return 2;
    }
    try {
      return seedrl::bench_gpu::bench_e2e(seconds, actors);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "seedrl_bench_gpu --e2e: %s\n", e.what());
      return 1;
    }
  }
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  if (quick) {
    g_repeats = 5;
    g_inner = 5;
  }
  const seedrl::cuda::device_presence p = seedrl::cuda::query_devices();
  if (p.count == 0) {
    std::printf("SKIP: no usable CUDA device (%s)\n", p.reason.c_str());
    return 77;
  }
  try {
    const seedrl::cuda::device_info dev = seedrl::cuda::get_device_info(0);
    std::printf("device: %s, sm_%d%d, %d SMs\n", dev.name.c_str(), dev.major, dev.minor,
                dev.multiprocessors);
    std::printf("| %-44s | %12s | %-6s | %s\n", "benchmark", "value", "unit", "note");
    const ceilings c = measure_ceilings(dev);
    bench_lstm(c, dev);
    bench_vtrace(c);
    seedrl::bench_gpu::bench_train_step(quick);
    seedrl::bench_gpu::bench_inference(quick);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "seedrl_bench_gpu: %s\n", e.what());
    return 1;
  }
  return 0;
}
