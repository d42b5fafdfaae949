// The Nature CNN's convolutions (host_backend's conv2d primitives, what the conv stacks run:
// oneDNN where found, or with --im2col the im2col + GEMM path) against plain Eigen SGEMMs of
// the same FLOPs, measured in the same run.
//
// Each convolution is, FLOP for FLOP, the GEMM W [O, C*KH*KW] x patches [C*KH*KW, B*OH*OW];
// backward adds dW = dY x patches^T and d patches = W^T x dY (the first layer needs no input
// gradient, so it skips the latter). The baseline runs exactly those products on ready-made
// matrices, so `ratio` (conv GFLOP/s over GEMM GFLOP/s) is what im2col, col2im, the bias and the
// layout shuffles cost. Conv and GEMM alternate inside every iteration, so a load change on the
// machine hits both; only the convolution's time drives the iteration count. Each benchmark
// runs 5 repetitions and reports their aggregates: read the medians.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstddef>
#include <cstring>
#include <vector>

#include "conv_shapes.hpp"
#include "seedrl/backend/host_backend.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/detail/dnnl_runtime.hpp"
#include "seedrl/net/tensor.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

/// Nature CNN (Mnih et al. 2015) on 84x84x4 frame stacks.
const std::vector<seedrl::conv2d_shape> nature = seedrl_bench::nature_cnn_shapes();

std::vector<float> random_floats(std::size_t n, seedrl::random_generator& rng) {
  std::vector<float> v(n);
  for (auto& x : v)
    x = static_cast<float>(rng.uniform(-1.0, 1.0));
  return v;
}

/// One layer with its buffers, and the matrices of its equivalent plain GEMMs.
struct layer {
  seedrl::conv2d_shape shape;
  std::ptrdiff_t in_size, out_size;
  std::vector<float> w, bias, dw, dbias, y, dy, dx;
  // GEMM baseline: a = W [O, K], b = patches [K, B*P], c = output [O, B*P], plus gradients.
  seedrl::row_matrix<float> a, b, c, da, db;

  layer(const seedrl::conv2d_shape& s, int batch, seedrl::random_generator& rng) : shape(s) {
    shape.batch = batch;
    const std::ptrdiff_t O = s.out_channels, K = s.in_channels * s.kernel_h * s.kernel_w,
                         P = s.output_height() * s.output_width(), N = batch * P;
    in_size = s.in_channels * s.input_height * s.input_width;
    out_size = O * P;
    w = random_floats(static_cast<std::size_t>(O * K), rng);
    bias = random_floats(static_cast<std::size_t>(O), rng);
    dw.assign(w.size(), 0.0f);
    dbias.assign(bias.size(), 0.0f);
    y.resize(static_cast<std::size_t>(batch * out_size));
    dy = random_floats(y.size(), rng);
    dx.resize(static_cast<std::size_t>(batch * in_size));
    a = seedrl::row_matrix<float>::Random(O, K);
    b = seedrl::row_matrix<float>::Random(K, N);
    c = seedrl::row_matrix<float>::Random(O, N);
    da = seedrl::row_matrix<float>::Zero(O, K);
    db = seedrl::row_matrix<float>::Zero(K, N);
  }

  /// FLOPs of one forward product.
  double flops() const { return 2.0 * static_cast<double>(a.rows() * a.cols() * b.cols()); }
};

struct nature_cnn {
  seedrl::host_backend backend;  // its convolution scratch and oneDNN primitives, kept
  std::vector<layer> layers;
  std::vector<float> x;
  int batch;

  explicit nature_cnn(std::int64_t b) : batch(static_cast<int>(b)) {
    seedrl::random_generator rng(1);
    for (const auto& shape : nature)
      layers.emplace_back(shape, batch, rng);
    x = random_floats(static_cast<std::size_t>(batch * layers[0].in_size), rng);
  }

  const float* input_of(std::size_t l) const { return l == 0 ? x.data() : layers[l - 1].y.data(); }

  void forward(std::size_t l) {
    auto& L = layers[l];
    backend.conv2d_forward(L.shape, input_of(l), L.w.data(), L.bias.data(), L.y.data());
  }

  /// The first layer needs no input gradient.
  void backward(std::size_t l) {
    auto& L = layers[l];
    backend.conv2d_backward(L.shape, input_of(l), L.w.data(), L.dy.data(),
                            l == 0 ? nullptr : L.dx.data(), L.dw.data(), L.dbias.data());
  }

  static void gemm_forward(layer& L) { L.c.noalias() = L.a * L.b; }
  static void gemm_backward(layer& L, bool input_grad) {
    L.da.noalias() += L.c * L.b.transpose();
    if (input_grad)
      L.db.noalias() = L.a.transpose() * L.c;
  }
};

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

/// Runs `conv` and `gemm` alternately; reports conv GFLOP/s, GEMM GFLOP/s and their ratio.
template <class Conv, class Gemm>
void measure(benchmark::State& state, double flops, Conv&& conv, Gemm&& gemm) {
  double conv_s = 0.0, gemm_s = 0.0;
  for (auto _ : state) {
    auto t0 = clock_type::now();
    conv();
    const double c = seconds_since(t0);
    t0 = clock_type::now();
    gemm();
    gemm_s += seconds_since(t0);
    conv_s += c;
    state.SetIterationTime(c);
  }
  const double n = static_cast<double>(state.iterations());
  state.counters["GFLOPS"] = flops * n / conv_s * 1e-9;
  state.counters["gemm_GFLOPS"] = flops * n / gemm_s * 1e-9;
  state.counters["ratio"] = gemm_s / conv_s;
}

void BM_nature_forward(benchmark::State& state) {
  nature_cnn net(state.range(0));
  double flops = 0.0;
  for (const auto& L : net.layers)
    flops += L.flops();
  measure(
      state, flops,
      [&] {
        for (std::size_t l = 0; l < 3; ++l)
          net.forward(l);
        benchmark::DoNotOptimize(net.layers[2].y.data());
      },
      [&] {
        for (auto& L : net.layers)
          nature_cnn::gemm_forward(L);
        benchmark::DoNotOptimize(net.layers[2].c.data());
      });
}

void BM_nature_forward_backward(benchmark::State& state) {
  nature_cnn net(state.range(0));
  double flops = 0.0;
  for (std::size_t l = 0; l < 3; ++l)
    flops += net.layers[l].flops() * (l == 0 ? 2.0 : 3.0);  // layer 0: no input gradient
  measure(
      state, flops,
      [&] {
        for (std::size_t l = 0; l < 3; ++l)
          net.forward(l);
        for (std::size_t l = 3; l-- > 0;)
          net.backward(l);
        benchmark::DoNotOptimize(net.layers[0].dw.data());
      },
      [&] {
        for (std::size_t l = 0; l < 3; ++l)
          nature_cnn::gemm_forward(net.layers[l]);
        for (std::size_t l = 3; l-- > 0;)
          nature_cnn::gemm_backward(net.layers[l], l != 0);
        benchmark::DoNotOptimize(net.layers[0].da.data());
      });
}

/// One layer's forward alone (which layer: 0, 1, 2), to see where the stack loses time.
void BM_nature_layer_forward(benchmark::State& state) {
  nature_cnn net(state.range(1));
  const auto l = static_cast<std::size_t>(state.range(0));
  measure(
      state, net.layers[l].flops(),
      [&] {
        net.forward(l);
        benchmark::DoNotOptimize(net.layers[l].y.data());
      },
      [&] {
        nature_cnn::gemm_forward(net.layers[l]);
        benchmark::DoNotOptimize(net.layers[l].c.data());
      });
}

BENCHMARK(BM_nature_forward)
    ->Arg(32)
    ->Arg(64)
    ->ArgName("B")
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.3)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);
BENCHMARK(BM_nature_forward_backward)
    ->Arg(32)
    ->Arg(64)
    ->ArgName("B")
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.3)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);
BENCHMARK(BM_nature_layer_forward)
    ->ArgsProduct({{0, 1, 2}, {32}})
    ->ArgNames({"layer", "B"})
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->MinTime(0.2)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);

}  // namespace

// `--im2col` measures the im2col + GEMM path (what double layers and builds without oneDNN
// run) instead of oneDNN's convolutions.
int main(int argc, char** argv) {
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--im2col") == 0)
      seedrl::set_dnnl_convolutions(false);
    else
      argv[kept++] = argv[i];
  }
  argc = kept;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv))
    return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
