// Optimizers (Adam, RMSProp), the learning-rate schedule and gradient clipping, checked against
// PyTorch reference trajectories (test/fixtures/optim, from tools/gen_optim_fixture.py), naive
// float64 oracles written here, and for exact resumption through save_state/load_state.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "seedrl/core/random.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/optim/clip.hpp"
#include "seedrl/optim/lr_schedule.hpp"
#include "seedrl/optim/optimizer.hpp"
#include "seedrl/optim/rmsprop.hpp"

#include "fixture_compare.hpp"

namespace {

using seedrl_test::cast_to;
using seedrl_test::first_mismatch;
using seedrl_test::tolerance;

using json = nlohmann::json;

// ---------------------------------------------------------------------------------------------
// Concepts (compile-time): both optimizers in both scalar types model Optimizer; things that
// lack a piece do not.

static_assert(seedrl::Optimizer<seedrl::adam<float>>);
static_assert(seedrl::Optimizer<seedrl::adam<double>>);
static_assert(seedrl::Optimizer<seedrl::rmsprop<float>>);
static_assert(seedrl::Optimizer<seedrl::rmsprop<double>>);
static_assert(std::is_same_v<seedrl::adam<>::scalar_type, float>);
static_assert(std::is_same_v<seedrl::rmsprop<>::scalar_type, float>);
static_assert(std::is_same_v<seedrl::adam<double>::config_type, seedrl::adam_config>);
static_assert(!seedrl::Optimizer<int>);

struct lacks_save_state {
  using scalar_type = float;
  void step(std::span<float>, std::span<const float>) {}
  std::int64_t step_count() const { return 0; }
  void load_state(std::span<const std::byte>) {}
};
static_assert(!seedrl::Optimizer<lacks_save_state>);

struct integer_scalar {
  using scalar_type = int;
  void step(std::span<int>, std::span<const int>) {}
  std::int64_t step_count() const { return 0; }
  std::vector<std::byte> save_state() const { return {}; }
  void load_state(std::span<const std::byte>) {}
};
static_assert(!seedrl::Optimizer<integer_scalar>);

// ---------------------------------------------------------------------------------------------
// Helpers

// Bit-for-bit equality (NaN-safe, and -0 differs from +0).
template <class S>
bool same_optim_bits(const std::vector<S>& a, const std::vector<S>& b) {
  return a.size() == b.size() &&
         (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(S)) == 0);
}

// Uniform values in [lo, hi) that float represents exactly, so float and double runs start from
// the same numbers.
std::vector<double> random_values(seedrl::random_generator& gen, std::size_t n, double lo,
                                  double hi) {
  std::vector<double> out(n);
  for (double& x : out) {
    x = static_cast<double>(static_cast<float>(lo + (hi - lo) * gen.uniform()));
  }
  return out;
}

// The message of the std::invalid_argument `f` throws; fails the test if it throws nothing or
// something else.
template <class F>
std::string invalid_argument_message(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  } catch (...) {
    FAIL("threw something other than std::invalid_argument");
  }
  FAIL("did not throw");
  return {};
}

// ---------------------------------------------------------------------------------------------
// Naive float64 oracles: the textbook formulas, one element at a time, sharing no code with the
// library (no lerp, no precomputed coefficients).

struct adam_oracle {
  double lr, beta1, beta2, eps;
  std::optional<std::int64_t> decay_steps;
  std::vector<double> m, v;
  std::int64_t t = 0;

  void step(std::vector<double>& p, const std::vector<double>& g) {
    if (m.empty()) {
      m.assign(p.size(), 0.0);
      v.assign(p.size(), 0.0);
    }
    const double lr_t =
        decay_steps ? lr * std::max(0.0, 1.0 - static_cast<double>(t) / *decay_steps) : lr;
    ++t;
    for (std::size_t i = 0; i < p.size(); ++i) {
      m[i] = beta1 * m[i] + (1.0 - beta1) * g[i];
      v[i] = beta2 * v[i] + (1.0 - beta2) * g[i] * g[i];
      const double m_hat = m[i] / (1.0 - std::pow(beta1, static_cast<double>(t)));
      const double v_hat_sqrt = std::sqrt(v[i]) / std::sqrt(1.0 - std::pow(beta2, double(t)));
      p[i] -= lr_t * m_hat / (v_hat_sqrt + eps);
    }
  }
};

struct rmsprop_oracle {
  double lr, alpha, momentum, eps;
  std::optional<std::int64_t> decay_steps;
  std::vector<double> v, buf;
  std::int64_t t = 0;

  void step(std::vector<double>& p, const std::vector<double>& g) {
    if (v.empty()) {
      v.assign(p.size(), 0.0);
      buf.assign(p.size(), 0.0);
    }
    const double lr_t =
        decay_steps ? lr * std::max(0.0, 1.0 - static_cast<double>(t) / *decay_steps) : lr;
    ++t;
    for (std::size_t i = 0; i < p.size(); ++i) {
      v[i] = alpha * v[i] + (1.0 - alpha) * g[i] * g[i];
      const double scaled = g[i] / (std::sqrt(v[i]) + eps);
      if (momentum > 0.0) {
        buf[i] = momentum * buf[i] + scaled;
        p[i] -= lr_t * buf[i];
      } else {
        p[i] -= lr_t * scaled;
      }
    }
  }
};

// The plain double loop: sqrt(sum g^2).
template <class S>
double naive_norm(const std::vector<S>& g) {
  double sum = 0.0;
  for (const S x : g) {
    sum += static_cast<double>(x) * static_cast<double>(x);
  }
  return std::sqrt(sum);
}

// ---------------------------------------------------------------------------------------------
// Fixtures

struct optim_fixture {
  std::string name;
  std::string kind;  // "adam" or "rmsprop"
  json params;
  std::optional<double> clip_norm;
  std::optional<std::int64_t> decay_steps;
  std::vector<double> p0;
  std::vector<std::vector<double>> grads, expected_params, clipped_grads;
  std::vector<double> grad_norms, lrs;
  tolerance tol;
};

optim_fixture load_optim_fixture(const std::filesystem::path& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  const json j = json::parse(in);
  optim_fixture f;
  f.name = path.filename().string();
  f.kind = j.at("optimizer").get<std::string>();
  f.params = j.at("params");
  if (!j.at("clip_norm").is_null()) {
    f.clip_norm = j.at("clip_norm").get<double>();
    f.clipped_grads = j.at("clipped_grads").get<std::vector<std::vector<double>>>();
  }
  if (!j.at("lr_schedule").is_null()) {
    REQUIRE(j.at("lr_schedule").at("type").get<std::string>() == "linear");
    f.decay_steps = j.at("lr_schedule").at("total_steps").get<std::int64_t>();
  }
  f.p0 = j.at("p0").get<std::vector<double>>();
  f.grads = j.at("grads").get<std::vector<std::vector<double>>>();
  f.expected_params = j.at("expected_params").get<std::vector<std::vector<double>>>();
  f.grad_norms = j.at("grad_norms").get<std::vector<double>>();
  f.lrs = j.at("lrs").get<std::vector<double>>();
  f.tol = {j.at("tolerance").at("abs").get<double>(), j.at("tolerance").at("rel").get<double>()};
  REQUIRE(f.grads.size() == f.expected_params.size());
  return f;
}

std::vector<std::filesystem::path> optim_fixture_paths() {
  std::vector<std::filesystem::path> paths;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(SEEDRL_TEST_FIXTURES) / "optim")) {
    if (entry.is_regular_file() && entry.path().extension() == ".json") {
      paths.push_back(entry.path());
    }
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

// Steps `opt` through the fixture, checking the lr, the clipping and the parameters after every
// step; returns the first mismatch (empty when all pass).
template <class Opt>
std::string run_optim_fixture(Opt opt, const optim_fixture& f, tolerance tol) {
  using S = typename Opt::scalar_type;
  std::vector<S> params = cast_to<S>(f.p0);
  for (std::size_t k = 0; k < f.grads.size(); ++k) {
    const std::string at = f.name + " step " + std::to_string(k);
    std::vector<S> grads = cast_to<S>(f.grads[k]);
    // Gradients are float-representable, so both types see identical values and the double
    // accumulation agrees with torch's float64 norm to rounding.
    const double norm = seedrl::global_norm(std::span<const S>(grads));
    if (std::abs(norm - f.grad_norms[k]) > 1e-13 * f.grad_norms[k]) {
      return at + ": global_norm " + std::to_string(norm) + " vs torch " +
             std::to_string(f.grad_norms[k]);
    }
    if (f.clip_norm) {
      const double before = seedrl::clip_by_global_norm(std::span<S>(grads), *f.clip_norm);
      if (before != norm) {
        return at + ": clip_by_global_norm returned a different norm";
      }
      // Clipped values carry one rounding of the coefficient and one of the product in S.
      const double clip_tol = std::is_same_v<S, float> ? 2e-7 : 1e-15;
      const std::string bad = first_mismatch(at + " clipped grad", std::span<const S>(grads),
                                             f.clipped_grads[k], {clip_tol, clip_tol});
      if (!bad.empty()) {
        return bad;
      }
    }
    if (std::abs(opt.learning_rate() - f.lrs[k]) > 1e-15 * f.lrs[k]) {
      return at + ": learning rate " + std::to_string(opt.learning_rate()) + " vs torch " +
             std::to_string(f.lrs[k]);
    }
    opt.step(params, grads);
    if (opt.step_count() != static_cast<std::int64_t>(k + 1)) {
      return at + ": step_count did not advance";
    }
    const std::string bad =
        first_mismatch(at + " params", std::span<const S>(params), f.expected_params[k], tol);
    if (!bad.empty()) {
      return bad;
    }
  }
  return {};
}

template <class S>
std::string run_optim_fixture(const optim_fixture& f, tolerance tol) {
  if (f.kind == "adam") {
    seedrl::adam_config c;
    c.learning_rate = f.params.at("lr").get<double>();
    c.beta1 = f.params.at("beta1").get<double>();
    c.beta2 = f.params.at("beta2").get<double>();
    c.epsilon = f.params.at("eps").get<double>();
    c.lr_decay_steps = f.decay_steps;
    return run_optim_fixture(seedrl::adam<S>(c), f, tol);
  }
  if (f.kind == "rmsprop") {
    seedrl::rmsprop_config c;
    c.learning_rate = f.params.at("lr").get<double>();
    c.decay = f.params.at("alpha").get<double>();
    c.momentum = f.params.at("momentum").get<double>();
    c.epsilon = f.params.at("eps").get<double>();
    c.lr_decay_steps = f.decay_steps;
    return run_optim_fixture(seedrl::rmsprop<S>(c), f, tol);
  }
  return f.name + ": unknown optimizer kind " + f.kind;
}

TEMPLATE_TEST_CASE("optimizers reproduce the torch reference trajectories", "[optim]", float,
                   double) {
  using S = TestType;
  const auto paths = optim_fixture_paths();
  REQUIRE(paths.size() >= 5);
  for (const auto& path : paths) {
    const optim_fixture f = load_optim_fixture(path);
    tolerance tol = f.tol;
    if constexpr (std::is_same_v<S, float>) {
      // The file's tolerance (1e-6) was validated by the generator against a float32 numpy run
      // with one particular rounding order. Our float path rounds differently but equally
      // validly (coefficients formed in double then rounded once, ATen's lerp form, FMA
      // contraction where a compiler or nvcc applies it); each step adds a few float ulps
      // (6e-8 each) relative to |p| ~ 1, amplified where Adam divides by a small sqrt(v).
      // Measured with GCC 12 and Clang 14 (-ffp-contract=fast): at most 6.2e-8. 1e-5 leaves
      // room for other platforms while staying well below one update (lr >= 4.8e-4 per step),
      // so a wrong rule still fails.
      tol.abs = std::max(tol.abs, 1e-5);
      tol.rel = std::max(tol.rel, 1e-5);
    } else {
      // In double we follow torch's operation order, so the file's 1e-6 is far looser than
      // needed (measured: exact, or 1 ulp for rmsprop_momentum). Also hold double to 1e-12 so
      // that a change of formula that moves results by less than 1e-6 (e.g. TF's eps-hat form
      // of Adam at eps = 1e-8) cannot slip through; 1e-12 still allows FMA contraction.
      INFO(f.name << " at 1e-12");
      CHECK(run_optim_fixture<S>(load_optim_fixture(path), tolerance{1e-12, 1e-12}) == "");
    }
    INFO(f.name);
    CHECK(run_optim_fixture<S>(f, tol) == "");
  }
}

// ---------------------------------------------------------------------------------------------
// Oracles on longer random runs

TEMPLATE_TEST_CASE("adam and rmsprop match naive float64 oracles over long runs", "[optim]", float,
                   double) {
  using S = TestType;
  // float accumulates ~1 ulp per operation per step over 40 steps.
  const tolerance tol = std::is_same_v<S, float> ? tolerance{1e-4, 1e-4} : tolerance{1e-12, 1e-12};
  constexpr std::size_t n = 64;
  constexpr int steps = 40;
  seedrl::random_generator gen(7);
  const std::vector<double> p0 = random_values(gen, n, -1.0, 1.0);
  std::vector<std::vector<double>> grads;
  for (int k = 0; k < steps; ++k) {
    grads.push_back(random_values(gen, n, -2.0, 2.0));
  }

  SECTION("adam with lr decay") {
    seedrl::adam_config c{0.01, 0.9, 0.999, 1e-8, 30};  // decays to 0 before the run ends
    seedrl::adam<S> opt(c);
    adam_oracle oracle{c.learning_rate, c.beta1, c.beta2, c.epsilon, c.lr_decay_steps, {}, {}};
    std::vector<S> p = cast_to<S>(p0);
    std::vector<double> q = p0;
    for (int k = 0; k < steps; ++k) {
      opt.step(p, cast_to<S>(grads[k]));
      oracle.step(q, grads[k]);
      INFO("step " << k);
      REQUIRE(first_mismatch("params", std::span<const S>(p), q, tol) == "");
      REQUIRE(first_mismatch("m", opt.first_moment(), oracle.m, tol) == "");
      REQUIRE(first_mismatch("v", opt.second_moment(), oracle.v, tol) == "");
    }
  }
  SECTION("rmsprop with momentum") {
    seedrl::rmsprop_config c{0.003, 0.99, 0.9, 0.01, std::nullopt};
    seedrl::rmsprop<S> opt(c);
    rmsprop_oracle oracle{c.learning_rate,  c.decay, c.momentum, c.epsilon,
                          c.lr_decay_steps, {},      {}};
    std::vector<S> p = cast_to<S>(p0);
    std::vector<double> q = p0;
    for (int k = 0; k < steps; ++k) {
      opt.step(p, cast_to<S>(grads[k]));
      oracle.step(q, grads[k]);
      INFO("step " << k);
      REQUIRE(first_mismatch("params", std::span<const S>(p), q, tol) == "");
      REQUIRE(first_mismatch("buf", opt.momentum_buffer(), oracle.buf, tol) == "");
    }
  }
  SECTION("rmsprop without momentum keeps no buffer") {
    seedrl::rmsprop_config c{0.003, 0.9, 0.0, 1e-5, 50};
    seedrl::rmsprop<S> opt(c);
    rmsprop_oracle oracle{c.learning_rate,  c.decay, c.momentum, c.epsilon,
                          c.lr_decay_steps, {},      {}};
    std::vector<S> p = cast_to<S>(p0);
    std::vector<double> q = p0;
    for (int k = 0; k < steps; ++k) {
      opt.step(p, cast_to<S>(grads[k]));
      oracle.step(q, grads[k]);
    }
    CHECK(opt.momentum_buffer().empty());
    CHECK(first_mismatch("params", std::span<const S>(p), q, tol) == "");
    CHECK(first_mismatch("v", opt.mean_square(), oracle.v, tol) == "");
  }
}

TEMPLATE_TEST_CASE("adam with beta1 zero uses the raw gradient as its first moment", "[optim]",
                   float, double) {
  using S = TestType;
  seedrl::adam_config c;
  c.learning_rate = 0.01;
  c.beta1 = 0.0;
  c.beta2 = 0.99;
  c.epsilon = 1e-3;
  seedrl::adam<S> opt(c);
  adam_oracle oracle{c.learning_rate, c.beta1, c.beta2, c.epsilon, std::nullopt, {}, {}};
  seedrl::random_generator gen(3);
  std::vector<double> q = random_values(gen, 16, -1.0, 1.0);
  std::vector<S> p = cast_to<S>(q);
  for (int k = 0; k < 10; ++k) {
    const std::vector<S> g = cast_to<S>(random_values(gen, 16, -3.0, 3.0));
    const std::vector<S> before = p;
    opt.step(p, g);
    oracle.step(q, std::vector<double>(g.begin(), g.end()));
    INFO("step " << k);
    // m = lerp(m, g, 1) is g exactly, whatever m was.
    REQUIRE(
        same_optim_bits(std::vector<S>(opt.first_moment().begin(), opt.first_moment().end()), g));
    if (k == 0) {
      // First step: sqrt(v)/sqrt(1-beta2) = |g|, so each parameter moves by lr*g/(|g| + eps).
      for (std::size_t i = 0; i < p.size(); ++i) {
        const double gi = static_cast<double>(g[i]);
        const double moved = static_cast<double>(before[i]) - static_cast<double>(p[i]);
        CHECK(moved == Approx(c.learning_rate * gi / (std::abs(gi) + c.epsilon)).epsilon(1e-5));
      }
    }
  }
  const tolerance tol = std::is_same_v<S, float> ? tolerance{1e-5, 1e-5} : tolerance{1e-13, 1e-13};
  CHECK(first_mismatch("params", std::span<const S>(p), q, tol) == "");
}

// ---------------------------------------------------------------------------------------------
// Learning-rate schedule

TEST_CASE("lr_schedule is constant or decays linearly to zero", "[optim]") {
  const seedrl::lr_schedule constant{0.5, std::nullopt};
  CHECK(constant.at(0) == 0.5);
  CHECK(constant.at(1) == 0.5);
  CHECK(constant.at(std::int64_t{1} << 50) == 0.5);

  const seedrl::lr_schedule linear{0.01, 10};
  CHECK(linear.at(0) == 0.01);
  CHECK(linear.at(-3) == 0.01);
  for (std::int64_t k = 0; k < 10; ++k) {
    // The LambdaLR expression, evaluated the same way: bit-identical.
    CHECK(linear.at(k) == 0.01 * (1.0 - static_cast<double>(k) / 10.0));
  }
  CHECK(linear.at(5) == Approx(0.005).epsilon(1e-15));
  CHECK(linear.at(9) > 0.0);
  CHECK(linear.at(10) == 0.0);
  CHECK(linear.at(11) == 0.0);
  CHECK(linear.at(std::numeric_limits<std::int64_t>::max()) == 0.0);

  CHECK_NOTHROW(linear.validate());
  CHECK_THROWS_AS((seedrl::lr_schedule{0.01, 0}.validate()), std::invalid_argument);
  CHECK_THROWS_AS((seedrl::lr_schedule{0.01, -5}.validate()), std::invalid_argument);
  CHECK_THROWS_AS((seedrl::lr_schedule{0.01, 0}.at(1)), std::invalid_argument);
  CHECK_THROWS_AS((seedrl::lr_schedule{-0.01, std::nullopt}.validate()), std::invalid_argument);
  CHECK_THROWS_AS((seedrl::lr_schedule{std::nan(""), std::nullopt}.validate()),
                  std::invalid_argument);
}

TEST_CASE("optimizers follow their schedule and stop moving once it reaches zero", "[optim]") {
  seedrl::adam_config c;
  c.learning_rate = 0.1;
  c.lr_decay_steps = 4;
  seedrl::adam<double> opt(c);
  std::vector<double> p{1.0, -2.0, 3.0};
  const std::vector<double> g{0.5, 0.25, -1.0};
  for (std::int64_t k = 0; k < 4; ++k) {
    CHECK(opt.learning_rate() == c.schedule().at(k));
    opt.step(p, g);
  }
  CHECK(opt.learning_rate() == 0.0);
  const std::vector<double> frozen = p;
  opt.step(p, g);
  CHECK(same_optim_bits(p, frozen));
  CHECK(opt.step_count() == 5);
}

TEST_CASE("optimizer defaults and config checks", "[optim]") {
  const seedrl::adam_config a;
  CHECK(a.learning_rate == 0.00048);
  CHECK(a.beta1 == 0.9);
  CHECK(a.beta2 == 0.999);
  CHECK(a.epsilon == 1e-8);
  CHECK(!a.lr_decay_steps);
  const seedrl::rmsprop_config r;
  CHECK(r.decay == 0.99);
  CHECK(r.momentum == 0.0);
  CHECK(r.epsilon == 0.01);

  const auto adam_with = [](auto change) {
    seedrl::adam_config c;
    change(c);
    return invalid_argument_message([&] { seedrl::adam<float> opt(c); });
  };
  CHECK_THAT(adam_with([](auto& c) { c.beta1 = 1.0; }), Catch::Contains("beta1"));
  CHECK_THAT(adam_with([](auto& c) { c.beta1 = -0.1; }), Catch::Contains("beta1"));
  CHECK_THAT(adam_with([](auto& c) { c.beta2 = 1.0; }), Catch::Contains("beta2"));
  CHECK_THAT(adam_with([](auto& c) { c.epsilon = std::nan(""); }), Catch::Contains("epsilon"));
  CHECK_THAT(adam_with([](auto& c) { c.learning_rate = -1.0; }), Catch::Contains("learning rate"));
  CHECK_THAT(adam_with([](auto& c) { c.lr_decay_steps = 0; }), Catch::Contains("decay_steps"));

  const auto rmsprop_with = [](auto change) {
    seedrl::rmsprop_config c;
    change(c);
    return invalid_argument_message([&] { seedrl::rmsprop<double> opt(c); });
  };
  CHECK_THAT(rmsprop_with([](auto& c) { c.decay = 1.5; }), Catch::Contains("decay"));
  CHECK_THAT(rmsprop_with([](auto& c) { c.momentum = -0.5; }), Catch::Contains("momentum"));
  CHECK_THAT(rmsprop_with([](auto& c) { c.epsilon = -1.0; }), Catch::Contains("epsilon"));
  CHECK_NOTHROW(seedrl::rmsprop<double>(seedrl::rmsprop_config{0.0, 1.0, 0.0, 0.0, {}}));
}

// ---------------------------------------------------------------------------------------------
// Size checks

TEMPLATE_TEST_CASE("step rejects buffers of the wrong size and changes nothing", "[optim]",
                   seedrl::adam<float>, seedrl::adam<double>, seedrl::rmsprop<float>,
                   seedrl::rmsprop<double>) {
  using Opt = TestType;
  using S = typename Opt::scalar_type;
  Opt opt;
  std::vector<S> p(5, S(1));
  std::vector<S> g(4, S(1));
  CHECK_THROWS_AS(opt.step(p, g), std::invalid_argument);  // params vs grads, first step
  CHECK(opt.step_count() == 0);
  CHECK(opt.size() == 0);
  CHECK(same_optim_bits(p, std::vector<S>(5, S(1))));

  g.assign(5, S(0.5));
  opt.step(p, g);  // sizes the state to 5
  CHECK(opt.size() == 5);
  const auto state = opt.save_state();
  const std::vector<S> p_after = p;

  std::vector<S> p6(6, S(1));
  std::vector<S> g6(6, S(1));
  CHECK_THAT(invalid_argument_message([&] { opt.step(p6, g6); }), Catch::Contains("sized for 5"));
  CHECK_THROWS_AS(opt.step(p, std::span<const S>(g6)), std::invalid_argument);
  CHECK(opt.save_state() == state);
  CHECK(same_optim_bits(p, p_after));
  CHECK(same_optim_bits(p6, std::vector<S>(6, S(1))));

  // load_state re-sizes the optimizer to the saved element count.
  Opt other;
  other.step(p6, g6);
  other.load_state(state);
  CHECK(other.size() == 5);
  CHECK_THROWS_AS(other.step(p6, g6), std::invalid_argument);
  CHECK_NOTHROW(other.step(p, g));
}

// ---------------------------------------------------------------------------------------------
// Save and load

template <class Opt>
Opt make_for_round_trip() {
  if constexpr (std::is_same_v<typename Opt::config_type, seedrl::adam_config>) {
    return Opt(seedrl::adam_config{0.01, 0.9, 0.999, 1e-8, 8});
  } else {
    return Opt(seedrl::rmsprop_config{0.01, 0.99, 0.9, 0.01, 8});
  }
}

TEMPLATE_TEST_CASE("a state saved mid-run resumes bit for bit", "[optim]", seedrl::adam<float>,
                   seedrl::adam<double>, seedrl::rmsprop<float>, seedrl::rmsprop<double>) {
  using Opt = TestType;
  using S = typename Opt::scalar_type;
  constexpr std::size_t n = 33;
  seedrl::random_generator gen(11);
  const std::vector<S> p0 = cast_to<S>(random_values(gen, n, -1.0, 1.0));
  std::vector<std::vector<S>> grads;
  for (int k = 0; k < 6; ++k) {
    grads.push_back(cast_to<S>(random_values(gen, n, -5.0, 5.0)));
  }

  // Uninterrupted run, with clipping as a learner would do it.
  Opt straight = make_for_round_trip<Opt>();
  std::vector<S> p_straight = p0;
  for (const auto& g0 : grads) {
    std::vector<S> g = g0;
    seedrl::clip_by_global_norm(std::span<S>(g), 10.0);
    straight.step(p_straight, g);
  }

  // Three steps, save, a fresh optimizer loads the state and does the other three.
  std::vector<S> p = p0;
  std::vector<std::byte> saved;
  {
    Opt first = make_for_round_trip<Opt>();
    for (int k = 0; k < 3; ++k) {
      std::vector<S> g = grads[k];
      seedrl::clip_by_global_norm(std::span<S>(g), 10.0);
      first.step(p, g);
    }
    saved = first.save_state();
  }
  Opt resumed = make_for_round_trip<Opt>();
  resumed.load_state(saved);
  CHECK(resumed.step_count() == 3);
  CHECK(resumed.learning_rate() == make_for_round_trip<Opt>().config().schedule().at(3));
  CHECK(resumed.save_state() == saved);
  for (int k = 3; k < 6; ++k) {
    std::vector<S> g = grads[k];
    seedrl::clip_by_global_norm(std::span<S>(g), 10.0);
    resumed.step(p, g);
  }
  CHECK(same_optim_bits(p, p_straight));
  CHECK(resumed.step_count() == straight.step_count());
  CHECK(resumed.save_state() == straight.save_state());

  // A state saved before any step loads as a fresh optimizer.
  Opt fresh = make_for_round_trip<Opt>();
  Opt target = make_for_round_trip<Opt>();
  std::vector<S> scratch = p0;
  target.step(scratch, grads[0]);
  target.load_state(fresh.save_state());
  CHECK(target.step_count() == 0);
  CHECK(target.size() == 0);
}

// Loading `bytes` into `opt` must throw std::invalid_argument whose message contains `expected`,
// and leave `opt` exactly as it was (same saved state, and the same next step as a copy).
template <class Opt>
void require_rejected(Opt& opt, std::span<const std::byte> bytes, const std::string& expected) {
  using S = typename Opt::scalar_type;
  const std::vector<std::byte> before = opt.save_state();
  Opt untouched = opt;
  const std::string message = invalid_argument_message([&] { opt.load_state(bytes); });
  INFO("message: " << message);
  CHECK_THAT(message, Catch::Contains(expected) && Catch::StartsWith("seedrl: "));
  REQUIRE(opt.save_state() == before);
  const std::size_t n = opt.step_count() == 0 ? 3 : opt.size();
  std::vector<S> p1(n, S(0.25));
  std::vector<S> p2 = p1;
  const std::vector<S> g(n, S(-0.5));
  opt.step(p1, g);
  untouched.step(p2, g);
  REQUIRE(same_optim_bits(p1, p2));
  REQUIRE(opt.save_state() == untouched.save_state());
}

template <class Opt>
Opt stepped(std::size_t n, int steps) {
  using S = typename Opt::scalar_type;
  Opt opt = make_for_round_trip<Opt>();
  std::vector<S> p(n, S(1));
  std::vector<S> g(n);
  for (int k = 0; k < steps; ++k) {
    for (std::size_t i = 0; i < n; ++i) {
      g[i] = S(0.1) * static_cast<S>(i + 1) * static_cast<S>(k % 2 == 0 ? 1 : -1);
    }
    opt.step(p, g);
  }
  return opt;
}

TEMPLATE_TEST_CASE("load_state rejects damaged or foreign states and changes nothing", "[optim]",
                   seedrl::adam<float>, seedrl::adam<double>, seedrl::rmsprop<float>,
                   seedrl::rmsprop<double>) {
  using Opt = TestType;
  using S = typename Opt::scalar_type;
  const std::vector<std::byte> good = stepped<Opt>(7, 3).save_state();
  // The target is mid-run with a different size, so a partial load would show.
  Opt target = stepped<Opt>(4, 2);

  SECTION("truncated at every length") {
    for (std::size_t len = 0; len < good.size(); ++len) {
      INFO("length " << len);
      require_rejected(target, std::span(good).first(len), "truncated");
    }
  }
  SECTION("trailing bytes") {
    std::vector<std::byte> longer = good;
    longer.push_back(std::byte{0});
    require_rejected(target, longer, "trailing");
  }
  SECTION("a flipped bit anywhere") {
    for (std::size_t i = 0; i < good.size(); ++i) {
      for (const int bit : {0, 6}) {
        std::vector<std::byte> bad = good;
        bad[i] ^= std::byte(1u << bit);
        INFO("byte " << i << " bit " << bit);
        Opt copy = target;
        CHECK_THROWS_AS(copy.load_state(bad), std::invalid_argument);
        CHECK(copy.save_state() == target.save_state());
      }
    }
    std::vector<std::byte> bad = good;
    bad[45] ^= std::byte{0x10};  // inside the first array
    require_rejected(target, bad, "checksum");
  }
  SECTION("not a state") {
    std::vector<std::byte> bad = good;
    bad[0] = std::byte{'X'};
    require_rejected(target, bad, "not a seedrl optimizer state");
  }
  SECTION("another format version") {
    std::vector<std::byte> bad = good;
    bad[8] = std::byte{2};
    require_rejected(target, bad, "version 2");
  }
  SECTION("another optimizer") {
    if constexpr (std::is_same_v<typename Opt::config_type, seedrl::adam_config>) {
      require_rejected(target, stepped<seedrl::rmsprop<S>>(7, 3).save_state(),
                       "different optimizer (rmsprop");
    } else {
      require_rejected(target, stepped<seedrl::adam<S>>(7, 3).save_state(),
                       "different optimizer (adam");
    }
  }
  SECTION("another scalar type") {
    using other_scalar = std::conditional_t<std::is_same_v<S, float>, double, float>;
    using Other = std::conditional_t<std::is_same_v<typename Opt::config_type, seedrl::adam_config>,
                                     seedrl::adam<other_scalar>, seedrl::rmsprop<other_scalar>>;
    const std::string expected =
        std::is_same_v<S, float> ? "8-byte scalars (double)" : "4-byte scalars (float)";
    require_rejected(target, stepped<Other>(7, 3).save_state(), expected);
  }
  SECTION("a fresh optimizer is left fresh") {
    Opt fresh = make_for_round_trip<Opt>();
    require_rejected(fresh, std::span(good).first(good.size() - 1), "truncated");
  }
}

TEST_CASE("rmsprop states record whether momentum was used", "[optim]") {
  const auto with_momentum = stepped<seedrl::rmsprop<float>>(5, 2).save_state();
  seedrl::rmsprop<float> plain(seedrl::rmsprop_config{0.01, 0.99, 0.0, 0.01, {}});
  std::vector<float> p(5, 1.0f);
  plain.step(p, std::vector<float>(5, 0.5f));
  require_rejected(plain, with_momentum, "momentum = 0");
  seedrl::rmsprop<float> heavy(seedrl::rmsprop_config{0.01, 0.99, 0.5, 0.01, {}});
  require_rejected(heavy, plain.save_state(), "momentum > 0");
}

// ---------------------------------------------------------------------------------------------
// Clipping

TEMPLATE_TEST_CASE("clip_by_global_norm matches a naive double computation", "[optim]", float,
                   double) {
  using S = TestType;
  seedrl::random_generator gen(5);
  for (const std::size_t n : {std::size_t{1}, std::size_t{7}, std::size_t{1000}}) {
    for (const double max_norm : {0.1, 1.0, 1e6}) {
      const std::vector<S> original = cast_to<S>(random_values(gen, n, -3.0, 3.0));
      std::vector<S> g = original;
      const double expected_norm = naive_norm(original);
      const double norm = seedrl::clip_by_global_norm(std::span<S>(g), max_norm);
      INFO("n " << n << " max_norm " << max_norm);
      CHECK(norm == Approx(expected_norm).epsilon(1e-14));
      CHECK(seedrl::global_norm(std::span<const S>(original)) == norm);
      CHECK(seedrl::global_norm(std::span<S>(g)) <= max_norm * (1.0 + 1e-6));
      const double coef = std::min(max_norm / (expected_norm + 1e-6), 1.0);
      for (std::size_t i = 0; i < n; ++i) {
        // One rounding of coef to S, one of the product.
        CHECK(static_cast<double>(g[i]) == Approx(static_cast<double>(original[i]) * coef)
                                               .epsilon(std::is_same_v<S, float> ? 2.5e-7 : 1e-15)
                                               .margin(1e-30));
      }
      if (coef == 1.0) {
        CHECK(same_optim_bits(g, original));
      }
    }
  }

  SECTION("a norm equal to max_norm is still scaled by max_norm / (norm + 1e-6)") {
    std::vector<S> g{S(3), S(4)};  // norm 5
    CHECK(seedrl::clip_by_global_norm(std::span<S>(g), 5.0) == 5.0);
    CHECK(static_cast<double>(g[0]) == Approx(3.0 * 5.0 / (5.0 + 1e-6)).epsilon(1e-7));
    CHECK(g[0] < S(3));
  }
  SECTION("zero and empty gradients") {
    std::vector<S> zeros(4, S(0));
    CHECK(seedrl::clip_by_global_norm(std::span<S>(zeros), 1.0) == 0.0);
    CHECK(same_optim_bits(zeros, std::vector<S>(4, S(0))));
    std::vector<S> empty;
    CHECK(seedrl::clip_by_global_norm(std::span<S>(empty), 1.0) == 0.0);
  }
  SECTION("bad max_norm") {
    std::vector<S> g{S(1), S(2)};
    for (const double bad : {0.0, -1.0, std::nan("")}) {
      CHECK_THAT(
          invalid_argument_message([&] { seedrl::clip_by_global_norm(std::span<S>(g), bad); }),
          Catch::Contains("max_norm"));
    }
    CHECK(same_optim_bits(g, std::vector<S>{S(1), S(2)}));
    CHECK(seedrl::clip_by_global_norm(std::span<S>(g), std::numeric_limits<double>::infinity()) ==
          Approx(std::sqrt(5.0)));
    CHECK(same_optim_bits(g, std::vector<S>{S(1), S(2)}));
  }
  SECTION("non-finite gradients throw and are left alone") {
    for (const S bad : {std::numeric_limits<S>::quiet_NaN(), std::numeric_limits<S>::infinity(),
                        -std::numeric_limits<S>::infinity()}) {
      const std::vector<S> original{S(100), bad, S(-2)};
      std::vector<S> g = original;
      try {
        seedrl::clip_by_global_norm(std::span<S>(g), 1.0);
        FAIL("no exception for a non-finite gradient");
      } catch (const std::domain_error& e) {
        CHECK_THAT(std::string(e.what()), Catch::StartsWith("seedrl: gradient norm is not finite"));
      }
      CHECK(same_optim_bits(g, original));
    }
    const std::vector<S> with_nan{S(1), std::numeric_limits<S>::quiet_NaN(),
                                  std::numeric_limits<S>::infinity()};
    CHECK(std::isnan(seedrl::global_norm(std::span<const S>(with_nan))));
    const std::vector<S> with_inf{S(1), -std::numeric_limits<S>::infinity()};
    CHECK(seedrl::global_norm(std::span<const S>(with_inf)) ==
          std::numeric_limits<double>::infinity());
  }
  SECTION("finite values whose squares overflow still have a finite norm") {
    const S big = std::numeric_limits<S>::max() / S(2);
    std::vector<S> g(4, big);
    const double norm = seedrl::clip_by_global_norm(std::span<S>(g), 1.0);
    CHECK(norm == Approx(2.0 * static_cast<double>(big)).epsilon(1e-15));
    CHECK(seedrl::global_norm(std::span<S>(g)) == Approx(1.0).epsilon(1e-6));
  }
}

}  // namespace
