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
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "../softsign_torso.hpp"
#include "../tiny_conv_stack.hpp"
#include "gpu_runners.hpp"
#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/algo/loss_choice.hpp"
#include "seedrl/algo/ppo_loss.hpp"
#include "seedrl/algo/r2d2_loss.hpp"
#include "seedrl/algo/vtrace.hpp"
#include "seedrl/backend/host_backend.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/cuda/device.cuh"
#include "seedrl/cuda/mlp_lstm_trainer.hpp"
#include "seedrl/cuda/pixel_lstm_trainer.hpp"
#include "seedrl/detail/lstm_math.hpp"
#include "seedrl/net/actor_critic_agent.hpp"
#include "seedrl/net/frame_stack.hpp"
#include "seedrl/net/impala_resnet_lstm_agent.hpp"
#include "seedrl/net/lstm.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"
#include "seedrl/net/nature_cnn_lstm_agent.hpp"
#include "seedrl/net/small_conv_lstm_agent.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/optim/rmsprop.hpp"
#include "seedrl/runtime/trainer.hpp"
#include "seedrl/train/actor_critic_recipe.hpp"

#if defined(SEEDRL_HAS_CUDNN)
#include "seedrl/cuda/cudnn_conv.cuh"
#include "seedrl/cuda/memory.cuh"
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

TEST_CASE("cuda lstm_stack: a step, an unroll and its backward match the CPU layer", "[cuda]") {
  // The one LSTM (detail::lstm_stack) on cuda_backend against seedrl::lstm, which runs it on
  // the host: every kernel of the backend path (the step's gather, the cells, the resets, the
  // end state, BPTT and the start-state gradient).
  const int I = 9, H = 40, L = 2, T = 6, B = 5;
  seedrl::lstm<float> net(seedrl::lstm_config{I, H, L, 1.0});
  std::vector<float> params(net.num_parameters()), grads(net.num_parameters(), 0.0f);
  net.bind(params.data(), grads.data());
  seedrl::random_generator rng(12);
  net.init(rng);
  const auto W = static_cast<std::size_t>(net.state_size());
  const auto x_step = random_floats(rng, B * static_cast<std::size_t>(I), -1, 1);
  const std::vector<std::uint8_t> resets{0, 1, 0, 0, 1};
  const auto state = random_floats(rng, B * W, -1, 1);
  const auto x = random_floats(rng, static_cast<std::size_t>(T * B * I), -1, 1);
  std::vector<std::uint8_t> dones(static_cast<std::size_t>(T * B), 0);
  dones[0] = dones[2 * B + 1] = dones[4 * B + 3] = 1;
  const auto start = random_floats(rng, B * W, -1, 1);
  const auto dy = random_floats(rng, static_cast<std::size_t>(T * B * H), -1, 1);
  const auto d_end = random_floats(rng, B * W, -1, 1);

  std::vector<float> want = state, y_step(static_cast<std::size_t>(B * H));
  net.step(seedrl::cview(x_step.data(), B, I), resets,
           seedrl::view(want.data(), B, static_cast<std::ptrdiff_t>(W)),
           seedrl::view(y_step.data(), B, H));
  std::vector<float> y(static_cast<std::size_t>(T * B * H)), end(B * W);
  auto end_view = seedrl::view(end.data(), B, static_cast<std::ptrdiff_t>(W));
  net.forward_unroll(T, B, seedrl::cview(x.data(), T * B, I), dones,
                     seedrl::cview(start.data(), B, static_cast<std::ptrdiff_t>(W)),
                     seedrl::view(y.data(), T * B, H), &end_view);
  std::vector<float> dx(x.size()), d_start(B * W);
  auto dx_view = seedrl::view(dx.data(), T * B, I);
  auto d_start_view = seedrl::view(d_start.data(), B, static_cast<std::ptrdiff_t>(W));
  const auto d_end_view = seedrl::cview(d_end.data(), B, static_cast<std::ptrdiff_t>(W));
  net.backward_unroll(seedrl::cview(dy.data(), T * B, H), &d_end_view, &dx_view, &d_start_view);
  for (const auto* part : {&y, &end, &grads, &dx, &d_start})
    want.insert(want.end(), part->begin(), part->end());

  const auto got = seedrl::test_gpu::lstm_stack_run(I, H, L, T, B, params, x_step, resets, state, x,
                                                    dones, start, dy, d_end);
  INFO(first_mismatch(got, want, 1e-5, 1e-4));
  CHECK(first_mismatch(got, want, 1e-5, 1e-4).empty());
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

// --- cuda::cuda_backend against host_backend ----------------------------------------------

namespace {

template <class S>
std::vector<S> random_scalars(seedrl::random_generator& rng, std::size_t n, double lo, double hi) {
  std::vector<S> v(n);
  for (S& x : v) {
    x = static_cast<S>(rng.uniform(lo, hi));
  }
  return v;
}

// One GEMM through both backends: A, B and C are sub-matrices of larger row-major buffers
// (row strides lda, ldb, ldc above the widths), C's block starts NaN when beta is 0 and C's
// padding holds a sentinel that both must leave alone.
template <class S>
void check_backend_gemm(bool ta, bool tb, int m, int n, int k, S alpha, S beta,
                        std::uint64_t seed) {
  CAPTURE(ta, tb, m, n, k, alpha, beta);
  seedrl::random_generator rng(seed);
  const int a_rows = ta ? k : m, a_cols = ta ? m : k;
  const int b_rows = tb ? n : k, b_cols = tb ? k : n;
  const int lda = a_cols + 3, ldb = b_cols + 2, ldc = n + 5;
  const auto a = random_scalars<S>(rng, static_cast<std::size_t>(a_rows) * lda, -1, 1);
  const auto b = random_scalars<S>(rng, static_cast<std::size_t>(b_rows) * ldb, -1, 1);
  std::vector<S> c(static_cast<std::size_t>(m) * ldc, S(7));
  for (int r = 0; r < m; ++r) {
    for (int j = 0; j < n; ++j) {
      c[static_cast<std::size_t>(r) * ldc + j] =
          beta == S(0) ? std::numeric_limits<S>::quiet_NaN() : static_cast<S>(rng.uniform(-1, 1));
    }
  }
  std::vector<S> want = c;
  seedrl::host_backend host;
  host.gemm(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, want.data(), ldc);
  const auto got =
      seedrl::test_gpu::backend_gemm<S>(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  // Sums of k products in [-1, 1] in another order; float GEMMs must not use TF32 (whose
  // 10-bit mantissa would miss this by orders of magnitude).
  const double abs = sizeof(S) == 4 ? 4e-7 * (k + 1) : 1e-13 * (k + 1);
  const double rel = sizeof(S) == 4 ? 1e-5 : 1e-12;
  INFO(first_mismatch(got, want, abs, rel));
  CHECK(first_mismatch(got, want, abs, rel).empty());
}

template <class S>
void check_backend_gemms() {
  std::uint64_t seed = 100;
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      check_backend_gemm<S>(ta, tb, 37, 29, 53, S(1), S(0), ++seed);
      check_backend_gemm<S>(ta, tb, 37, 29, 53, S(-0.75), S(1), ++seed);
      check_backend_gemm<S>(ta, tb, 5, 64, 33, S(1), S(0.5), ++seed);
      check_backend_gemm<S>(ta, tb, 300, 257, 129, S(1), S(1), ++seed);
      check_backend_gemm<S>(ta, tb, 1, 1, 1, S(2), S(0), ++seed);
    }
  }
  // k = 0 (and alpha = 0): C = beta C; beta = 0 clears NaN. m or n = 0: nothing happens.
  check_backend_gemm<S>(false, false, 6, 7, 0, S(1), S(0), ++seed);
  check_backend_gemm<S>(false, true, 6, 7, 0, S(1), S(0.5), ++seed);
  check_backend_gemm<S>(true, false, 6, 7, 4, S(0), S(0), ++seed);
  check_backend_gemm<S>(true, true, 6, 7, 4, S(0), S(-2), ++seed);
  check_backend_gemm<S>(false, false, 0, 7, 4, S(1), S(0), ++seed);
  check_backend_gemm<S>(false, false, 6, 0, 4, S(1), S(0), ++seed);
}

}  // namespace

TEST_CASE("cuda_backend gemm matches host_backend: all transposes, strided, beta 0 / 1 / k = 0",
          "[cuda][backend]") {
  SECTION("float") {
    check_backend_gemms<float>();
  }
  SECTION("double") {
    check_backend_gemms<double>();
  }
}

TEST_CASE("cuda_backend for_each runs a functor over every index like host_backend",
          "[cuda][backend]") {
  // The last size is past the elementwise grid's cap (65535 * 4 blocks of 256), so some
  // threads take a second turn of the grid-stride loop; it gets cheap inputs.
  const std::size_t big = std::size_t{256} * 65535 * 4 + 17;
  for (const std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{100003}, big}) {
    CAPTURE(n);
    seedrl::random_generator rng(n + 1);
    std::vector<float> x, y;
    if (n == big) {
      x.resize(n);
      y.resize(n);
      for (std::size_t i = 0; i < n; ++i) {
        x[i] = static_cast<float>(i % 1000) * 0.001f - 0.5f;
        y[i] = static_cast<float>(i % 997) * 0.002f - 1.0f;
      }
    } else {
      x = random_floats(rng, n, -1, 1);
      y = random_floats(rng, n, -1, 1);
    }
    std::vector<float> want = y;
    seedrl::host_backend host;
    host.for_each(n, seedrl::test_gpu::axpy_body{0.375f, x.data(), want.data()});
    const auto got = seedrl::test_gpu::backend_for_each_axpy(0.375f, x, y);
    // Only a contracted multiply-add may round differently.
    INFO(first_mismatch(got, want, 1e-6, 1e-6));
    CHECK(first_mismatch(got, want, 1e-6, 1e-6).empty());
  }
}

TEST_CASE("cuda_backend allocate zeroes, fill and copy", "[cuda][backend]") {
  const std::size_t n = 1000, offset = 10, count = 977;
  const auto check = [&](const auto& got, auto value) {
    using T = decltype(value);
    REQUIRE(got.size() == n);
    for (std::size_t i = 0; i < n; ++i) {
      const bool inside = i >= offset && i < offset + count;
      const T want = inside ? value : T{};
      if (std::memcmp(&got[i], &want, sizeof(T)) != 0) {
        FAIL("element " << i << " is " << +got[i] << ", expected " << +want);
      }
    }
  };
  check(seedrl::test_gpu::backend_fill<float>(n, offset, count, 2.5f), 2.5f);
  check(seedrl::test_gpu::backend_fill<float>(n, offset, count, -0.0f),
        -0.0f);                                                                // not all zero bytes
  check(seedrl::test_gpu::backend_fill<float>(n, offset, count, 0.0f), 0.0f);  // the memset path
  check(seedrl::test_gpu::backend_fill<std::int32_t>(n, offset, count, -3), std::int32_t{-3});
  check(seedrl::test_gpu::backend_fill<std::uint8_t>(n, offset, count, 255), std::uint8_t{255});
  CHECK(seedrl::test_gpu::backend_fill<float>(0, 0, 0, 1.0f).empty());
}

TEST_CASE("cuda_backend sum_of_squares matches a double loop and is deterministic",
          "[cuda][backend]") {
  for (const std::size_t n :
       {std::size_t{0}, std::size_t{1}, std::size_t{1000}, (std::size_t{1} << 20) + 3}) {
    CAPTURE(n);
    seedrl::random_generator rng(n + 7);
    const auto xf = random_scalars<float>(rng, n, -3, 3);
    const auto xd = random_scalars<double>(rng, n, -3, 3);
    double want_f = 0.0, want_d = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      want_f += static_cast<double>(xf[i]) * static_cast<double>(xf[i]);
      want_d += xd[i] * xd[i];
    }
    const double got_f = seedrl::test_gpu::backend_sum_of_squares(xf);
    const double got_d = seedrl::test_gpu::backend_sum_of_squares(xd);
    // Positive terms summed in double in two orders: rounding only.
    CHECK(got_f == Approx(want_f).epsilon(1e-11).margin(0));
    CHECK(got_d == Approx(want_d).epsilon(1e-11).margin(0));
    CHECK(seedrl::host_backend{}.sum_of_squares(xf.data(), n) == want_f);
    // Same input, same bits.
    CHECK(seedrl::test_gpu::backend_sum_of_squares(xf) == got_f);
    CHECK(seedrl::test_gpu::backend_sum_of_squares(xd) == got_d);
  }
}

TEST_CASE("cuda_backend sums matches host_backend's and is deterministic", "[cuda][backend]") {
  for (const std::size_t n :
       {std::size_t{0}, std::size_t{1}, std::size_t{777}, std::size_t{300001}}) {
    CAPTURE(n);
    seedrl::random_generator rng(n + 11);
    const std::size_t arrays = 3;
    const auto x = random_scalars<double>(rng, arrays * n, -3, 3);
    std::vector<double> want(arrays);
    seedrl::host_backend{}.sums(x.data(), arrays, n, std::span<double>(want));
    const auto got = seedrl::test_gpu::backend_sums(x, arrays, n);
    REQUIRE(got.size() == arrays);
    for (std::size_t a = 0; a < arrays; ++a) {
      double bound = 0.0;  // rounding of a differently ordered sum
      for (std::size_t i = 0; i < n; ++i)
        bound += std::abs(x[a * n + i]);
      CHECK(std::abs(got[a] - want[a]) <= 1e-13 * bound + 1e-300);
    }
    CHECK(seedrl::test_gpu::backend_sums(x, arrays, n) == got);  // same input, same bits
  }
}

namespace {

/// Random loss inputs: logits in [-3, 3], values in [-2, 2], log mu in [-3, -0.1], rewards in
/// [-2, 2], a done with probability `done_share`, half of the episode ends time limits.
seedrl::test_gpu::loss_arrays random_loss_arrays(seedrl::random_generator& rng, int T, int B, int A,
                                                 double done_share) {
  seedrl::test_gpu::loss_arrays d;
  d.T = T;
  d.B = B;
  d.A = A;
  const std::size_t steps = static_cast<std::size_t>(T + 1) * B;
  d.logits = random_floats(rng, steps * A, -3, 3);
  d.values = random_floats(rng, steps, -2, 2);
  d.behaviour_log_probs = random_floats(rng, steps, -3, -0.1);
  d.rewards = random_floats(rng, steps, -2, 2);
  d.actions.resize(steps);
  d.dones.resize(steps);
  d.truncated.resize(steps);
  for (std::size_t i = 0; i < steps; ++i) {
    d.actions[i] = static_cast<std::int32_t>(rng() % A);
    d.dones[i] = rng.uniform() < done_share ? 1 : 0;
    d.truncated[i] = d.dones[i] != 0 && rng.uniform() < 0.5 ? 1 : 0;
  }
  return d;
}

/// `d` as the CPU losses' batch: impala_batch's fields (ppo_batch has them too), then PPO's.
template <class Batch>
Batch cpu_batch(const seedrl::test_gpu::loss_arrays& d) {
  Batch batch;
  batch.T = static_cast<std::size_t>(d.T);
  batch.B = static_cast<std::size_t>(d.B);
  batch.num_actions = static_cast<std::size_t>(d.A);
  batch.logits = d.logits;
  batch.values = d.values;
  batch.actions = d.actions;
  batch.behaviour_log_probs = d.behaviour_log_probs;
  batch.rewards = d.rewards;
  batch.dones = d.dones;
  batch.truncated = d.truncated;
  if constexpr (requires { batch.old_values = d.old_values; }) {
    batch.old_values = d.old_values;
    batch.proximal_logits = d.proximal_logits;
  }
  return batch;
}

/// The GPU's gradients and terms against the CPU's: float rounding of other summation orders.
void check_same_loss(const seedrl::loss_terms& got, const seedrl::loss_terms& want,
                     const std::vector<float>& gl, const std::vector<float>& want_gl,
                     const std::vector<float>& gv, const std::vector<float>& want_gv) {
  INFO(first_mismatch(gl, want_gl, 1e-7, 1e-4));
  CHECK(first_mismatch(gl, want_gl, 1e-7, 1e-4).empty());
  INFO(first_mismatch(gv, want_gv, 1e-7, 1e-4));
  CHECK(first_mismatch(gv, want_gv, 1e-7, 1e-4).empty());
  CHECK(got.policy == Approx(want.policy).epsilon(1e-4).margin(1e-6));
  CHECK(got.baseline == Approx(want.baseline).epsilon(1e-4).margin(1e-6));
  CHECK(got.entropy == Approx(want.entropy).epsilon(1e-4).margin(1e-8));
  CHECK(got.total == Approx(want.total).epsilon(1e-4).margin(1e-6));
}

}  // namespace

TEST_CASE("impala_loss::compute on cuda_backend matches the CPU loss, with and without clipping",
          "[cuda][backend]") {
  seedrl::random_generator rng(77);
  const auto d = random_loss_arrays(rng, 19, 7, 5, 0.15);
  seedrl::impala_loss_config<float> clipped;
  clipped.entropy_cost = 0.01f;
  clipped.max_abs_reward = 1.0f;
  seedrl::impala_loss_config<float> unclipped;
  unclipped.clip_rho_threshold = std::nullopt;
  unclipped.clip_pg_rho_threshold = std::nullopt;
  unclipped.lambda = 0.9f;
  unclipped.discount = 0.97f;
  unclipped.baseline_cost = 0.25f;
  seedrl::impala_loss_config<float> mixed;
  mixed.clip_rho_threshold = 2.0f;
  mixed.clip_pg_rho_threshold = 0.5f;
  mixed.max_abs_reward = 0.5f;
  const seedrl::impala_loss_config<float> configs[] = {clipped, unclipped, mixed};
  for (std::size_t which = 0; which < 3; ++which) {
    CAPTURE(which);
    const seedrl::impala_loss_config<float>& config = configs[which];
    // The CPU loss: the same impala_loss::compute on the host.
    std::vector<float> want_gl(d.logits.size()), want_gv(d.values.size());
    seedrl::impala_gradients<float> grads{want_gl, want_gv};
    const seedrl::loss_terms want =
        seedrl::impala_loss<float>(config)(cpu_batch<seedrl::impala_batch<float>>(d), grads);
    std::vector<float> gl, gv;
    const seedrl::loss_terms got = seedrl::test_gpu::backend_impala_loss(config, d, gl, gv);
    check_same_loss(got, want, gl, want_gl, gv, want_gv);
  }
}

TEST_CASE("r2d2_loss::compute on cuda_backend matches the CPU loss: targets, burn-in, priorities",
          "[cuda][backend]") {
  seedrl::random_generator rng(131);
  auto d = random_loss_arrays(rng, 23, 6, 5, 0.15);  // terminations and truncations
  d.target_logits = d.logits;
  for (float& x : d.target_logits)
    x += static_cast<float>(rng.uniform(-0.5, 0.5));
  d.target_values = d.values;
  for (float& x : d.target_values)
    x += static_cast<float>(rng.uniform(-0.5, 0.5));
  for (int b = 0; b < d.B; ++b)
    d.importance_weights.push_back(static_cast<float>(rng.uniform(0.1, 1.0)));
  seedrl::r2d2_loss_config<float> config;
  config.burn_in = 7;
  config.n_step = 4;
  config.discount = 0.95f;
  seedrl::r2d2_loss_config<float> plain = config;
  plain.value_rescaling = false;
  plain.burn_in = 0;
  for (const auto& c : {config, plain}) {
    CAPTURE(c.burn_in);
    std::vector<float> want_gl(d.logits.size()), want_gv(d.values.size());
    std::vector<double> want_priorities(static_cast<std::size_t>(d.B));
    seedrl::r2d2_gradients<float> grads{want_gl, want_gv, want_priorities};
    const seedrl::r2d2_batch<float> cpu{static_cast<std::size_t>(d.T),
                                        static_cast<std::size_t>(d.B),
                                        static_cast<std::size_t>(d.A),
                                        d.logits,
                                        d.values,
                                        d.target_logits,
                                        d.target_values,
                                        d.actions,
                                        d.rewards,
                                        d.dones,
                                        d.truncated,
                                        d.importance_weights,
                                        c.burn_in};
    const seedrl::loss_terms want = seedrl::r2d2_loss<float>(c)(cpu, grads);
    std::vector<float> gl, gv;
    std::vector<double> priorities;
    const seedrl::loss_terms got = seedrl::test_gpu::backend_r2d2_loss(c, d, gl, gv, priorities);
    check_same_loss(got, want, gl, want_gl, gv, want_gv);
    CHECK(got.q_value == Approx(want.q_value).epsilon(1e-4).margin(1e-6));
    for (std::size_t b = 0; b < priorities.size(); ++b)
      CHECK(priorities[b] == Approx(want_priorities[b]).epsilon(1e-4).margin(1e-6));
  }
}

TEST_CASE("ppo_loss::compute on cuda_backend matches the CPU loss: GAE, V-trace, clips",
          "[cuda][backend]") {
  seedrl::random_generator rng(91);
  auto d = random_loss_arrays(rng, 17, 6, 4, 0.15);
  d.proximal_logits = d.logits;
  for (float& x : d.proximal_logits)  // the proximal policy a little apart
    x += static_cast<float>(rng.uniform(-0.3, 0.3));
  d.old_values = d.values;
  for (float& x : d.old_values)
    x += static_cast<float>(rng.uniform(-0.5, 0.5));
  seedrl::ppo_loss_config<float> gae;
  gae.value_clip = 0.2f;
  gae.normalize_advantages = true;
  gae.entropy_cost = 0.01f;
  seedrl::ppo_loss_config<float> vtrace = gae;
  vtrace.advantage = seedrl::ppo_advantage::vtrace;
  vtrace.value_clip.reset();
  vtrace.proximal_weight_clip.reset();
  const double step = 1.0 / static_cast<double>(d.values.size());
  for (const bool proximal : {true, false}) {
    for (const auto& config : {gae, vtrace}) {
      CAPTURE(proximal, static_cast<int>(config.advantage));
      seedrl::test_gpu::loss_arrays run = d;
      if (!proximal) {
        run.proximal_logits.clear();
        if (!config.value_clip)
          run.old_values.clear();
      }
      std::vector<float> want_gl(d.logits.size()), want_gv(d.values.size());
      seedrl::impala_gradients<float> grads{want_gl, want_gv};
      const seedrl::loss_terms want =
          seedrl::ppo_loss<float>(config)(cpu_batch<seedrl::ppo_batch<float>>(run), grads);
      std::vector<float> gl, gv;
      const seedrl::loss_terms got = seedrl::test_gpu::backend_ppo_loss(config, run, gl, gv);
      check_same_loss(got, want, gl, want_gl, gv, want_gv);
      CHECK(got.approx_kl == Approx(want.approx_kl).epsilon(1e-4).margin(1e-7));
      // A ratio within rounding of the clip edge may count on one side only: one step's worth.
      CHECK(got.clip_fraction == Approx(want.clip_fraction).margin(1.5 * step));
      CHECK(got.behaviour_clip_fraction == Approx(want.behaviour_clip_fraction).margin(1.5 * step));
    }
  }
}

// --- cuda_backend convolutions against host_backend -----------------------------------------

namespace {

// max |want| over the array, at least 1e-30.
template <class S>
double magnitude(const std::vector<S>& v) {
  double m = 1e-30;
  for (const S x : v) {
    m = std::max(m, std::abs(static_cast<double>(x)));
  }
  return m;
}

// cuda_backend's conv2d (cuDNN, or im2col + cuBLAS without it) against host_backend's on the
// same random inputs: y, dx, and dw / dbias added to random prefills, with and without dx.
template <class S>
void check_backend_conv2d(const seedrl::conv2d_shape& s, std::uint64_t seed) {
  CAPTURE(s.batch, s.in_channels, s.input_height, s.input_width, s.out_channels, s.kernel_h,
          s.kernel_w, s.stride_h, s.stride_w, s.padding_h, s.padding_w);
  const auto n = static_cast<std::size_t>(s.batch);
  const auto in = static_cast<std::size_t>(s.in_channels * s.input_height * s.input_width);
  const auto out = static_cast<std::size_t>(s.out_channels * s.output_height() * s.output_width());
  const auto nw =
      static_cast<std::size_t>(s.out_channels * s.in_channels * s.kernel_h * s.kernel_w);
  const auto no = static_cast<std::size_t>(s.out_channels);
  seedrl::random_generator rng(seed);
  const auto x = random_scalars<S>(rng, n * in, -1, 1);
  const auto w = random_scalars<S>(rng, nw, -1, 1);
  const auto bias = random_scalars<S>(rng, no, -1, 1);
  const auto dy = random_scalars<S>(rng, n * out, -1, 1);
  const auto dw0 = random_scalars<S>(rng, nw, 0.5, 1.5);
  const auto dbias0 = random_scalars<S>(rng, no, -1.5, -0.5);
  seedrl::host_backend host;
  const S nan = std::numeric_limits<S>::quiet_NaN();
  std::vector<S> y(n * out, nan), dx(n * in, nan), dw = dw0, dbias = dbias0;
  host.conv2d_forward(s, x.data(), w.data(), bias.data(), y.data());
  host.conv2d_backward(s, x.data(), w.data(), dy.data(), dx.data(), dw.data(), dbias.data());
  const auto got = seedrl::test_gpu::backend_conv2d<S>(s, x, w, bias, dy, dw0, dbias0);
  // Float: sums of up to a few thousand products in another order (plain FMA math, no TF32,
  // whose 10-bit mantissa would miss by ~1e-3); double: rounding only.
  const double tol = sizeof(S) == 4 ? 1e-4 : 1e-10;
  const auto check = [&](const char* what, const std::vector<S>& g, const std::vector<S>& want) {
    const std::string m = first_mismatch(g, want, tol * magnitude(want), tol);
    INFO(what << ": " << m);
    CHECK(m.empty());
  };
  check("y", got.y, y);
  check("dx", got.dx, dx);
  check("dw", got.dw, dw);
  check("dbias", got.dbias, dbias);
  // Without dx: the same parameter gradients.
  check("dw (dx == nullptr)", got.dw_no_dx, dw);
  check("dbias (dx == nullptr)", got.dbias_no_dx, dbias);
}

std::vector<seedrl::conv2d_shape> backend_conv2d_shapes() {
  // batch, C, H, W, O, KH, KW, SH, SW, PH, PW
  return {{3, 4, 36, 36, 8, 8, 8, 4, 4, 0, 0},     // Nature CNN 8x8/4 on small frames
          {2, 4, 44, 52, 8, 8, 8, 4, 4, 0, 0},     // the same, non-square
          {3, 8, 8, 8, 16, 4, 4, 2, 2, 0, 0},      // Nature CNN 4x4/2
          {3, 16, 5, 5, 8, 3, 3, 1, 1, 0, 0},      // Nature CNN 3x3/1
          {4, 5, 9, 7, 6, 3, 3, 1, 1, 1, 1},       // ResNet / IMPALA 3x3 padding 1
          {2, 16, 12, 12, 16, 3, 3, 1, 1, 1, 1},   // the same, as in a residual block
          {3, 6, 5, 7, 4, 1, 1, 1, 1, 0, 0},       // 1x1 kernel
          {2, 3, 10, 13, 5, 5, 3, 2, 1, 2, 1},     // non-square kernel, mixed stride and padding
          {1, 1, 3, 3, 1, 5, 5, 1, 1, 1, 1},       // one channel, kernel = padded image
          {32, 4, 84, 84, 32, 8, 8, 4, 4, 0, 0}};  // Nature CNN's first layer on Atari frames
}

}  // namespace

TEST_CASE("cuda_backend conv2d forward and backward match host_backend", "[cuda][backend]") {
  std::uint64_t seed = 300;
  SECTION("float") {
    for (const seedrl::conv2d_shape& s : backend_conv2d_shapes()) {
      check_backend_conv2d<float>(s, ++seed);
    }
  }
  SECTION("double") {
    for (const seedrl::conv2d_shape& s : backend_conv2d_shapes()) {
      check_backend_conv2d<double>(s, ++seed);
    }
  }
}

TEST_CASE("cuda_backend conv2d: batch 0 leaves the gradients alone, bad shapes are refused",
          "[cuda][backend]") {
  const seedrl::conv2d_shape zero{0, 3, 9, 7, 4, 3, 3, 1, 1, 1, 1};
  const std::vector<float> dw0(4 * 3 * 3 * 3, 1.5f), dbias0(4, 2.5f);
  const auto got = seedrl::test_gpu::backend_conv2d<float>(zero, {}, std::vector<float>(dw0.size()),
                                                           std::vector<float>(4), {}, dw0, dbias0);
  CHECK(got.y.empty());
  CHECK(got.dx.empty());
  CHECK(got.dw == dw0);
  CHECK(got.dbias == dbias0);
  CHECK(got.dw_no_dx == dw0);
  CHECK(got.dbias_no_dx == dbias0);

  const seedrl::conv2d_shape base{2, 3, 9, 7, 4, 3, 3, 1, 1, 1, 1};
  auto bad = base;
  bad.stride_w = 0;
  CHECK(seedrl::test_gpu::backend_conv2d_refuses(bad));
  bad = base;
  bad.padding_h = -1;
  CHECK(seedrl::test_gpu::backend_conv2d_refuses(bad));
  bad = base;
  bad.kernel_h = 12;  // 9 + 2 padded rows
  CHECK(seedrl::test_gpu::backend_conv2d_refuses(bad));
  bad = base;
  bad.batch = -1;
  CHECK(seedrl::test_gpu::backend_conv2d_refuses(bad));
  bad = base;
  bad.in_channels = 2;  // 2 x 2^15 x 2^15 = 2^31 input elements
  bad.input_height = 1 << 15;
  bad.input_width = 1 << 15;
  bad.batch = 1;
  CHECK(seedrl::test_gpu::backend_conv2d_refuses(bad));
}

// --- cuda::mlp_lstm_trainer against host_trainer + mlp_lstm_agent -----------------------------

static_assert(seedrl::Trainer<seedrl::cuda::mlp_lstm_trainer<float>, seedrl::mlp_lstm_agent<float>,
                              seedrl::adam<float>>);
static_assert(seedrl::Trainer<seedrl::cuda::mlp_lstm_trainer<float>, seedrl::mlp_lstm_agent<float>,
                              seedrl::rmsprop<float>>);

namespace {

// A random batch of B unrolls of T+1 steps with episode ends (also at step 0, so that the start
// state is reset for some environments) and a random start state.
struct owned_batch {
  std::vector<float> observations, rewards, behaviour_log_probs, start_state;
  std::vector<std::uint8_t> dones, truncated;
  std::vector<std::int32_t> prev_actions, actions;
  std::vector<float> prev_env_actions, raw_actions;  // continuous actions: D per row
  seedrl::training_batch<float> view;

  owned_batch(const seedrl::mlp_lstm_agent<float>& net, std::size_t T, std::size_t B,
              std::uint64_t seed) {
    seedrl::random_generator rng(seed);
    const std::size_t rows = (T + 1) * B;
    const auto A = static_cast<std::size_t>(net.num_actions());
    const auto obs = static_cast<std::size_t>(net.config().observation_size);
    observations = random_floats(rng, rows * obs, -1, 1);
    rewards = random_floats(rng, rows, -1.5, 1.5);
    behaviour_log_probs = random_floats(rng, rows, -2.5, -0.05);
    start_state = random_floats(rng, B * static_cast<std::size_t>(net.state_size()), -0.5, 0.5);
    dones.resize(rows);
    truncated.resize(rows);
    prev_actions.resize(rows);
    actions.resize(rows);
    for (std::size_t i = 0; i < rows; ++i) {
      dones[i] = rng.uniform() < 0.12 ? 1 : 0;
      prev_actions[i] = static_cast<std::int32_t>(rng() % A);
      actions[i] = static_cast<std::int32_t>(rng() % A);
    }
    for (std::size_t i = 0; i < rows; ++i) {  // some episode ends are time limits
      truncated[i] = dones[i] != 0 && rng.uniform() < 0.5 ? 1 : 0;
    }
    view.T = T;
    view.B = B;
    view.num_actions = A;
    view.observations = observations;
    view.rewards = rewards;
    view.dones = dones;
    view.truncated = truncated;
    view.prev_actions = prev_actions;
    view.actions = actions;
    view.behaviour_log_probs = behaviour_log_probs;
    view.start_state = start_state;
    const auto D = static_cast<std::size_t>(net.config().continuous_action_size);
    if (D > 0) {  // drawn last: a discrete batch's draws stay what they were
      prev_env_actions = random_floats(rng, rows * D, -1.5, 1.5);
      raw_actions = random_floats(rng, rows * D, -1.5, 1.5);
      view.action_dim = D;
      view.prev_env_actions = prev_env_actions;
      view.raw_actions = raw_actions;
    }
  }
};

template <class T>
std::vector<float> to_vector(std::span<T> s) {
  return std::vector<float>(s.begin(), s.end());
}

// Optimizer arrays agree when every element is within abs = scale * max |want| + rel * |want|:
// moments of near-zero gradients carry the gradients' absolute rounding, not a relative one.
std::string state_mismatch(std::span<const float> got, std::span<const float> want, double scale,
                           double rel) {
  double max_abs = 0.0;
  for (const float w : want) {
    max_abs = std::max(max_abs, std::abs(static_cast<double>(w)));
  }
  return first_mismatch(to_vector(got), to_vector(want), scale * max_abs, rel);
}

void check_state(const seedrl::adam<float>& got, const seedrl::adam<float>& want) {
  CHECK(got.step_count() == want.step_count());
  INFO("m: " << state_mismatch(got.first_moment(), want.first_moment(), 1e-4, 1e-3));
  CHECK(state_mismatch(got.first_moment(), want.first_moment(), 1e-4, 1e-3).empty());
  INFO("v: " << state_mismatch(got.second_moment(), want.second_moment(), 1e-4, 1e-3));
  CHECK(state_mismatch(got.second_moment(), want.second_moment(), 1e-4, 1e-3).empty());
}

void check_state(const seedrl::rmsprop<float>& got, const seedrl::rmsprop<float>& want) {
  CHECK(got.step_count() == want.step_count());
  INFO("v: " << state_mismatch(got.mean_square(), want.mean_square(), 1e-4, 1e-3));
  CHECK(state_mismatch(got.mean_square(), want.mean_square(), 1e-4, 1e-3).empty());
  REQUIRE(got.momentum_buffer().size() == want.momentum_buffer().size());
  INFO("buf: " << state_mismatch(got.momentum_buffer(), want.momentum_buffer(), 1e-4, 1e-3));
  CHECK(state_mismatch(got.momentum_buffer(), want.momentum_buffer(), 1e-4, 1e-3).empty());
}

// Trains two identical networks, one with host_trainer on the CPU and one with
// cuda::mlp_lstm_trainer, on the same random batches, and compares what each step reports,
// the parameters after steps 1 and 3, and the optimizer state that sync_to_host brings back;
// then reloads the GPU from the synced host objects and compares one more step.
//
// Tolerances: the GPU sums GEMMs in another order (cuBLAS, no TF32) and splits the LSTM's
// products into input and recurrent parts, so activations and gradients differ by float
// rounding (~1e-6 relative). The loss terms and the gradient norm inherit that. A parameter
// moves by lr * m / (sqrt(v) + eps): for a gradient much larger than eps that is ~lr * sign(g),
// insensitive to rounding, but near g = 0 its sensitivity is lr / eps; the Adam tests use
// eps = 1e-5 (not 1e-8) so that a rounding difference of 1e-8 in a vanishing gradient moves a
// parameter by at most ~1e-6 instead of ~lr.
template <class Opt, class Loss>
void compare_training_with(const seedrl::mlp_lstm_agent_config& config,
                           const typename Opt::config_type& opt_config, const Loss& loss,
                           std::size_t T, std::size_t B, double max_grad_norm, std::uint64_t seed) {
  seedrl::mlp_lstm_agent<float> cpu_net(config), gpu_net(config);
  Opt cpu_opt(opt_config), gpu_opt(opt_config);
  seedrl::host_trainer cpu;
  seedrl::cuda::mlp_lstm_trainer<float> gpu;
  const double p_abs = 1e-5, p_rel = 1e-4;
  for (int step = 1; step <= 4; ++step) {
    CAPTURE(step);
    if (step == 4) {
      // The GPU's state, through the host objects and back: what a checkpoint and a resume do.
      gpu.sync_to_host(gpu_net, gpu_opt);
      {
        INFO("synced parameters: " << first_mismatch(
                 to_vector(gpu_net.parameters()), to_vector(cpu_net.parameters()), p_abs, p_rel));
        CHECK(first_mismatch(to_vector(gpu_net.parameters()), to_vector(cpu_net.parameters()),
                             p_abs, p_rel)
                  .empty());
      }
      check_state(gpu_opt, cpu_opt);
      gpu.load_from_host(gpu_net, gpu_opt);
    }
    const owned_batch batch(cpu_net, T, B, seed + static_cast<std::uint64_t>(step));
    const seedrl::train_step_result want =
        cpu.train_step(batch.view, cpu_net, cpu_opt, loss, max_grad_norm);
    const seedrl::train_step_result got =
        gpu.train_step(batch.view, gpu_net, gpu_opt, loss, max_grad_norm);
    REQUIRE(want.applied);
    CHECK(got.applied);
    CHECK(got.skipped.empty());
    CHECK(got.terms.policy == Approx(want.terms.policy).epsilon(1e-4).margin(1e-6));
    CHECK(got.terms.baseline == Approx(want.terms.baseline).epsilon(1e-4).margin(1e-6));
    CHECK(got.terms.entropy == Approx(want.terms.entropy).epsilon(1e-4).margin(1e-8));
    CHECK(got.terms.total == Approx(want.terms.total).epsilon(1e-4).margin(1e-6));
    CHECK(got.grad_norm == Approx(want.grad_norm).epsilon(1e-4));
    CHECK(got.learning_rate == Approx(want.learning_rate).epsilon(1e-12));
    if (step == 1 || step >= 3) {
      INFO("parameters: " << first_mismatch(to_vector(gpu_net.parameters()),
                                            to_vector(cpu_net.parameters()), p_abs, p_rel));
      CHECK(first_mismatch(to_vector(gpu_net.parameters()), to_vector(cpu_net.parameters()), p_abs,
                           p_rel)
                .empty());
    }
  }
  gpu.sync_to_host(gpu_net, gpu_opt);
  check_state(gpu_opt, cpu_opt);
}

/// compare_training with IMPALA's loss.
template <class Opt>
void compare_training(const seedrl::mlp_lstm_agent_config& config,
                      const typename Opt::config_type& opt_config,
                      const seedrl::impala_loss_config<float>& loss_config, std::size_t T,
                      std::size_t B, double max_grad_norm, std::uint64_t seed) {
  compare_training_with<Opt>(config, opt_config, seedrl::impala_loss<float>(loss_config), T, B,
                             max_grad_norm, seed);
}

seedrl::adam_config test_adam() {
  seedrl::adam_config c;
  c.learning_rate = 1e-3;
  c.epsilon = 1e-5;  // see compare_training
  c.lr_decay_steps = 100;
  return c;
}

}  // namespace

TEST_CASE("cuda mlp_lstm_trainer: CartPole-sized net with Adam matches host_trainer",
          "[cuda][trainer]") {
  seedrl::mlp_lstm_agent_config config;  // obs 4, hidden 64,64, LSTM 64, 2 actions
  config.seed = 5;
  seedrl::impala_loss_config<float> loss;
  loss.entropy_cost = 0.01f;
  compare_training<seedrl::adam<float>>(config, test_adam(), loss, 20, 8, 40.0, 1000);
}

TEST_CASE("cuda mlp_lstm_trainer: PPO's epochs x minibatches match host_trainer",
          "[cuda][trainer]") {
  // loss_choice, as a learner passes it: the same minibatches (both generators seeded 0), the
  // proximal outputs of one evaluate pass, ppo_loss::compute on cuda_backend.
  seedrl::mlp_lstm_agent_config config;  // obs 4, hidden 64,64, LSTM 64, 2 actions
  config.seed = 9;
  seedrl::ppo_loss_config<float> ppo;
  ppo.epochs = 2;
  ppo.minibatches = 2;
  ppo.value_clip = 0.2f;
  ppo.entropy_cost = 0.01f;
  compare_training_with<seedrl::adam<float>>(
      config, test_adam(), seedrl::loss_choice<float>(seedrl::ppo_loss<float>(ppo)), 20, 8, 40.0,
      2000);
}

TEST_CASE("cuda mlp_lstm_trainer: R2D2's target network and burn-in match host_trainer",
          "[cuda][trainer][r2d2]") {
  // The target network's forward pass with its own parameters on the device, the burn-in's
  // forward pass to the state reached, r2d2_loss::compute on cuda_backend. Period 3: steps 2
  // and 3 train against the step-1 copy; step 4 (after compare_training's reload from the host,
  // which starts the GPU's target afresh) copies on both.
  seedrl::mlp_lstm_agent_config config;  // obs 4, hidden 64,64, LSTM 64, 2 actions
  config.seed = 11;
  seedrl::r2d2_loss_config<float> r2d2;
  r2d2.burn_in = 4;
  r2d2.n_step = 3;
  r2d2.discount = 0.97f;
  r2d2.target_update_period = 3;
  compare_training_with<seedrl::adam<float>>(
      config, test_adam(), seedrl::loss_choice<float>(seedrl::r2d2_loss<float>(r2d2)), 20, 8, 40.0,
      3000);
}

TEST_CASE("cuda mlp_lstm_trainer: Gaussian policies and separate networks match host_trainer",
          "[cuda][trainer]") {
  // Continuous control's shape (SB3's layout: separate 64-64 policy and value networks, a
  // state-independent log-std, tanh squashing, PPO) and a state-dependent log-std behind an
  // LSTM with IMPALA; the losses over spec_distribution, as a learner passes them.
  using choice = seedrl::loss_choice<float, seedrl::spec_distribution<float>>;
  seedrl::spec_distribution<float> squash;
  squash.gaussian.squash = true;
  squash.gaussian.low = {-2.0f, -1.0f};
  squash.gaussian.high = {2.0f, 0.5f};
  seedrl::mlp_lstm_agent_config config;
  config.observation_size = 5;
  config.continuous_action_size = 2;
  config.num_actions = 4;
  config.lstm_size = 0;
  config.separate_value_network = true;
  config.log_std_init = -0.5;
  config.seed = 12;
  seedrl::ppo_loss_config<float> ppo;
  ppo.epochs = 2;
  ppo.minibatches = 2;
  ppo.normalize_advantages = true;
  ppo.entropy_cost = 0.001f;
  compare_training_with<seedrl::adam<float>>(
      config, test_adam(), choice(choice::ppo_type(ppo, squash)), 16, 8, 0.5, 4000);
  config.lstm_size = 32;
  config.separate_value_network = false;
  config.log_std_init.reset();
  seedrl::impala_loss_config<float> impala;
  impala.entropy_cost = 0.001f;
  compare_training_with<seedrl::adam<float>>(
      config, test_adam(), choice(choice::impala_type(impala, seedrl::spec_distribution<float>{})),
      10, 6, 40.0, 4100);
}

TEST_CASE("cuda agent_trainer: a user's torso written once over the backend matches host_trainer",
          "[cuda][trainer]") {
  // The part (test/softsign_torso.hpp) as a CPU agent (actor_critic_agent), trained by
  // host_trainer, and on cuda_backend by cuda::agent_trainer with the generic recipe.
  using part = seedrl_test::softsign_config;
  using agent =
      seedrl::actor_critic_agent<float, seedrl_test::softsign_torso<seedrl::host_backend, float>,
                                 part>;
  const part shape{5, 16};
  const auto make = [&] {
    seedrl::backend_core_config core;
    core.num_actions = 3;
    core.lstm_size = 12;
    return agent({.seed = 2}, core, shape);
  };
  agent cpu_net = make(), gpu_net = make();
  seedrl::adam<float> cpu_opt(test_adam()), gpu_opt(test_adam());
  seedrl::host_trainer cpu;
  seedrl::cuda::agent_trainer<float, seedrl::actor_critic_recipe<seedrl_test::softsign_torso, part>>
      gpu;
  seedrl::impala_loss_config<float> loss;
  loss.entropy_cost = 0.01f;
  const seedrl::impala_loss<float> impala(loss);
  seedrl::random_generator rng(31);
  const std::size_t T = 8, B = 4, rows = (T + 1) * B;
  for (int step = 0; step < 3; ++step) {
    CAPTURE(step);
    const auto obs = random_floats(rng, rows * 5, -2, 2), rewards = random_floats(rng, rows, -1, 1);
    const auto behaviour = random_floats(rng, rows, -2.0, -0.1);
    const auto start =
        random_floats(rng, B * static_cast<std::size_t>(cpu_net.state_size()), -0.5, 0.5);
    std::vector<std::uint8_t> dones(rows), truncated(rows, 0);
    std::vector<std::int32_t> prev(rows), actions(rows);
    for (std::size_t i = 0; i < rows; ++i) {
      dones[i] = rng.uniform() < 0.1 ? 1 : 0;
      prev[i] = static_cast<std::int32_t>(rng() % 3);
      actions[i] = static_cast<std::int32_t>(rng() % 3);
    }
    const seedrl::training_batch<float> batch{T,         B,    3,       obs,       rewards, dones,
                                              truncated, prev, actions, behaviour, start};
    const auto want = cpu.train_step(batch, cpu_net, cpu_opt, impala, 40.0);
    const auto got = gpu.train_step(batch, gpu_net, gpu_opt, impala, 40.0);
    CHECK(got.terms.total == Approx(want.terms.total).epsilon(1e-4).margin(1e-6));
    CHECK(got.grad_norm == Approx(want.grad_norm).epsilon(1e-4));
    CHECK(
        first_mismatch(to_vector(gpu_net.parameters()), to_vector(cpu_net.parameters()), 1e-5, 1e-4)
            .empty());
  }
}

TEST_CASE("cuda mlp_lstm_trainer: 2-layer LSTM with RMSProp and momentum matches host_trainer",
          "[cuda][trainer]") {
  seedrl::mlp_lstm_agent_config config;
  config.observation_size = 6;
  config.num_actions = 3;
  config.hidden_sizes = {32};
  config.lstm_size = 24;
  config.lstm_layers = 2;
  config.max_abs_input_reward = 1.0;
  config.seed = 6;
  seedrl::rmsprop_config opt;
  opt.learning_rate = 1e-3;
  opt.momentum = 0.9;
  seedrl::impala_loss_config<float> loss;
  loss.max_abs_reward = 1.0f;
  loss.clip_pg_rho_threshold = std::nullopt;
  compare_training<seedrl::rmsprop<float>>(config, opt, loss, 9, 5, 40.0, 2000);
}

TEST_CASE("cuda mlp_lstm_trainer: no LSTM, no reward/action inputs, RMSProp, clipped gradient",
          "[cuda][trainer]") {
  seedrl::mlp_lstm_agent_config config;
  config.observation_size = 5;
  config.num_actions = 4;
  config.hidden_sizes = {16, 8};
  config.lstm_size = 0;
  config.reward_and_action_inputs = false;
  config.seed = 7;
  seedrl::rmsprop_config opt;
  opt.learning_rate = 1e-3;
  seedrl::impala_loss_config<float> loss;
  loss.entropy_cost = 0.003f;
  // 1e-3 is far below this net's gradient norm, so every step clips.
  compare_training<seedrl::rmsprop<float>>(config, opt, loss, 7, 6, 1e-3, 3000);
  compare_training<seedrl::adam<float>>(config, test_adam(), loss, 7, 6, 1e-3, 3100);
}

TEST_CASE("cuda mlp_lstm_trainer: a non-finite gradient skips the update like host_trainer",
          "[cuda][trainer]") {
  seedrl::mlp_lstm_agent_config config;
  config.observation_size = 3;
  config.num_actions = 2;
  config.hidden_sizes = {8};
  config.lstm_size = 4;
  seedrl::mlp_lstm_agent<float> cpu_net(config), gpu_net(config);
  seedrl::adam<float> cpu_opt, gpu_opt;
  const seedrl::impala_loss<float> loss;
  seedrl::host_trainer cpu;
  seedrl::cuda::mlp_lstm_trainer<float> gpu;
  owned_batch batch(cpu_net, 4, 3, 9);
  batch.observations[5] = std::numeric_limits<float>::quiet_NaN();
  const auto before = to_vector(gpu_net.parameters());
  const auto want = cpu.train_step(batch.view, cpu_net, cpu_opt, loss, 40.0);
  const auto got = gpu.train_step(batch.view, gpu_net, gpu_opt, loss, 40.0);
  CHECK_FALSE(want.applied);
  CHECK_FALSE(got.applied);
  CHECK_FALSE(got.skipped.empty());
  CHECK(to_vector(gpu_net.parameters()) == before);
  gpu.sync_to_host(gpu_net, gpu_opt);
  CHECK(gpu_opt.step_count() == 0);
}

// --- cuda::pixel_lstm_trainer against host_trainer + frame_stacked<pixel agents> ------------

static_assert(seedrl::Trainer<seedrl::cuda::pixel_lstm_trainer<float>,
                              seedrl::frame_stacked<seedrl::nature_cnn_lstm_agent<float>>,
                              seedrl::adam<float>>);
static_assert(seedrl::Trainer<seedrl::cuda::pixel_lstm_trainer<float>,
                              seedrl::frame_stacked<seedrl::nature_cnn_lstm_agent<float>>,
                              seedrl::rmsprop<float>>);

/// Three training steps of cuda::pixel_lstm_trainer<float, TorsoConfig> against host_trainer on
/// frame_stacked<Agent> from the same parameters, 5 actions, T = 6, B = 4, with resets at t = 0
/// and mid-unroll and an environment reading its start state's frame history. Tolerances as
/// compare_training: float sums in another order (cuBLAS and cuDNN, no TF32).
template <class Agent, class TorsoConfig, class Loss>
void compare_pixel_trainer(const seedrl::frame_stack_config& stack,
                           const seedrl::pixel_lstm_agent_config<TorsoConfig>& agent,
                           const Loss& loss) {
  using net_t = seedrl::frame_stacked<Agent>;
  net_t cpu_net(stack, agent), gpu_net(stack, agent);
  seedrl::adam<float> cpu_opt(test_adam()), gpu_opt(test_adam());
  seedrl::host_trainer cpu;
  seedrl::cuda::pixel_lstm_trainer<float, TorsoConfig> gpu;
  const double p_abs = 1e-5, p_rel = 1e-4;
  const std::size_t T = 6, B = 4, rows = (T + 1) * B;
  const auto frame = static_cast<std::size_t>(cpu_net.frame_size());
  const auto history = static_cast<std::size_t>(cpu_net.history_size());
  const auto state = static_cast<std::size_t>(cpu_net.state_size());
  for (int step = 1; step <= 3; ++step) {
    CAPTURE(step);
    seedrl::random_generator rng(4000 + static_cast<std::uint64_t>(step));
    std::vector<float> observations(rows * frame), start(B * state);
    for (float& x : observations)
      x = static_cast<float>(rng() % 256);  // pixels, as the learner converts uint8 frames
    for (std::size_t b = 0; b < B; ++b) {
      for (std::size_t i = 0; i < state; ++i) {
        start[b * state + i] = i < history ? static_cast<float>(rng() % 256)
                                           : static_cast<float>(rng.uniform(-0.5, 0.5));
      }
    }
    const auto rewards = random_floats(rng, rows, -1.5, 1.5);
    const auto behaviour = random_floats(rng, rows, -2.5, -0.05);
    std::vector<std::uint8_t> dones(rows);
    std::vector<std::int32_t> prev_actions(rows), actions(rows);
    for (std::size_t i = 0; i < rows; ++i) {
      dones[i] = rng.uniform() < 0.15 ? 1 : 0;
      prev_actions[i] = static_cast<std::int32_t>(rng() % 5);
      actions[i] = static_cast<std::int32_t>(rng() % 5);
    }
    dones[0] = 1;              // environment 0 starts an episode at t = 0
    dones[1] = 0;              // environment 1 reads its start state's history
    dones[3 * B + B - 1] = 1;  // and the last one starts one mid-unroll
    std::vector<std::uint8_t> truncated(rows);
    truncated[3 * B + B - 1] = 1;  // ended by a time limit: that transition is cut
    const seedrl::training_batch<float> batch{
        T, B, 5, observations, rewards, dones, truncated, prev_actions, actions, behaviour, start};
    const auto want = cpu.train_step(batch, cpu_net, cpu_opt, loss, 40.0);
    const auto got = gpu.train_step(batch, gpu_net, gpu_opt, loss, 40.0);
    REQUIRE(want.applied);
    CHECK(got.applied);
    CHECK(got.terms.policy == Approx(want.terms.policy).epsilon(1e-4).margin(1e-6));
    CHECK(got.terms.baseline == Approx(want.terms.baseline).epsilon(1e-4).margin(1e-6));
    CHECK(got.terms.entropy == Approx(want.terms.entropy).epsilon(1e-4).margin(1e-8));
    CHECK(got.terms.total == Approx(want.terms.total).epsilon(1e-4).margin(1e-6));
    CHECK(got.grad_norm == Approx(want.grad_norm).epsilon(1e-4));
    CHECK(got.learning_rate == Approx(want.learning_rate).epsilon(1e-12));
    INFO("parameters: " << first_mismatch(to_vector(gpu_net.parameters()),
                                          to_vector(cpu_net.parameters()), p_abs, p_rel));
    CHECK(first_mismatch(to_vector(gpu_net.parameters()), to_vector(cpu_net.parameters()), p_abs,
                         p_rel)
              .empty());
  }
  gpu.sync_to_host(gpu_net, gpu_opt);
  check_state(gpu_opt, cpu_opt);
}

/// As above with IMPALA's loss (entropy cost 0.01).
template <class Agent, class TorsoConfig>
void compare_pixel_trainer(const seedrl::frame_stack_config& stack,
                           const seedrl::pixel_lstm_agent_config<TorsoConfig>& agent) {
  seedrl::impala_loss_config<float> loss_config;
  loss_config.entropy_cost = 0.01f;
  compare_pixel_trainer<Agent>(stack, agent, seedrl::impala_loss<float>(loss_config));
}

TEST_CASE("cuda pixel_lstm_trainer: small frame-stacked Nature CNN net matches host_trainer",
          "[cuda][trainer]") {
  // 44x52 frames of 2 channels, stacked 3 deep on the last axis (interleaved HWC, which the
  // agent reads as HWC), narrow convolutions: every kernel of the pixel step runs with
  // non-square outputs, and the frame history comes from the start state and the unroll.
  const seedrl::frame_stack_config stack{
      .height = 44, .width = 52, .channels = 2, .depth = 3, .channels_last = true};
  seedrl::nature_cnn_lstm_agent_config agent;
  agent.height = 44;
  agent.width = 52;
  agent.channels = 6;
  agent.channels_last = true;
  agent.num_actions = 5;
  agent.torso.channels = {8, 16, 8};
  agent.dense_size = 32;
  agent.lstm_size = 16;
  agent.seed = 8;
  compare_pixel_trainer<seedrl::nature_cnn_lstm_agent<float>>(stack, agent);
}

TEST_CASE("cuda pixel_lstm_trainer: R2D2's burn-in carries the frame history as host_trainer's",
          "[cuda][trainer][r2d2]") {
  // The burn-in's end state on the device: the LSTM's (h, c) and the frame history stepped
  // through the burn-in's frames, resets included.
  const seedrl::frame_stack_config stack{.height = 44, .width = 52, .channels = 1, .depth = 3};
  seedrl::nature_cnn_lstm_agent_config agent;
  agent.height = 44;
  agent.width = 52;
  agent.channels = 3;
  agent.num_actions = 5;
  agent.torso.channels = {8, 16, 8};
  agent.dense_size = 32;
  agent.lstm_size = 16;
  agent.seed = 12;
  seedrl::r2d2_loss_config<float> r2d2;
  r2d2.burn_in = 2;
  r2d2.n_step = 2;
  r2d2.target_update_period = 2;
  compare_pixel_trainer<seedrl::nature_cnn_lstm_agent<float>>(
      stack, agent, seedrl::loss_choice<float>(seedrl::r2d2_loss<float>(r2d2)));
}

static_assert(seedrl::Trainer<seedrl::cuda::pixel_lstm_trainer<float, seedrl::impala_resnet_config>,
                              seedrl::frame_stacked<seedrl::impala_resnet_lstm_agent<float>>,
                              seedrl::adam<float>>);

TEST_CASE("cuda pixel_lstm_trainer: small frame-stacked IMPALA ResNet net matches host_trainer",
          "[cuda][trainer]") {
  // 22x18 grayscale frames stacked 4 deep (CHW), two stacks with a residual block each and a
  // third without: cuDNN's 3x3 padding-1 convolutions, the pooling kernels (odd and even
  // sizes) and the residual sums all run.
  const seedrl::frame_stack_config stack{.height = 22, .width = 18, .channels = 1, .depth = 4};
  auto agent = seedrl::impala_resnet_lstm_agent_defaults();
  agent.height = 22;
  agent.width = 18;
  agent.channels = 4;
  agent.num_actions = 5;
  agent.torso.channels = {6, 8, 4};
  agent.torso.blocks_per_stack = 1;
  agent.dense_size = 32;
  agent.lstm_size = 16;
  agent.seed = 9;
  compare_pixel_trainer<seedrl::impala_resnet_lstm_agent<float>>(stack, agent);
}

TEST_CASE("cuda pixel_lstm_trainer: a user's own conv stack matches host_trainer",
          "[cuda][trainer]") {
  // test/tiny_conv_stack.hpp (one 3x3 convolution with tanh), plugged in through
  // backend_conv_stack: the same part on cuDNN and on the CPU.
  const seedrl::frame_stack_config stack{.height = 9, .width = 7, .channels = 1, .depth = 2};
  seedrl::pixel_lstm_agent_config<seedrl_test::tiny_conv_config> agent;
  agent.height = 9;
  agent.width = 7;
  agent.channels = 2;
  agent.num_actions = 5;
  agent.torso.out_channels = 4;
  agent.dense_size = 16;
  agent.lstm_size = 8;
  agent.seed = 10;
  compare_pixel_trainer<seedrl::pixel_lstm_agent<float, seedrl_test::tiny_conv<float>>>(stack,
                                                                                        agent);
}

static_assert(seedrl::Trainer<
              seedrl::cuda::pixel_lstm_trainer<float, seedrl::small_conv_torso_config>,
              seedrl::frame_stacked<seedrl::small_conv_lstm_agent<float>>, seedrl::adam<float>>);

TEST_CASE("cuda pixel_lstm_trainer: small conv stack on 10x10 frames matches host_trainer",
          "[cuda][trainer]") {
  // MinAtar-sized 10x10 frames: 4 channels unstacked and read as HWC (as seedrl_gym trains
  // them), padding 0 (10x10 -> 8x8 -> 6x6); then grayscale stacked 3 deep (CHW), padding 1
  // (cuDNN's 3x3 padding-1 convolutions at every border) with three convolutions.
  for (const std::ptrdiff_t padding : {0, 1}) {
    CAPTURE(padding);
    const std::ptrdiff_t channels = padding == 0 ? 4 : 1, depth = padding == 0 ? 1 : 3;
    const seedrl::frame_stack_config stack{.height = 10,
                                           .width = 10,
                                           .channels = channels,
                                           .depth = depth,
                                           .channels_last = padding == 0};
    seedrl::small_conv_lstm_agent_config agent;
    agent.height = 10;
    agent.width = 10;
    agent.channels = channels * depth;
    agent.channels_last = padding == 0;
    agent.num_actions = 5;
    agent.torso.channels =
        padding == 0 ? std::vector<std::ptrdiff_t>{8, 16} : std::vector<std::ptrdiff_t>{6, 8, 4};
    agent.torso.padding = padding;
    agent.dense_size = 32;
    agent.lstm_size = 16;
    agent.seed = 10;
    compare_pixel_trainer<seedrl::small_conv_lstm_agent<float>>(stack, agent);
    // PPO's epochs x minibatches through the pixel torso (loss_choice, as a learner passes it).
    seedrl::ppo_loss_config<float> ppo;
    ppo.epochs = 2;
    ppo.minibatches = 2;
    ppo.entropy_cost = 0.01f;
    compare_pixel_trainer<seedrl::small_conv_lstm_agent<float>>(
        stack, agent, seedrl::loss_choice<float>(seedrl::ppo_loss<float>(ppo)));
  }
}

#if defined(SEEDRL_HAS_CUDNN)
TEST_CASE("cudnn conv2d forward and backward match host_backend's conv2d", "[cuda][cudnn]") {
  struct layer_case {
    int c, h, w, o, k, stride, pad;
  };
  // Nature CNN's first two layers (smaller images) and an IMPALA 3x3 padding-1 layer.
  for (const layer_case lc : {layer_case{4, 36, 36, 8, 8, 4, 0}, layer_case{8, 8, 8, 16, 4, 2, 0},
                              layer_case{5, 9, 7, 6, 3, 1, 1}}) {
    CAPTURE(lc.c, lc.h, lc.w, lc.o, lc.k, lc.stride, lc.pad);
    const int N = 3;
    seedrl::conv2d_shape cpu_shape;
    cpu_shape.batch = N;
    cpu_shape.in_channels = lc.c;
    cpu_shape.input_height = lc.h;
    cpu_shape.input_width = lc.w;
    cpu_shape.out_channels = lc.o;
    cpu_shape.kernel_h = cpu_shape.kernel_w = lc.k;
    cpu_shape.stride_h = cpu_shape.stride_w = lc.stride;
    cpu_shape.padding_h = cpu_shape.padding_w = lc.pad;
    const auto in_size = static_cast<std::size_t>(lc.c * lc.h * lc.w);
    const auto out_size =
        static_cast<std::size_t>(lc.o * cpu_shape.output_height() * cpu_shape.output_width());
    const std::size_t nw = static_cast<std::size_t>(lc.o * lc.c * lc.k * lc.k);
    seedrl::random_generator rng(11);
    const auto w = random_floats(rng, nw, -0.2, 0.2);
    const auto b = random_floats(rng, static_cast<std::size_t>(lc.o), -0.2, 0.2);
    const auto x = random_floats(rng, N * in_size, -1, 1);
    const auto dy = random_floats(rng, N * out_size, -1, 1);
    std::vector<float> y(N * out_size), dx(x.size()), want_dw(nw, 0.0f), want_db(b.size(), 0.0f);
    const seedrl::host_backend cpu;  // what the CPU conv stacks run
    cpu.conv2d_forward(cpu_shape, x.data(), w.data(), b.data(), y.data());
    cpu.conv2d_backward(cpu_shape, x.data(), w.data(), dy.data(), dx.data(), want_dw.data(),
                        want_db.data());

    seedrl::cuda::conv2d_shape shape{N,    lc.c,      lc.h,      lc.w,   lc.o,  lc.k,
                                     lc.k, lc.stride, lc.stride, lc.pad, lc.pad};
    seedrl::cuda::cudnn_conv2d<float> gpu(shape);
    REQUIRE(gpu.output_elements() == y.size());
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
