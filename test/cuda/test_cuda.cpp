// GPU against CPU on random inputs (STYLE.md's third tier): every CUDA kernel is run on the
// device and compared with seedrl's CPU backend, or with the CPU's per-element function where
// the CPU keeps that step private. Exits with 77 (ctest SKIP_RETURN_CODE) and says why when
// no CUDA device is usable, so the test shows as skipped, not passed, on machines without one.

#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "gpu_runners.hpp"
#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/algo/vtrace.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/cuda/device.cuh"
#include "seedrl/detail/lstm_math.hpp"
#include "seedrl/net/lstm.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/optim/rmsprop.hpp"

#if defined(SEEDRL_HAS_CUDNN)
#include "seedrl/cuda/cudnn_conv.cuh"
#include "seedrl/cuda/memory.cuh"
#include "seedrl/net/conv2d.hpp"
#endif

namespace {

using seedrl::test_gpu::lstm_path;

std::vector<float> random_floats(seedrl::random_generator& rng, std::size_t n, double lo,
                                 double hi) {
  std::vector<float> v(n);
  for (float& x : v) {
    x = static_cast<float>(rng.uniform(lo, hi));
  }
  return v;
}

// The first element where |got - want| > abs + rel * |want| (or where either is not finite
// while the other is), described; empty when all agree.
template <class A, class B>
std::string first_mismatch(const std::vector<A>& got, const std::vector<B>& want, double abs,
                           double rel) {
  if (got.size() != want.size()) {
    return "sizes differ: " + std::to_string(got.size()) + " vs " + std::to_string(want.size());
  }
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double g = static_cast<double>(got[i]);
    const double w = static_cast<double>(want[i]);
    if (!(std::abs(g - w) <= abs + rel * std::abs(w))) {
      std::ostringstream s;
      s.precision(9);
      s << "element " << i << ": gpu " << g << ", cpu " << w;
      return s.str();
    }
  }
  return {};
}

// A CPU LSTM layer with random parameters, and its weight and bias copied out.
struct cpu_lstm {
  seedrl::lstm<float> net;
  std::vector<float> params, grads, weight, bias;

  cpu_lstm(int I, int H, std::uint64_t seed) : net(seedrl::lstm_config{I, H, 1, 1.0}) {
    params.resize(net.num_parameters());
    grads.resize(net.num_parameters());
    net.bind(params.data(), grads.data());
    seedrl::random_generator rng(seed);
    net.init(rng);
    const auto w = net.weight(0);
    weight.assign(w.data(), w.data() + w.size());
    const auto b = net.bias(0);
    bias.assign(b.begin(), b.end());
  }
};

}  // namespace

TEST_CASE("cuda lstm step: fused, gemm and per-batch choice match the CPU layer", "[cuda]") {
  for (const int H : {32, 100, 256}) {
    for (const int B : {1, 2, 3, 8, 33, 300}) {
      const int I = H == 100 ? 37 : H;
      CAPTURE(H, B, I);
      cpu_lstm cpu(I, H, 1000 + static_cast<std::uint64_t>(H * 7 + B));
      seedrl::random_generator rng(static_cast<std::uint64_t>(B * 31 + H));
      const auto x = random_floats(rng, static_cast<std::size_t>(B) * I, -1, 1);
      const auto state = random_floats(rng, static_cast<std::size_t>(B) * 2 * H, -1, 1);
      std::vector<std::uint8_t> dones(static_cast<std::size_t>(B));
      for (int b = 0; b < B; ++b) {
        dones[static_cast<std::size_t>(b)] = (b % 3 == 1) ? 1 : 0;
      }
      std::vector<float> want = state;
      std::vector<float> y(static_cast<std::size_t>(B) * H);
      cpu.net.step(seedrl::cview(x.data(), B, I), dones, seedrl::view(want.data(), B, 2 * H),
                   seedrl::view(y.data(), B, H));
      for (const auto path : {lstm_path::fused, lstm_path::gemm, lstm_path::runner}) {
        CAPTURE(static_cast<int>(path));
        const auto got =
            seedrl::test_gpu::lstm_step(path, cpu.weight, cpu.bias, I, H, B, x, dones, state);
        // Sums over I+H products in another order: float rounding, relative to sum |w x|.
        CHECK(first_mismatch(got, want, 2e-5, 2e-4).empty());
        INFO(first_mismatch(got, want, 2e-5, 2e-4));
      }
      // No dones at all (null pointer path).
      std::vector<float> want2 = state;
      cpu.net.step(seedrl::cview(x.data(), B, I), {}, seedrl::view(want2.data(), B, 2 * H),
                   seedrl::view(y.data(), B, H));
      const auto got2 = seedrl::test_gpu::lstm_step(lstm_path::fused, cpu.weight, cpu.bias, I, H, B,
                                                    x, {}, state);
      INFO(first_mismatch(got2, want2, 2e-5, 2e-4));
      CHECK(first_mismatch(got2, want2, 2e-5, 2e-4).empty());
    }
  }
}

TEST_CASE("cuda lstm persistent kernel: several steps match the CPU layer step by step", "[cuda]") {
  for (const int B : {1, 5, 16}) {
    const int I = 64;
    const int H = 128;
    const int steps = 6;
    CAPTURE(B);
    cpu_lstm cpu(I, H, 77 + static_cast<std::uint64_t>(B));
    seedrl::random_generator rng(5 + static_cast<std::uint64_t>(B));
    const auto x = random_floats(rng, static_cast<std::size_t>(steps) * B * I, -1, 1);
    std::vector<float> state = random_floats(rng, static_cast<std::size_t>(B) * 2 * H, -1, 1);
    std::vector<std::uint8_t> dones(static_cast<std::size_t>(steps) * B);
    for (std::size_t i = 0; i < dones.size(); ++i) {
      dones[i] = (i % 7 == 3) ? 1 : 0;
    }
    std::vector<float> want = state;
    std::vector<float> want_y(static_cast<std::size_t>(steps) * B * H);
    for (int t = 0; t < steps; ++t) {
      cpu.net.step(seedrl::cview(x.data() + static_cast<std::size_t>(t) * B * I, B, I),
                   std::span<const std::uint8_t>(dones).subspan(static_cast<std::size_t>(t) * B,
                                                                static_cast<std::size_t>(B)),
                   seedrl::view(want.data(), B, 2 * H),
                   seedrl::view(want_y.data() + static_cast<std::size_t>(t) * B * H, B, H));
    }
    std::vector<float> y;
    if (!seedrl::test_gpu::lstm_persistent(cpu.weight, cpu.bias, I, H, B, steps, x, dones, state,
                                           y)) {
      WARN("the persistent kernel does not fit on this device; not checked");
      continue;
    }
    INFO(first_mismatch(state, want, 5e-5, 5e-4));
    CHECK(first_mismatch(state, want, 5e-5, 5e-4).empty());
    INFO(first_mismatch(y, want_y, 5e-5, 5e-4));
    CHECK(first_mismatch(y, want_y, 5e-5, 5e-4).empty());
  }
}

TEST_CASE("cuda lstm backward pointwise matches detail::lstm_unit_grad on the CPU", "[cuda]") {
  const int rows = 37;
  const int H = 70;
  seedrl::random_generator rng(9);
  // Activated gates in their ranges: sigmoid outputs in (0, 1), tanh outputs in (-1, 1).
  std::vector<float> gates(static_cast<std::size_t>(rows) * 4 * H);
  for (int r = 0; r < rows; ++r) {
    for (int g = 0; g < 4; ++g) {
      for (int j = 0; j < H; ++j) {
        const double lo = g == 2 ? -1.0 : 0.0;
        gates[(static_cast<std::size_t>(r) * 4 + g) * H + j] =
            static_cast<float>(rng.uniform(lo, 1.0));
      }
    }
  }
  const auto tanh_c = random_floats(rng, static_cast<std::size_t>(rows) * H, -1, 1);
  const auto c_prev = random_floats(rng, static_cast<std::size_t>(rows) * H, -2, 2);
  const auto dh = random_floats(rng, static_cast<std::size_t>(rows) * H, -1, 1);
  const auto dc_in = random_floats(rng, static_cast<std::size_t>(rows) * H, -1, 1);
  std::vector<float> want_dz(gates.size());
  std::vector<float> want_dc(dc_in.size());
  for (int r = 0; r < rows; ++r) {
    const float* a = gates.data() + static_cast<std::size_t>(r) * 4 * H;
    for (int j = 0; j < H; ++j) {
      const std::size_t i = static_cast<std::size_t>(r) * H + j;
      const auto g = seedrl::detail::lstm_unit_grad(a[j], a[H + j], a[2 * H + j], a[3 * H + j],
                                                    tanh_c[i], c_prev[i], dh[i], dc_in[i]);
      float* z = want_dz.data() + static_cast<std::size_t>(r) * 4 * H;
      z[j] = g.dzi;
      z[H + j] = g.dzf;
      z[2 * H + j] = g.dzg;
      z[3 * H + j] = g.dzo;
      want_dc[i] = g.dc_prev;
    }
  }
  std::vector<float> dc = dc_in;
  std::vector<float> dz;
  seedrl::test_gpu::lstm_backward_pointwise(rows, H, gates, tanh_c, c_prev, dh, dc, dz);
  INFO(first_mismatch(dz, want_dz, 1e-6, 1e-5));
  CHECK(first_mismatch(dz, want_dz, 1e-6, 1e-5).empty());
  INFO(first_mismatch(dc, want_dc, 1e-6, 1e-5));
  CHECK(first_mismatch(dc, want_dc, 1e-6, 1e-5).empty());
}

namespace {

std::optional<double> optional_number(const nlohmann::json& j) {
  if (j.is_null()) {
    return std::nullopt;
  }
  return j.get<double>();
}

template <class S>
std::vector<S> as(const std::vector<double>& v) {
  return std::vector<S>(v.begin(), v.end());
}

template <class S>
void check_vtrace_fixture(const std::filesystem::path& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  const nlohmann::json j = nlohmann::json::parse(in);
  const int T = j.at("T").get<int>();
  const int B = j.at("B").get<int>();
  const auto& p = j.at("params");
  seedrl::vtrace_params<S> params;
  const auto rho = optional_number(p.at("clip_rho_threshold"));
  const auto pg_rho = optional_number(p.at("clip_pg_rho_threshold"));
  params.clip_rho_threshold = rho ? std::optional<S>(static_cast<S>(*rho)) : std::nullopt;
  params.clip_pg_rho_threshold = pg_rho ? std::optional<S>(static_cast<S>(*pg_rho)) : std::nullopt;
  params.lambda = static_cast<S>(p.at("lambda").get<double>());
  const auto& inp = j.at("inputs");
  const auto target = as<S>(inp.at("target_action_log_probs").get<std::vector<double>>());
  const auto behaviour = as<S>(inp.at("behaviour_action_log_probs").get<std::vector<double>>());
  std::vector<S> log_rhos(target.size());
  for (std::size_t i = 0; i < log_rhos.size(); ++i) {
    log_rhos[i] = target[i] - behaviour[i];
  }
  const auto discounts = as<S>(inp.at("discounts").get<std::vector<double>>());
  const auto rewards = as<S>(inp.at("rewards").get<std::vector<double>>());
  const auto values = as<S>(inp.at("values").get<std::vector<double>>());
  const auto bootstrap = as<S>(inp.at("bootstrap_value").get<std::vector<double>>());
  const auto want_vs = j.at("expected").at("vs").get<std::vector<double>>();
  const auto want_pg = j.at("expected").at("pg_advantages").get<std::vector<double>>();
  const double abs = j.at("tolerance").at("abs").get<double>();
  const double rel = j.at("tolerance").at("rel").get<double>();

  std::vector<S> vs, pg;
  const auto k = seedrl::detail::make_vtrace_coefficients(params, "test");
  seedrl::test_gpu::vtrace<S>(k, T, B, log_rhos, discounts, rewards, values, bootstrap, vs, pg);
  // Against the fixture's float64 expectation, with the fixture's tolerance...
  INFO(path.filename().string() << " vs: " << first_mismatch(vs, want_vs, abs, rel));
  CHECK(first_mismatch(vs, want_vs, abs, rel).empty());
  INFO(path.filename().string() << " pg: " << first_mismatch(pg, want_pg, abs, rel));
  CHECK(first_mismatch(pg, want_pg, abs, rel).empty());
  // ...and against the CPU backend, which runs the same step function: only exp and fused
  // multiply-adds may round differently.
  std::vector<S> cpu_vs(vs.size()), cpu_pg(pg.size());
  seedrl::vtrace<S>(static_cast<std::size_t>(T), static_cast<std::size_t>(B), log_rhos, discounts,
                    rewards, values, bootstrap, params, cpu_vs, cpu_pg);
  const double tight = sizeof(S) == 4 ? 1e-5 : 1e-12;
  INFO(first_mismatch(vs, cpu_vs, tight, tight));
  CHECK(first_mismatch(vs, cpu_vs, tight, tight).empty());
  INFO(first_mismatch(pg, cpu_pg, tight, tight));
  CHECK(first_mismatch(pg, cpu_pg, tight, tight).empty());
}

}  // namespace

TEST_CASE("cuda vtrace runs every fixture in test/fixtures/vtrace", "[cuda]") {
  std::vector<std::filesystem::path> paths;
  for (const auto& e : std::filesystem::directory_iterator(
           std::filesystem::path(SEEDRL_TEST_FIXTURES) / "vtrace")) {
    if (e.path().extension() == ".json") {
      paths.push_back(e.path());
    }
  }
  std::sort(paths.begin(), paths.end());
  REQUIRE(paths.size() >= 10);
  for (const auto& path : paths) {
    check_vtrace_fixture<float>(path);
    check_vtrace_fixture<double>(path);
  }
}

TEST_CASE("cuda impala loss: log-softmax, entropy, policy gradient and sums match the CPU loss",
          "[cuda]") {
  const int T = 20;
  const int B = 13;
  const int A = 6;
  const std::size_t steps = static_cast<std::size_t>(T + 1) * B;
  seedrl::random_generator rng(2024);
  const auto logits = random_floats(rng, steps * A, -3, 3);
  const auto values = random_floats(rng, steps, -2, 2);
  const auto behaviour = random_floats(rng, steps, -3, -0.1);
  const auto rewards = random_floats(rng, steps, -2, 2);
  std::vector<std::int32_t> actions(steps);
  std::vector<std::uint8_t> dones(steps);
  for (std::size_t i = 0; i < steps; ++i) {
    actions[i] = static_cast<std::int32_t>(rng() % A);
    dones[i] = rng.uniform() < 0.1 ? 1 : 0;
  }
  seedrl::impala_loss_config<float> config;
  config.entropy_cost = 0.01f;
  config.max_abs_reward = 1.0f;
  const seedrl::impala_loss<float> cpu_loss(config);
  seedrl::impala_batch<float> batch;
  batch.T = T;
  batch.B = B;
  batch.num_actions = A;
  batch.logits = logits;
  batch.values = values;
  batch.actions = actions;
  batch.behaviour_log_probs = behaviour;
  batch.rewards = rewards;
  batch.dones = dones;
  std::vector<float> want_gl(logits.size()), want_gv(values.size());
  seedrl::impala_gradients<float> grads{want_gl, want_gv};
  const seedrl::loss_terms want = cpu_loss(batch, grads);

  seedrl::test_gpu::impala_scalars k{
      config.discount, config.baseline_cost, config.entropy_cost, *config.max_abs_reward,
      seedrl::detail::make_vtrace_coefficients(
          seedrl::vtrace_params<float>{config.clip_rho_threshold, config.clip_pg_rho_threshold,
                                       config.lambda},
          "test")};
  std::vector<float> gl, gv;
  const seedrl::loss_terms got = seedrl::test_gpu::impala_loss(k, T, B, A, logits, values, actions,
                                                               behaviour, rewards, dones, gl, gv);
  INFO(first_mismatch(gl, want_gl, 1e-7, 1e-4));
  CHECK(first_mismatch(gl, want_gl, 1e-7, 1e-4).empty());
  INFO(first_mismatch(gv, want_gv, 1e-7, 1e-4));
  CHECK(first_mismatch(gv, want_gv, 1e-7, 1e-4).empty());
  CHECK(got.policy == Approx(want.policy).epsilon(1e-4).margin(1e-6));
  CHECK(got.baseline == Approx(want.baseline).epsilon(1e-4).margin(1e-6));
  CHECK(got.entropy == Approx(want.entropy).epsilon(1e-4).margin(1e-8));
  CHECK(got.total == Approx(want.total).epsilon(1e-4).margin(1e-6));
}

TEST_CASE("cuda fused adam: two steps match seedrl::adam", "[cuda]") {
  seedrl::random_generator rng(3);
  const std::size_t n = 100003;  // not a multiple of the block size
  auto params = random_floats(rng, n, -1, 1);
  std::vector<float> cpu_params = params;
  seedrl::adam_config config;
  config.learning_rate = 0.01;
  seedrl::adam<float> cpu(config);
  std::vector<float> m(n, 0.0f), v(n, 0.0f);
  for (std::int64_t t = 1; t <= 2; ++t) {
    const auto grads = random_floats(rng, n, -2, 2);
    cpu.step(cpu_params, grads);
    const auto k = seedrl::detail::make_adam_coefficients<float>(
        config.beta1, config.beta2, config.epsilon, config.learning_rate, t);
    seedrl::test_gpu::adam_step(k, params, m, v, grads);
    INFO("step " << t << ": " << first_mismatch(params, cpu_params, 1e-6, 1e-5));
    CHECK(first_mismatch(params, cpu_params, 1e-6, 1e-5).empty());
  }
}

TEST_CASE("cuda fused rmsprop: two steps match seedrl::rmsprop, with and without momentum",
          "[cuda]") {
  for (const double momentum : {0.0, 0.9}) {
    CAPTURE(momentum);
    seedrl::random_generator rng(4);
    const std::size_t n = 4099;
    auto params = random_floats(rng, n, -1, 1);
    std::vector<float> cpu_params = params;
    seedrl::rmsprop_config config;
    config.learning_rate = 0.01;
    config.momentum = momentum;
    seedrl::rmsprop<float> cpu(config);
    std::vector<float> v(n, 0.0f);
    std::vector<float> buf(momentum > 0 ? n : 0, 0.0f);
    for (int t = 1; t <= 2; ++t) {
      const auto grads = random_floats(rng, n, -2, 2);
      cpu.step(cpu_params, grads);
      const auto k = seedrl::detail::make_rmsprop_coefficients<float>(
          config.decay, config.momentum, config.epsilon, config.learning_rate);
      seedrl::test_gpu::rmsprop_step(k, params, v, buf, grads);
      INFO("step " << t << ": " << first_mismatch(params, cpu_params, 1e-6, 1e-5));
      CHECK(first_mismatch(params, cpu_params, 1e-6, 1e-5).empty());
    }
  }
}

#if defined(SEEDRL_HAS_CUDNN)
TEST_CASE("cudnn conv2d forward and backward match seedrl::conv2d", "[cuda][cudnn]") {
  struct layer_case {
    int c, h, w, o, k, stride, pad;
  };
  // Nature CNN's first two layers (smaller images) and an IMPALA 3x3 padding-1 layer.
  for (const layer_case lc : {layer_case{4, 36, 36, 8, 8, 4, 0}, layer_case{8, 8, 8, 16, 4, 2, 0},
                              layer_case{5, 9, 7, 6, 3, 1, 1}}) {
    CAPTURE(lc.c, lc.h, lc.w, lc.o, lc.k, lc.stride, lc.pad);
    const int N = 3;
    seedrl::conv2d_config config;
    config.in_channels = lc.c;
    config.input_height = lc.h;
    config.input_width = lc.w;
    config.out_channels = lc.o;
    config.kernel_h = lc.k;
    config.kernel_w = lc.k;
    config.stride_h = lc.stride;
    config.stride_w = lc.stride;
    config.padding_h = lc.pad;
    config.padding_w = lc.pad;
    seedrl::conv2d<float> cpu(config);
    std::vector<float> params(cpu.num_parameters()), grads(cpu.num_parameters(), 0.0f);
    cpu.bind(params.data(), grads.data());
    seedrl::random_generator rng(11);
    cpu.init(rng);
    const auto x = random_floats(rng, static_cast<std::size_t>(N) * cpu.input_size(), -1, 1);
    const auto dy = random_floats(rng, static_cast<std::size_t>(N) * cpu.output_size(), -1, 1);
    std::vector<float> y(static_cast<std::size_t>(N) * cpu.output_size());
    std::vector<float> dx(x.size());
    std::vector<float> ws(cpu.workspace_size(N));
    cpu.forward(seedrl::cview(x.data(), N, cpu.input_size()),
                seedrl::view(y.data(), N, cpu.output_size()), ws);
    cpu.backward(seedrl::cview(x.data(), N, cpu.input_size()),
                 seedrl::cview(dy.data(), N, cpu.output_size()),
                 seedrl::view(dx.data(), N, cpu.input_size()), ws);

    seedrl::cuda::conv2d_shape shape{N,    lc.c,      lc.h,      lc.w,   lc.o,  lc.k,
                                     lc.k, lc.stride, lc.stride, lc.pad, lc.pad};
    seedrl::cuda::cudnn_conv2d<float> gpu(shape);
    REQUIRE(gpu.output_elements() == y.size());
    const std::size_t nw = static_cast<std::size_t>(lc.o) * cpu.patch_size();
    const std::vector<float> w(params.begin(), params.begin() + static_cast<std::ptrdiff_t>(nw));
    const std::vector<float> b(params.begin() + static_cast<std::ptrdiff_t>(nw), params.end());
    seedrl::cuda::device_buffer<float> d_x{std::span<const float>(x)};
    seedrl::cuda::device_buffer<float> d_w{std::span<const float>(w)};
    seedrl::cuda::device_buffer<float> d_b{std::span<const float>(b)};
    seedrl::cuda::device_buffer<float> d_dy{std::span<const float>(dy)};
    seedrl::cuda::device_buffer<float> d_y(y.size()), d_dx(x.size()), d_dw(nw), d_db(b.size());
    d_dw.zero();
    d_db.zero();
    gpu.forward(d_x.data(), d_w.data(), d_b.data(), d_y.data());
    gpu.backward(d_x.data(), d_w.data(), d_dy.data(), d_dx.data(), d_dw.data(), d_db.data());
    const auto got_y = d_y.to_host();
    const auto got_dx = d_dx.to_host();
    const auto got_dw = d_dw.to_host();
    const auto got_db = d_db.to_host();
    const std::vector<float> want_dw(grads.begin(),
                                     grads.begin() + static_cast<std::ptrdiff_t>(nw));
    const std::vector<float> want_db(grads.begin() + static_cast<std::ptrdiff_t>(nw), grads.end());
    // Float tolerance for sums of up to a few hundred products; cudnn_conv2d asks for FMA math,
    // and errors near 1e-3 here would mean TF32 tensor cores were used anyway.
    INFO("y: " << first_mismatch(got_y, y, 1e-4, 1e-4));
    CHECK(first_mismatch(got_y, y, 1e-4, 1e-4).empty());
    INFO("dx: " << first_mismatch(got_dx, dx, 1e-4, 1e-4));
    CHECK(first_mismatch(got_dx, dx, 1e-4, 1e-4).empty());
    INFO("dw: " << first_mismatch(got_dw, want_dw, 1e-4, 1e-4));
    CHECK(first_mismatch(got_dw, want_dw, 1e-4, 1e-4).empty());
    INFO("db: " << first_mismatch(got_db, want_db, 1e-4, 1e-4));
    CHECK(first_mismatch(got_db, want_db, 1e-4, 1e-4).empty());
  }
}
#endif

int main(int argc, char* argv[]) {
  const seedrl::cuda::device_presence devices = seedrl::cuda::query_devices();
  // Listing needs no device: it shows, on any machine, which tests a GPU would run.
  bool listing = false;
  for (int i = 1; i < argc; ++i) {
    listing = listing || std::string(argv[i]).rfind("--list", 0) == 0;
  }
  if (listing) {
    return Catch::Session().run(argc, argv);
  }
  if (devices.count == 0) {
    std::printf("SKIP: no usable CUDA device (%s); the GPU tests need one\n",
                devices.reason.c_str());
    return 77;
  }
  const seedrl::cuda::device_info info = seedrl::cuda::get_device_info(0);
  std::printf("GPU tests on device 0: %s (sm_%d%d, %d SMs)\n", info.name.c_str(), info.major,
              info.minor, info.multiprocessors);
  return Catch::Session().run(argc, argv);
}
