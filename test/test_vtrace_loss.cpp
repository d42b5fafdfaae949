// V-trace, the categorical distribution and the IMPALA loss, checked against reference
// fixtures, naive float64 oracles written here (separate code paths) and finite differences.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/algo/vtrace.hpp"
#include "seedrl/backend/host_backend.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/net/categorical.hpp"

#include "fixture_compare.hpp"

namespace {

using seedrl_test::cast_to;
using seedrl_test::first_mismatch;
using seedrl_test::tolerance;

using json = nlohmann::json;

// ---------------------------------------------------------------------------------------------
// Shared helpers

// |a - b| / max(1, |a|, |b|): relative for large numbers, absolute near zero.
double combined_error(double a, double b) {
  return std::abs(a - b) / std::max({1.0, std::abs(a), std::abs(b)});
}

template <class S>
double max_combined_error(const std::vector<S>& got, const std::vector<double>& expected) {
  REQUIRE(got.size() == expected.size());
  double worst = 0.0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    worst = std::max(worst, combined_error(static_cast<double>(got[i]), expected[i]));
  }
  return worst;
}

// Values that float represents exactly, so float and double runs see the same inputs.
double vtrace_float_exact(double x) {
  return static_cast<double>(static_cast<float>(x));
}

// ---------------------------------------------------------------------------------------------
// The O(T^2) V-trace oracle: the direct sum from the IMPALA paper, in double,
//   vs_s = V_s + sum_{t >= s} (prod_{i=s}^{t-1} gamma_i * lambda * c_i) * delta_t,
// sharing no code with the library's backward recursion.

struct vtrace_reference {
  std::vector<double> vs;
  std::vector<double> pg_advantages;
};

//
// With `cut` ([T*B], nonzero where transition t ended its episode at a time limit) a cut step
// is left out: vs_s = V_s and pg_s = 0, and the sum for an earlier s stops before the first cut
// step e >= s, bootstrapping from V_e as if the unroll ended there.
vtrace_reference vtrace_oracle(std::size_t T, std::size_t B, const std::vector<double>& log_rhos,
                               const std::vector<double>& discounts,
                               const std::vector<double>& rewards,
                               const std::vector<double>& values,
                               const std::vector<double>& bootstrap, std::optional<double> rho_bar,
                               std::optional<double> pg_rho_bar, double lambda,
                               const std::vector<std::uint8_t>* cut = nullptr) {
  const auto is_cut = [&](std::size_t t, std::size_t b) {
    return cut != nullptr && (*cut)[t * B + b] != 0;
  };
  const auto at = [B](std::size_t t, std::size_t b) { return t * B + b; };
  const auto rho = [&](std::size_t t, std::size_t b) { return std::exp(log_rhos[at(t, b)]); };
  const auto value = [&](std::size_t t, std::size_t b) {
    return t < T ? values[at(t, b)] : bootstrap[b];
  };
  vtrace_reference out{std::vector<double>(T * B), std::vector<double>(T * B)};
  for (std::size_t b = 0; b < B; ++b) {
    for (std::size_t s = 0; s < T; ++s) {
      double sum = 0.0;
      for (std::size_t t = s; t < T && !is_cut(t, b); ++t) {
        double coef = 1.0;
        for (std::size_t i = s; i < t; ++i) {
          coef *= discounts[at(i, b)] * lambda * std::min(1.0, rho(i, b));
        }
        const double clipped = rho_bar ? std::min(*rho_bar, rho(t, b)) : rho(t, b);
        const double delta =
            clipped * (rewards[at(t, b)] + discounts[at(t, b)] * value(t + 1, b) - value(t, b));
        sum += coef * delta;
      }
      out.vs[at(s, b)] = values[at(s, b)] + sum;
    }
    for (std::size_t s = 0; s < T; ++s) {
      if (is_cut(s, b)) {
        out.pg_advantages[at(s, b)] = 0.0;
        continue;
      }
      const double next_vs = s + 1 < T ? out.vs[at(s + 1, b)] : bootstrap[b];
      const double clipped = pg_rho_bar ? std::min(*pg_rho_bar, rho(s, b)) : rho(s, b);
      out.pg_advantages[at(s, b)] =
          clipped * (rewards[at(s, b)] + discounts[at(s, b)] * next_vs - values[at(s, b)]);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// V-trace fixtures

struct vtrace_fixture {
  std::string name;
  std::size_t T = 0;
  std::size_t B = 0;
  std::optional<double> clip_rho_threshold;
  std::optional<double> clip_pg_rho_threshold;
  double lambda = 1.0;
  std::vector<double> behaviour_log_probs, target_log_probs, discounts, rewards, values, bootstrap;
  std::vector<double> vs, pg_advantages;
  tolerance tol;
};

std::optional<double> optional_number(const json& j) {
  if (j.is_null()) {
    return std::nullopt;
  }
  return j.get<double>();
}

vtrace_fixture load_vtrace_fixture(const std::filesystem::path& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  const json j = json::parse(in);
  vtrace_fixture f;
  f.name = path.filename().string();
  f.T = j.at("T").get<std::size_t>();
  f.B = j.at("B").get<std::size_t>();
  const json& params = j.at("params");
  f.clip_rho_threshold = optional_number(params.at("clip_rho_threshold"));
  f.clip_pg_rho_threshold = optional_number(params.at("clip_pg_rho_threshold"));
  f.lambda = params.at("lambda").get<double>();
  const json& inputs = j.at("inputs");
  f.behaviour_log_probs = inputs.at("behaviour_action_log_probs").get<std::vector<double>>();
  f.target_log_probs = inputs.at("target_action_log_probs").get<std::vector<double>>();
  f.discounts = inputs.at("discounts").get<std::vector<double>>();
  f.rewards = inputs.at("rewards").get<std::vector<double>>();
  f.values = inputs.at("values").get<std::vector<double>>();
  f.bootstrap = inputs.at("bootstrap_value").get<std::vector<double>>();
  f.vs = j.at("expected").at("vs").get<std::vector<double>>();
  f.pg_advantages = j.at("expected").at("pg_advantages").get<std::vector<double>>();
  f.tol = {j.at("tolerance").at("abs").get<double>(), j.at("tolerance").at("rel").get<double>()};
  return f;
}

std::vector<std::filesystem::path> vtrace_fixture_paths() {
  std::vector<std::filesystem::path> paths;
  for (const auto& entry : std::filesystem::directory_iterator(
           std::filesystem::path(SEEDRL_TEST_FIXTURES) / "vtrace")) {
    if (entry.is_regular_file() && entry.path().extension() == ".json") {
      paths.push_back(entry.path());
    }
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

// Runs the fixture through vtrace<S> and returns the first mismatch (empty when it passes).
// log rho is formed in S, as SEED forms it in float32.
template <class S>
std::string run_vtrace_fixture(const vtrace_fixture& f) {
  const auto target = cast_to<S>(f.target_log_probs);
  const auto behaviour = cast_to<S>(f.behaviour_log_probs);
  std::vector<S> log_rhos(target.size());
  for (std::size_t i = 0; i < log_rhos.size(); ++i) {
    log_rhos[i] = target[i] - behaviour[i];
  }
  seedrl::vtrace_params<S> params;
  params.clip_rho_threshold =
      f.clip_rho_threshold ? std::optional<S>(static_cast<S>(*f.clip_rho_threshold)) : std::nullopt;
  params.clip_pg_rho_threshold = f.clip_pg_rho_threshold
                                     ? std::optional<S>(static_cast<S>(*f.clip_pg_rho_threshold))
                                     : std::nullopt;
  params.lambda = static_cast<S>(f.lambda);
  std::vector<S> vs(f.T * f.B);
  std::vector<S> pg(f.T * f.B);
  seedrl::vtrace(f.T, f.B, log_rhos, cast_to<S>(f.discounts), cast_to<S>(f.rewards),
                 cast_to<S>(f.values), cast_to<S>(f.bootstrap), params, vs, pg);
  std::string mismatch = first_mismatch("vs", vs, f.vs, f.tol);
  if (mismatch.empty()) {
    mismatch = first_mismatch("pg_advantages", pg, f.pg_advantages, f.tol);
  }
  return mismatch;
}

}  // namespace

TEST_CASE("vtrace matches every reference fixture in float and double", "[vtrace]") {
  const auto paths = vtrace_fixture_paths();
  REQUIRE(paths.size() >= 10);
  for (const auto& path : paths) {
    const vtrace_fixture f = load_vtrace_fixture(path);
    INFO("fixture " << f.name << " (T = " << f.T << ", B = " << f.B << ")");
    CHECK(run_vtrace_fixture<float>(f) == "");
    CHECK(run_vtrace_fixture<double>(f) == "");
  }
}

TEST_CASE("the O(T^2) oracle agrees with every reference fixture", "[vtrace]") {
  // Checks the oracle itself, so the SEED-case and loss tests below can lean on it.
  for (const auto& path : vtrace_fixture_paths()) {
    const vtrace_fixture f = load_vtrace_fixture(path);
    INFO("fixture " << f.name);
    std::vector<double> log_rhos(f.target_log_probs.size());
    for (std::size_t i = 0; i < log_rhos.size(); ++i) {
      log_rhos[i] = f.target_log_probs[i] - f.behaviour_log_probs[i];
    }
    const auto ref =
        vtrace_oracle(f.T, f.B, log_rhos, f.discounts, f.rewards, f.values, f.bootstrap,
                      f.clip_rho_threshold, f.clip_pg_rho_threshold, f.lambda);
    CHECK(first_mismatch("vs", ref.vs, f.vs, f.tol) == "");
    CHECK(first_mismatch("pg_advantages", ref.pg_advantages, f.pg_advantages, f.tol) == "");
  }
}

TEST_CASE("the fixture comparison rejects an expected value off by ten tolerances", "[vtrace]") {
  const auto path =
      std::filesystem::path(SEEDRL_TEST_FIXTURES) / "vtrace" / "default_clipping.json";
  const vtrace_fixture original = load_vtrace_fixture(path);
  REQUIRE(run_vtrace_fixture<double>(original) == "");
  REQUIRE(run_vtrace_fixture<float>(original) == "");

  vtrace_fixture bad_vs = original;
  const std::size_t k = bad_vs.vs.size() / 2;
  bad_vs.vs[k] += 10.0 * (bad_vs.tol.abs + bad_vs.tol.rel * std::abs(bad_vs.vs[k]));
  const std::string vs_report = run_vtrace_fixture<double>(bad_vs);
  CHECK(vs_report.find("vs[" + std::to_string(k) + "]") == 0);
  CHECK(run_vtrace_fixture<float>(bad_vs) != "");

  vtrace_fixture bad_pg = original;
  bad_pg.pg_advantages[0] -=
      10.0 * (bad_pg.tol.abs + bad_pg.tol.rel * std::abs(bad_pg.pg_advantages[0]));
  CHECK(run_vtrace_fixture<double>(bad_pg).find("pg_advantages[0]") == 0);
  CHECK(run_vtrace_fixture<float>(bad_pg) != "");
}

TEMPLATE_TEST_CASE("vtrace on SEED RL's test case matches the direct-sum oracle", "[vtrace]", float,
                   double) {
  using S = TestType;
  // The inputs of SEED RL's vtrace_test.py: T = B = 5, log rhos spread over [-2.5, 2.4].
  const std::size_t T = 5;
  const std::size_t B = 5;
  std::vector<double> log_rhos(T * B), discounts(T * B), rewards(T * B), values(T * B),
      bootstrap(B);
  for (std::size_t t = 0; t < T; ++t) {
    for (std::size_t b = 0; b < B; ++b) {
      const double k = static_cast<double>(5 * t + b);
      log_rhos[t * B + b] = vtrace_float_exact(5.0 * (k / 25.0 - 0.5));
      discounts[t * B + b] = vtrace_float_exact(0.9 / static_cast<double>(b + 1));
      rewards[t * B + b] = k;
      values[t * B + b] = vtrace_float_exact(k / 5.0);
    }
  }
  for (std::size_t b = 0; b < B; ++b) {
    bootstrap[b] = static_cast<double>(b + 1);
  }
  struct setting {
    std::optional<double> rho_bar;
    std::optional<double> pg_rho_bar;
    double lambda;
  };
  const setting settings[] = {{3.7, 2.2, 1.0},
                              {3.7, 2.2, 0.7},
                              {std::nullopt, std::nullopt, 1.0},
                              {std::nullopt, std::nullopt, 0.7}};
  // Direct sum and recursion round differently; float carries ~1e-7 per operation.
  const double tol = std::is_same_v<S, float> ? 2e-6 : 1e-12;
  for (const setting& s : settings) {
    INFO("rho_bar " << (s.rho_bar ? std::to_string(*s.rho_bar) : "none") << ", pg_rho_bar "
                    << (s.pg_rho_bar ? std::to_string(*s.pg_rho_bar) : "none") << ", lambda "
                    << s.lambda);
    // Inputs and thresholds as S sees them, so the oracle differs only in arithmetic.
    const auto as_s = [](std::optional<double> x) {
      return x ? std::optional<double>(static_cast<double>(static_cast<S>(*x))) : std::nullopt;
    };
    const auto ref =
        vtrace_oracle(T, B, log_rhos, discounts, rewards, values, bootstrap, as_s(s.rho_bar),
                      as_s(s.pg_rho_bar), static_cast<double>(static_cast<S>(s.lambda)));
    seedrl::vtrace_params<S> params;
    params.clip_rho_threshold =
        s.rho_bar ? std::optional<S>(static_cast<S>(*s.rho_bar)) : std::nullopt;
    params.clip_pg_rho_threshold =
        s.pg_rho_bar ? std::optional<S>(static_cast<S>(*s.pg_rho_bar)) : std::nullopt;
    params.lambda = static_cast<S>(s.lambda);
    std::vector<S> vs(T * B), pg(T * B);
    seedrl::vtrace(T, B, cast_to<S>(log_rhos), cast_to<S>(discounts), cast_to<S>(rewards),
                   cast_to<S>(values), cast_to<S>(bootstrap), params, vs, pg);
    const double vs_error = max_combined_error(vs, ref.vs);
    const double pg_error = max_combined_error(pg, ref.pg_advantages);
    CAPTURE(vs_error, pg_error);
    CHECK(vs_error < tol);
    CHECK(pg_error < tol);
  }
}

TEMPLATE_TEST_CASE("vtrace matches the oracle on random inputs with episode ends", "[vtrace]",
                   float, double) {
  using S = TestType;
  seedrl::random_generator rng(7);
  // The wide B run the scan's column blocks (256 and 128 bytes of S) and the single columns after
  // them: 97 floats are 64 + 32 + 1, 97 doubles 3 x 32 + 1, 200 end in 8 single columns.
  const std::pair<std::size_t, std::size_t> shapes[] = {{1, 1},  {3, 7},  {17, 4},
                                                        {40, 2}, {5, 97}, {3, 200}};
  for (const auto& [T, B] : shapes) {
    const std::size_t n = T * B;
    std::vector<double> log_rhos(n), discounts(n), rewards(n), values(n), bootstrap(B);
    for (std::size_t i = 0; i < n; ++i) {
      log_rhos[i] = vtrace_float_exact(rng.uniform(-2.0, 2.0));
      discounts[i] = rng.uniform() < 0.15 ? 0.0 : vtrace_float_exact(0.99);
      rewards[i] = vtrace_float_exact(rng.uniform(-1.0, 1.0));
      values[i] = vtrace_float_exact(rng.uniform(-3.0, 3.0));
    }
    for (auto& v : bootstrap) {
      v = vtrace_float_exact(rng.uniform(-3.0, 3.0));
    }
    const double lambda = vtrace_float_exact(0.9);
    const auto ref =
        vtrace_oracle(T, B, log_rhos, discounts, rewards, values, bootstrap, 1.0, 1.0, lambda);
    std::vector<S> vs(n), pg(n);
    seedrl::vtrace(T, B, cast_to<S>(log_rhos), cast_to<S>(discounts), cast_to<S>(rewards),
                   cast_to<S>(values), cast_to<S>(bootstrap),
                   seedrl::vtrace_params<S>{S(1), S(1), static_cast<S>(lambda)}, vs, pg);
    const double tol = std::is_same_v<S, float> ? 1e-5 : 1e-12;
    CAPTURE(T, B);
    CHECK(max_combined_error(vs, ref.vs) < tol);
    CHECK(max_combined_error(pg, ref.pg_advantages) < tol);
  }
}

TEMPLATE_TEST_CASE("vtrace cuts time-limit truncations as at an unroll end", "[vtrace][truncation]",
                   float, double) {
  using S = TestType;
  const double tol = std::is_same_v<S, float> ? 1e-5 : 1e-12;
  SECTION("a hand-checked unroll: the cut step gets vs = V and pg = 0, the one before bootstraps") {
    // T = 3, B = 1, rho = 1 everywhere (log rho 0), lambda 1, gamma 0.5 except where cut.
    // Transition 1 is cut (its env output ended the episode by a time limit).
    const std::vector<S> log_rhos{0, 0, 0}, discounts{0.5, 0.5, 0.5}, rewards{1, 2, 4},
        values{10, 20, 30}, bootstrap{40};
    const std::vector<std::uint8_t> cut{0, 1, 0};
    std::vector<S> vs(3), pg(3);
    seedrl::vtrace<S>(3, 1, log_rhos, discounts, rewards, values, bootstrap, cut,
                      seedrl::vtrace_params<S>{}, vs, pg);
    // t = 2: vs = 4 + 0.5 * 40 = 24, pg = 24 - 30 = -6.
    CHECK(vs[2] == S(24));
    CHECK(pg[2] == S(-6));
    // t = 1: cut. Treated as a termination it would be vs = r = 2; bootstrapped, 2 + 0.5 * 24.
    CHECK(vs[1] == S(20));
    CHECK(pg[1] == S(0));
    // t = 0: as at an unroll end after it: vs = 1 + 0.5 * V_1 = 11, pg = 11 - 10 = 1.
    CHECK(vs[0] == S(11));
    CHECK(pg[0] == S(1));
  }
  SECTION("random inputs against the direct-sum oracle; no cut is bit-identical to no flags") {
    seedrl::random_generator rng(11);
    const std::pair<std::size_t, std::size_t> shapes[] = {{1, 1}, {1, 5}, {3, 7}, {17, 4}, {40, 2}};
    for (const auto& [T, B] : shapes) {
      const std::size_t n = T * B;
      std::vector<double> log_rhos(n), discounts(n), rewards(n), values(n), bootstrap(B);
      std::vector<std::uint8_t> cut(n), none(n, 0);
      for (std::size_t i = 0; i < n; ++i) {
        log_rhos[i] = vtrace_float_exact(rng.uniform(-2.0, 2.0));
        discounts[i] = rng.uniform() < 0.1 ? 0.0 : vtrace_float_exact(0.99);
        rewards[i] = vtrace_float_exact(rng.uniform(-1.0, 1.0));
        values[i] = vtrace_float_exact(rng.uniform(-3.0, 3.0));
        cut[i] = rng.uniform() < 0.15 ? 1 : 0;
      }
      for (auto& v : bootstrap) {
        v = vtrace_float_exact(rng.uniform(-3.0, 3.0));
      }
      cut[n - 1] = 1;  // a cut in the last row too
      const double lambda = vtrace_float_exact(0.9);
      const auto ref = vtrace_oracle(T, B, log_rhos, discounts, rewards, values, bootstrap, 1.0,
                                     vtrace_float_exact(0.8), lambda, &cut);
      const seedrl::vtrace_params<S> params{S(1), static_cast<S>(vtrace_float_exact(0.8)),
                                            static_cast<S>(lambda)};
      std::vector<S> vs(n), pg(n);
      seedrl::vtrace(T, B, cast_to<S>(log_rhos), cast_to<S>(discounts), cast_to<S>(rewards),
                     cast_to<S>(values), cast_to<S>(bootstrap), cut, params, vs, pg);
      CAPTURE(T, B);
      CHECK(max_combined_error(vs, ref.vs) < tol);
      CHECK(max_combined_error(pg, ref.pg_advantages) < tol);
      for (std::size_t i = 0; i < n; ++i) {
        if (cut[i] != 0) {
          CHECK(vs[i] == static_cast<S>(values[i]));
          CHECK(pg[i] == S(0));
        }
      }
      // The flags matter: the oracle without the cut gives other targets.
      const auto uncut = vtrace_oracle(T, B, log_rhos, discounts, rewards, values, bootstrap, 1.0,
                                       vtrace_float_exact(0.8), lambda);
      CHECK(max_combined_error(vs, uncut.vs) > 1e-3);
      // All-zero flags run the same arithmetic as the overload without them: equal bit for bit.
      std::vector<S> vs_none(n), pg_none(n), vs_plain(n), pg_plain(n);
      seedrl::vtrace(T, B, cast_to<S>(log_rhos), cast_to<S>(discounts), cast_to<S>(rewards),
                     cast_to<S>(values), cast_to<S>(bootstrap), none, params, vs_none, pg_none);
      seedrl::vtrace(T, B, cast_to<S>(log_rhos), cast_to<S>(discounts), cast_to<S>(rewards),
                     cast_to<S>(values), cast_to<S>(bootstrap), params, vs_plain, pg_plain);
      CHECK(vs_none == vs_plain);
      CHECK(pg_none == pg_plain);
    }
  }
  SECTION("a truncated array of the wrong size is refused") {
    std::vector<S> in(6, S(0)), boot(2, S(0)), vs(6), pg(6);
    const std::vector<std::uint8_t> cut(5, 0);
    CHECK_THROWS_WITH(
        seedrl::vtrace<S>(3, 2, in, in, in, in, boot, cut, seedrl::vtrace_params<S>{}, vs, pg),
        Catch::Contains("truncated holds 5 values, expected T * B = 6"));
  }
}

TEST_CASE("vtrace rejects bad sizes and parameters before writing", "[vtrace]") {
  const std::size_t T = 2;
  const std::size_t B = 3;
  std::vector<double> in(T * B, 0.5), boot(B, 1.0), vs(T * B, -7.0), pg(T * B, -7.0);
  const seedrl::vtrace_params<double> ok;
  CHECK_NOTHROW(seedrl::vtrace(T, B, in, in, in, in, boot, ok, vs, pg));
  std::fill(vs.begin(), vs.end(), -7.0);
  std::vector<double> short_in(T * B - 1, 0.5);
  CHECK_THROWS_AS(seedrl::vtrace(T, B, short_in, in, in, in, boot, ok, vs, pg),
                  std::invalid_argument);
  CHECK_THROWS_AS(seedrl::vtrace(T, B, in, in, in, in, in, ok, vs, pg), std::invalid_argument);
  CHECK_THROWS_WITH(seedrl::vtrace(T, B, in, in, in, in, boot, ok, short_in, pg),
                    Catch::Contains("vs holds 5 values, expected T * B = 6"));
  seedrl::vtrace_params<double> bad = ok;
  bad.lambda = 1.5;
  CHECK_THROWS_WITH(seedrl::vtrace(T, B, in, in, in, in, boot, bad, vs, pg),
                    Catch::Contains("lambda"));
  bad = ok;
  bad.clip_rho_threshold = 0.0;
  CHECK_THROWS_WITH(seedrl::vtrace(T, B, in, in, in, in, boot, bad, vs, pg),
                    Catch::Contains("clip_rho_threshold must be positive"));
  bad = ok;
  bad.clip_pg_rho_threshold = std::numeric_limits<double>::quiet_NaN();
  CHECK_THROWS_AS(seedrl::vtrace(T, B, in, in, in, in, boot, bad, vs, pg), std::invalid_argument);
  // Writing vs over the values would corrupt the scan.
  std::vector<double> values(T * B, 0.5);
  CHECK_THROWS_WITH(seedrl::vtrace(T, B, in, in, in, std::span<const double>(values), boot, ok,
                                   std::span<double>(values), pg),
                    Catch::Contains("overlaps"));
  CHECK(std::all_of(vs.begin(), vs.end(), [](double v) { return v == -7.0; }));
}

// ---------------------------------------------------------------------------------------------
// Categorical distribution

namespace {

std::vector<double> naive_log_softmax(const std::vector<double>& z) {
  double sum = 0.0;
  for (double v : z) {
    sum += std::exp(v);
  }
  std::vector<double> out;
  for (double v : z) {
    out.push_back(std::log(std::exp(v) / sum));
  }
  return out;
}

double naive_entropy(const std::vector<double>& z) {
  double sum = 0.0;
  for (double v : z) {
    sum += std::exp(v);
  }
  double h = 0.0;
  for (double v : z) {
    const double p = std::exp(v) / sum;
    h -= p * std::log(p);
  }
  return h;
}

std::vector<double> random_logits(seedrl::random_generator& rng, std::size_t n, double scale) {
  std::vector<double> z(n);
  for (auto& v : z) {
    v = vtrace_float_exact(rng.uniform(-scale, scale));
  }
  return z;
}

}  // namespace

TEMPLATE_TEST_CASE("log_softmax matches a naive double formula and stays finite", "[categorical]",
                   float, double) {
  using S = TestType;
  seedrl::random_generator rng(11);
  const double tol = std::is_same_v<S, float> ? 1e-5 : 1e-13;
  for (int A : {1, 2, 3, 7, 18}) {
    for (int trial = 0; trial < 20; ++trial) {
      const auto z = random_logits(rng, static_cast<std::size_t>(A), 8.0);
      const auto zs = cast_to<S>(z);
      std::vector<S> out(z.size());
      seedrl::log_softmax(zs.data(), A, out.data());
      CAPTURE(A, trial);
      CHECK(max_combined_error(out, naive_log_softmax(z)) < tol);
      for (int a = 0; a < A; ++a) {
        CHECK(seedrl::log_prob(zs.data(), A, a) == out[static_cast<std::size_t>(a)]);
      }
      std::vector<S> p(z.size());
      seedrl::softmax(zs.data(), A, p.data());
      double total = 0.0;
      for (S v : p) {
        total += static_cast<double>(v);
      }
      CHECK(std::abs(total - 1.0) < tol * A);
    }
  }
  // Logits far past exp's range: the naive formula gives inf/inf, ours the shifted answer.
  const std::vector<S> big = {S(1000), S(999), S(990), S(-1000)};
  const std::vector<double> small = {0.0, -1.0, -10.0, -2000.0};
  std::vector<S> out(big.size());
  seedrl::log_softmax(big.data(), 4, out.data());
  // The maximum of `small` is 0, so the direct formula is exact there; exp(-2000) is 0.
  const double lse = std::log(std::exp(0.0) + std::exp(-1.0) + std::exp(-10.0));
  std::vector<double> expected;
  for (double x : small) {
    expected.push_back(x - lse);
  }
  for (std::size_t i = 0; i < big.size(); ++i) {
    REQUIRE(std::isfinite(out[i]));
    CHECK(combined_error(static_cast<double>(out[i]), expected[i]) < tol);
  }
  CHECK(std::isfinite(seedrl::entropy(big.data(), 4)));
}

TEMPLATE_TEST_CASE("categorical entropy is log A when uniform and matches a naive formula",
                   "[categorical]", float, double) {
  using S = TestType;
  const double tol = std::is_same_v<S, float> ? 1e-5 : 1e-13;
  for (int A : {1, 2, 5, 18, 1000}) {
    const std::vector<S> zeros(static_cast<std::size_t>(A), S(0));
    const std::vector<S> constant(static_cast<std::size_t>(A), S(-3.7));
    CAPTURE(A);
    CHECK(combined_error(seedrl::entropy(zeros.data(), A), std::log(static_cast<double>(A))) < tol);
    CHECK(combined_error(seedrl::entropy(constant.data(), A), std::log(static_cast<double>(A))) <
          tol);
  }
  seedrl::random_generator rng(12);
  for (int trial = 0; trial < 50; ++trial) {
    const auto z = random_logits(rng, 6, 5.0);
    const auto zs = cast_to<S>(z);
    CHECK(combined_error(seedrl::entropy(zs.data(), 6), naive_entropy(z)) < tol);
  }
  // A nearly deterministic row: some probabilities underflow to exactly 0, where p log p
  // would be 0 * -inf.
  const std::vector<S> peaked = {S(0), S(-200), S(-1000), S(-1e4)};
  const S h = seedrl::entropy(peaked.data(), 4);
  CHECK(std::isfinite(h));
  CHECK(h >= S(0));
  CHECK(h < S(1e-6));
}

TEMPLATE_TEST_CASE("sampled action frequencies match softmax", "[categorical]", float, double) {
  using S = TestType;
  // The last action's weight underflows to 0, so it must never be drawn.
  const std::vector<double> z = {0.5, -1.0, 2.0, 0.0, -3.0, 1.0, -1e4};
  const std::size_t A = z.size();
  const std::size_t B = 60000;
  std::vector<S> logits;
  for (std::size_t b = 0; b < B; ++b) {
    logits.insert(logits.end(), z.begin(), z.end());
  }
  seedrl::random_generator rng(12345);
  std::vector<std::int32_t> actions(B);
  seedrl::sample_actions<S>(logits, B, A, rng, actions);
  std::vector<double> counts(A, 0.0);
  for (auto a : actions) {
    REQUIRE(a >= 0);
    REQUIRE(static_cast<std::size_t>(a) < A);
    counts[static_cast<std::size_t>(a)] += 1.0;
  }
  CHECK(counts[A - 1] == 0.0);
  const auto logp = naive_log_softmax({z.begin(), z.end() - 1});
  double chi2 = 0.0;
  for (std::size_t i = 0; i + 1 < A; ++i) {
    const double expected = static_cast<double>(B) * std::exp(logp[i]);
    chi2 += (counts[i] - expected) * (counts[i] - expected) / expected;
  }
  // 5 degrees of freedom: P(chi2 > 20.52) = 0.001. The seed is fixed, so this is not flaky;
  // the bound is what a correct sampler passes for nearly every seed.
  CAPTURE(chi2);
  CHECK(chi2 < 20.52);
}

TEMPLATE_TEST_CASE("sampling is reproducible for a seed and uses one draw per row", "[categorical]",
                   float, double) {
  using S = TestType;
  const std::size_t B = 64;
  const std::size_t A = 9;
  seedrl::random_generator data(3);
  const auto logits = cast_to<S>(random_logits(data, B * A, 2.0));
  std::vector<std::int32_t> first(B), second(B), other(B), halves(B);
  seedrl::random_generator a(99), b(99), c(100), d(99);
  seedrl::sample_actions<S>(logits, B, A, a, first);
  seedrl::sample_actions<S>(logits, B, A, b, second);
  seedrl::sample_actions<S>(logits, B, A, c, other);
  CHECK(first == second);
  CHECK(first != other);
  // Two calls over halves continue the same stream as one call over all rows.
  const std::span<const S> all(logits);
  seedrl::sample_actions<S>(all.first(B / 2 * A), B / 2, A, d, std::span(halves).first(B / 2));
  seedrl::sample_actions<S>(all.subspan(B / 2 * A), B - B / 2, A, d,
                            std::span(halves).subspan(B / 2));
  CHECK(first == halves);
}

TEMPLATE_TEST_CASE("argmax_actions picks the largest logit and the first of ties", "[categorical]",
                   float, double) {
  using S = TestType;
  const std::vector<S> logits = {S(0.1), S(3),  S(-1), S(2),      // row 0: 1
                                 S(5),   S(5),  S(5),  S(5),      // row 1: all tied -> 0
                                 S(-9),  S(-8), S(-7), S(-7),     // row 2: tie at 2, 3 -> 2
                                 S(-1),  S(-2), S(-3), S(1e30)};  // row 3: 3
  std::vector<std::int32_t> actions(4, -1);
  seedrl::argmax_actions<S>(logits, 4, 4, actions);
  CHECK(actions == std::vector<std::int32_t>{1, 0, 2, 3});
  std::vector<std::int32_t> wrong(3);
  CHECK_THROWS_AS(seedrl::argmax_actions<S>(logits, 4, 4, wrong), std::invalid_argument);
}

TEMPLATE_TEST_CASE("categorical batch helpers agree with the row functions and check sizes",
                   "[categorical]", float, double) {
  using S = TestType;
  const std::size_t B = 5;
  const std::size_t A = 3;
  seedrl::random_generator rng(5);
  const auto logits = cast_to<S>(random_logits(rng, B * A, 3.0));
  const std::vector<std::int32_t> actions = {0, 2, 1, 1, 0};
  std::vector<S> log_probs(B), entropies(B);
  seedrl::categorical_log_probs<S>(logits, B, A, actions, log_probs);
  seedrl::categorical_entropy<S>(logits, B, A, entropies);
  for (std::size_t b = 0; b < B; ++b) {
    CHECK(log_probs[b] == seedrl::log_prob(logits.data() + b * A, 3, actions[b]));
    CHECK(entropies[b] == seedrl::entropy(logits.data() + b * A, 3));
  }
  std::vector<S> out(B, S(-7));
  const std::vector<std::int32_t> bad_action = {0, 3, 1, 1, 0};
  CHECK_THROWS_WITH(seedrl::categorical_log_probs<S>(logits, B, A, bad_action, out),
                    Catch::Contains("action 3 at row 1 is outside [0, 3)"));
  CHECK(std::all_of(out.begin(), out.end(), [](S v) { return v == S(-7); }));
  CHECK_THROWS_AS(seedrl::categorical_entropy<S>(logits, B, A + 1, out), std::invalid_argument);
  CHECK_THROWS_AS(seedrl::categorical_entropy<S>(logits, B * A, 0, out), std::invalid_argument);
  std::vector<std::int32_t> sampled(B + 1);
  seedrl::random_generator g(1);
  CHECK_THROWS_AS(seedrl::sample_actions<S>(logits, B, A, g, sampled), std::invalid_argument);
}

TEST_CASE("categorical gradients match central finite differences", "[categorical]") {
  // In double with h = 1e-6: truncation ~h^2, cancellation ~1e-16 / h.
  const double h = 1e-6;
  const int A = 6;
  seedrl::random_generator rng(21);
  double worst_log_prob = 0.0;
  double worst_entropy = 0.0;
  double worst_combined = 0.0;
  for (int trial = 0; trial < 10; ++trial) {
    auto z = random_logits(rng, A, 3.0);
    const auto fd = [&](auto f, int j) {
      std::vector<double> plus = z, minus = z;
      plus[static_cast<std::size_t>(j)] += h;
      minus[static_cast<std::size_t>(j)] -= h;
      return (f(plus.data()) - f(minus.data())) / (2 * h);
    };
    std::vector<double> grad(A);
    for (int a = 0; a < A; ++a) {
      seedrl::log_prob_gradient(z.data(), A, a, grad.data());
      for (int j = 0; j < A; ++j) {
        const double numeric = fd([&](const double* x) { return seedrl::log_prob(x, A, a); }, j);
        worst_log_prob = std::max(worst_log_prob, combined_error(grad[j], numeric));
      }
    }
    const double h_value = seedrl::entropy_gradient(z.data(), A, grad.data());
    CHECK(h_value == Approx(seedrl::entropy(z.data(), A)).epsilon(1e-14));
    for (int j = 0; j < A; ++j) {
      const double numeric = fd([&](const double* x) { return seedrl::entropy(x, A); }, j);
      worst_entropy = std::max(worst_entropy, combined_error(grad[j], numeric));
    }
    const double cp = 0.7;
    const double ce = -1.3;
    const int a = trial % A;
    const double h_combined =
        seedrl::log_prob_entropy_gradient(z.data(), A, a, cp, ce, grad.data());
    CHECK(h_combined == Approx(seedrl::entropy(z.data(), A)).epsilon(1e-14));
    for (int j = 0; j < A; ++j) {
      const double numeric = fd(
          [&](const double* x) {
            return cp * seedrl::log_prob(x, A, a) + ce * seedrl::entropy(x, A);
          },
          j);
      worst_combined = std::max(worst_combined, combined_error(grad[j], numeric));
    }
  }
  CAPTURE(worst_log_prob, worst_entropy, worst_combined);
  CHECK(worst_log_prob < 1e-8);
  CHECK(worst_entropy < 1e-8);
  CHECK(worst_combined < 1e-8);

  // Float runs the same formulas; its gradients agree with double's to float precision.
  const auto z = random_logits(rng, A, 3.0);
  const auto zf = cast_to<float>(z);
  std::vector<double> gd(A);
  std::vector<float> gf(A);
  seedrl::log_prob_entropy_gradient(z.data(), A, 2, 0.7, -1.3, gd.data());
  seedrl::log_prob_entropy_gradient(zf.data(), A, 2, 0.7f, -1.3f, gf.data());
  CHECK(max_combined_error(gf, gd) < 1e-6);
}

// ---------------------------------------------------------------------------------------------
// IMPALA loss

namespace {

// A batch in double with float-representable values, so float and double see equal inputs.
struct impala_data {
  std::size_t T = 0;
  std::size_t B = 0;
  std::size_t A = 0;
  std::vector<double> logits, values, behaviour_log_probs, rewards;
  std::vector<std::int32_t> actions;
  std::vector<std::uint8_t> dones;
  std::vector<std::uint8_t> truncated;  // [(T+1)*B] set only where dones is
};

// `truncated_share` of the episode ends become time limits (0: none, and the draws of the
// other arrays are those of a batch without truncation).
impala_data make_impala_data(std::size_t T, std::size_t B, std::size_t A, std::uint64_t seed,
                             double reward_scale, double truncated_share = 0.0) {
  seedrl::random_generator rng(seed);
  impala_data d{T, B, A, {}, {}, {}, {}, {}, {}, {}};
  const std::size_t steps = (T + 1) * B;
  d.logits = random_logits(rng, steps * A, 2.0);
  for (std::size_t i = 0; i < steps; ++i) {
    d.values.push_back(vtrace_float_exact(rng.uniform(-3.0, 3.0)));
    d.rewards.push_back(vtrace_float_exact(rng.uniform(-reward_scale, reward_scale)));
    d.dones.push_back(rng.uniform() < 0.2 ? 1 : 0);
    d.actions.push_back(static_cast<std::int32_t>(rng.below(A)));
    // The actor's policy: other random logits, so rho = pi / mu falls on both sides of 1.
    const auto mu = random_logits(rng, A, 2.0);
    d.behaviour_log_probs.push_back(
        vtrace_float_exact(naive_log_softmax(mu)[static_cast<std::size_t>(d.actions.back())]));
  }
  // At least one episode end inside the unroll, whatever the draws.
  d.dones[(T / 2 + 1) * B - 1] = 1;
  d.truncated.assign(steps, 0);
  if (truncated_share > 0.0) {
    for (std::size_t i = 0; i < steps; ++i) {
      d.truncated[i] = d.dones[i] != 0 && rng.uniform() < truncated_share ? 1 : 0;
    }
    d.truncated[(T / 2 + 1) * B - 1] = 1;  // and that one a time limit
  }
  return d;
}

struct naive_terms {
  double total = 0.0;
  double policy = 0.0;
  double baseline = 0.0;
  double entropy = 0.0;
  double mean_entropy = 0.0;  // the policy's own, unweighted
  vtrace_reference targets;
  std::vector<double> log_rhos, rewards;
};

// SEED's compute_loss written out with plain loops in double. With `frozen` the V-trace
// targets are taken as given instead of computed: the loss as a function of the outputs with
// vs and pg_adv held constant, which is what the gradient differentiates.
naive_terms naive_impala(const impala_data& d, const std::vector<double>& logits,
                         const std::vector<double>& values,
                         const seedrl::impala_loss_config<double>& c,
                         const vtrace_reference* frozen = nullptr) {
  const std::size_t T = d.T, B = d.B, A = d.A, n = T * B;
  naive_terms out;
  std::vector<double> target_log_probs(n), entropies(n), discounts(n), v(n), bootstrap(B);
  std::vector<std::uint8_t> cut(n);  // transition t is cut where step t+1 was truncated
  out.log_rhos.resize(n);
  out.rewards.resize(n);
  for (std::size_t t = 0; t < T; ++t) {
    for (std::size_t b = 0; b < B; ++b) {
      const std::size_t i = t * B + b;
      const std::vector<double> row(logits.begin() + static_cast<std::ptrdiff_t>(i * A),
                                    logits.begin() + static_cast<std::ptrdiff_t>((i + 1) * A));
      target_log_probs[i] = naive_log_softmax(row)[static_cast<std::size_t>(d.actions[i])];
      entropies[i] = naive_entropy(row);
      out.log_rhos[i] = target_log_probs[i] - d.behaviour_log_probs[i];
      double r = d.rewards[(t + 1) * B + b];
      if (c.max_abs_reward) {
        r = std::clamp(r, -*c.max_abs_reward, *c.max_abs_reward);
      }
      out.rewards[i] = r;
      discounts[i] = d.dones[(t + 1) * B + b] ? 0.0 : c.discount;
      cut[i] = d.truncated[(t + 1) * B + b];
      v[i] = values[i];
    }
  }
  for (std::size_t b = 0; b < B; ++b) {
    bootstrap[b] = values[T * B + b];
  }
  out.targets = frozen
                    ? *frozen
                    : vtrace_oracle(T, B, out.log_rhos, discounts, out.rewards, v, bootstrap,
                                    c.clip_rho_threshold, c.clip_pg_rho_threshold, c.lambda, &cut);
  for (std::size_t i = 0; i < n; ++i) {
    out.policy -= target_log_probs[i] * out.targets.pg_advantages[i] / static_cast<double>(n);
    const double err = out.targets.vs[i] - v[i];
    out.baseline += c.baseline_cost * 0.5 * err * err / static_cast<double>(n);
    out.entropy -= c.entropy_cost * entropies[i] / static_cast<double>(n);
    out.mean_entropy += entropies[i] / static_cast<double>(n);
  }
  out.total = out.policy + out.baseline + out.entropy;
  return out;
}

// The batch converted to S, owning its arrays, with spans for the loss.
template <class S>
struct impala_views {
  std::vector<S> logits, values, behaviour_log_probs, rewards;
  std::vector<S> grad_logits, grad_values;
  explicit impala_views(const impala_data& d)
      : logits(cast_to<S>(d.logits)),
        values(cast_to<S>(d.values)),
        behaviour_log_probs(cast_to<S>(d.behaviour_log_probs)),
        rewards(cast_to<S>(d.rewards)),
        grad_logits(d.logits.size(), std::numeric_limits<S>::quiet_NaN()),
        grad_values(d.values.size(), std::numeric_limits<S>::quiet_NaN()) {}
  seedrl::impala_batch<S> batch(const impala_data& d) const {
    return {d.T,     d.B,     d.A,        logits, values, d.actions, behaviour_log_probs,
            rewards, d.dones, d.truncated};
  }
  seedrl::impala_gradients<S> gradients() { return {grad_logits, grad_values}; }
};

template <class S>
seedrl::impala_loss_config<S> vtrace_config_as(const seedrl::impala_loss_config<double>& c) {
  const auto opt = [](std::optional<double> x) {
    return x ? std::optional<S>(static_cast<S>(*x)) : std::nullopt;
  };
  return {static_cast<S>(c.discount),     static_cast<S>(c.baseline_cost),
          static_cast<S>(c.entropy_cost), static_cast<S>(c.lambda),
          opt(c.clip_rho_threshold),      opt(c.clip_pg_rho_threshold),
          opt(c.max_abs_reward)};
}

struct impala_case {
  const char* name;
  std::size_t T, B, A;
  std::uint64_t seed;
  double reward_scale;
  seedrl::impala_loss_config<double> config;
  double truncated_share;  // of the episode ends that are time limits
};

std::vector<impala_case> impala_cases() {
  seedrl::impala_loss_config<double> clipped_rewards;
  clipped_rewards.max_abs_reward = 1.0;
  clipped_rewards.entropy_cost = 0.05;  // large enough that its gradient is visible
  clipped_rewards.baseline_cost = 0.7;
  clipped_rewards.discount = vtrace_float_exact(0.95);
  clipped_rewards.lambda = vtrace_float_exact(0.8);
  clipped_rewards.clip_rho_threshold = 1.5;
  clipped_rewards.clip_pg_rho_threshold = vtrace_float_exact(1.2);
  seedrl::impala_loss_config<double> no_clipping;
  no_clipping.clip_rho_threshold = std::nullopt;
  no_clipping.clip_pg_rho_threshold = std::nullopt;
  no_clipping.entropy_cost = 0.01;
  seedrl::impala_loss_config<double> defaults;
  defaults.discount = vtrace_float_exact(defaults.discount);
  defaults.entropy_cost = vtrace_float_exact(defaults.entropy_cost);
  return {{"SEED defaults", 6, 3, 4, 1, 1.0, defaults, 0.0},
          {"reward clipping and custom costs", 5, 4, 3, 2, 3.0, clipped_rewards, 0.0},
          {"no rho clipping", 4, 2, 5, 3, 1.0, no_clipping, 0.0},
          {"one step one unroll", 1, 1, 2, 4, 1.0, defaults, 0.0},
          {"time limits, SEED defaults", 9, 4, 4, 5, 1.0, defaults, 0.5},
          {"time limits, clipping and custom costs", 8, 5, 3, 6, 3.0, clipped_rewards, 0.6},
          {"time limits, no rho clipping", 7, 3, 5, 7, 1.0, no_clipping, 0.5}};
}

}  // namespace

TEST_CASE("impala_loss models seedrl::Loss", "[loss]") {
  STATIC_REQUIRE(seedrl::Loss<seedrl::impala_loss<float>>);
  STATIC_REQUIRE(seedrl::Loss<seedrl::impala_loss<double>>);
  STATIC_REQUIRE(std::is_same_v<seedrl::impala_loss<>::scalar_type, float>);
  STATIC_REQUIRE_FALSE(seedrl::Loss<seedrl::impala_batch<float>>);
}

TEMPLATE_TEST_CASE("impala_loss terms match a naive double implementation", "[loss]", float,
                   double) {
  using S = TestType;
  const double tol = std::is_same_v<S, float> ? 1e-5 : 1e-12;
  for (const impala_case& k : impala_cases()) {
    INFO("case: " << k.name);
    const impala_data d =
        make_impala_data(k.T, k.B, k.A, k.seed, k.reward_scale, k.truncated_share);
    const naive_terms ref = naive_impala(d, d.logits, d.values, k.config);
    impala_views<S> views(d);
    auto grad = views.gradients();
    const seedrl::impala_loss<S> loss(vtrace_config_as<S>(k.config));
    const seedrl::loss_terms got = loss(views.batch(d), grad);
    CAPTURE(got.total, ref.total, got.policy, ref.policy, got.baseline, ref.baseline, got.entropy,
            ref.entropy);
    CHECK(combined_error(got.policy, ref.policy) < tol);
    CHECK(combined_error(got.baseline, ref.baseline) < tol);
    CHECK(combined_error(got.entropy, ref.entropy) < tol);
    CHECK(combined_error(got.policy_entropy, ref.mean_entropy) < tol);
    CHECK(combined_error(got.total, ref.total) < tol);
    CHECK(got.total == got.policy + got.baseline + got.entropy);
    // Every gradient element was written (they started as NaN); step T's rows are zero.
    const std::size_t n = k.T * k.B;
    CHECK(std::all_of(views.grad_logits.begin(), views.grad_logits.end(),
                      [](S g) { return std::isfinite(g); }));
    CHECK(std::all_of(views.grad_values.begin(), views.grad_values.end(),
                      [](S g) { return std::isfinite(g); }));
    CHECK(std::all_of(views.grad_logits.begin() + static_cast<std::ptrdiff_t>(n * k.A),
                      views.grad_logits.end(), [](S g) { return g == S(0); }));
    CHECK(std::all_of(views.grad_values.begin() + static_cast<std::ptrdiff_t>(n),
                      views.grad_values.end(), [](S g) { return g == S(0); }));
  }
}

TEST_CASE("impala_loss::compute on host_backend keeps one workspace across batches", "[loss]") {
  // The backend path with a kept, growing workspace gives operator()'s bits on every batch:
  // the same kernels, V-trace and sums, only the scratch is reused.
  seedrl::host_backend backend;
  seedrl::impala_loss_workspace<seedrl::host_backend, float> ws;
  for (const impala_case& k : impala_cases()) {
    INFO("case: " << k.name);
    const impala_data d =
        make_impala_data(k.T, k.B, k.A, k.seed, k.reward_scale, k.truncated_share);
    const seedrl::impala_loss<float> loss(vtrace_config_as<float>(k.config));
    impala_views<float> want_views(d);
    auto want_grad = want_views.gradients();
    const seedrl::loss_terms want = loss(want_views.batch(d), want_grad);
    impala_views<float> views(d);
    const auto batch = views.batch(d);
    seedrl::impala_loss_operands<float> op;
    op.T = static_cast<int>(k.T);
    op.B = static_cast<int>(k.B);
    op.policy = seedrl::categorical_distribution::rows(batch);
    op.values = batch.values.data();
    op.behaviour_log_probs = batch.behaviour_log_probs.data();
    op.rewards = batch.rewards.data();
    op.dones = batch.dones.data();
    op.truncated = batch.truncated.data();
    op.grad_logits = views.grad_logits.data();
    op.grad_values = views.grad_values.data();
    const seedrl::loss_terms got = loss.compute(backend, op, ws);
    CHECK(ws.rows.size() >= 6 * k.T * k.B);
    CHECK(got.total == want.total);
    CHECK(got.policy == want.policy);
    CHECK(got.baseline == want.baseline);
    CHECK(got.entropy == want.entropy);
    CHECK(views.grad_logits == want_views.grad_logits);
    CHECK(views.grad_values == want_views.grad_values);
  }
}

TEST_CASE("host_backend sums each array of doubles", "[loss]") {
  const std::vector<double> x{1.0, 1e16, -1e16, 2.0, 3.0, 4.0};
  std::vector<double> out(3, -1.0);
  seedrl::host_backend{}.sums(x.data(), 3, 2, std::span<double>(out));
  CHECK(out == std::vector<double>{1e16, -1e16 + 2.0, 7.0});
  std::vector<double> none(2, -1.0);
  seedrl::host_backend{}.sums(x.data(), 2, 0, std::span<double>(none));
  CHECK(none == std::vector<double>{0.0, 0.0});
}

TEST_CASE("impala_loss test data exercises clipping and episode ends", "[loss]") {
  // Guards the gradient test below against data that would leave a branch untested.
  for (const impala_case& k : impala_cases()) {
    if (k.T * k.B < 10) {
      continue;
    }
    INFO("case: " << k.name);
    const impala_data d =
        make_impala_data(k.T, k.B, k.A, k.seed, k.reward_scale, k.truncated_share);
    const naive_terms ref = naive_impala(d, d.logits, d.values, k.config);
    const double rho_bar = k.config.clip_rho_threshold.value_or(1.0);
    CHECK(std::any_of(ref.log_rhos.begin(), ref.log_rhos.end(),
                      [&](double x) { return std::exp(x) > rho_bar; }));
    CHECK(std::any_of(ref.log_rhos.begin(), ref.log_rhos.end(),
                      [](double x) { return std::exp(x) < 1.0; }));
    CHECK(std::any_of(d.dones.begin() + static_cast<std::ptrdiff_t>(k.B),
                      d.dones.end() - static_cast<std::ptrdiff_t>(k.B),
                      [](std::uint8_t x) { return x != 0; }));
    if (k.config.max_abs_reward) {
      CHECK(std::any_of(d.rewards.begin(), d.rewards.end(),
                        [&](double r) { return std::abs(r) > *k.config.max_abs_reward; }));
    }
  }
}

TEST_CASE("impala_loss gradients match central finite differences", "[loss]") {
  // Finite differences of the naive loss with V-trace targets frozen at the unperturbed point
  // (stop-gradient), in double. Error |a - b| / max(1, |a|, |b|); also relative to the
  // largest gradient, which is the stricter test since gradients are O(1/N).
  const double h = 1e-6;
  for (const impala_case& k : impala_cases()) {
    INFO("case: " << k.name);
    const impala_data d =
        make_impala_data(k.T, k.B, k.A, k.seed, k.reward_scale, k.truncated_share);
    const naive_terms at = naive_impala(d, d.logits, d.values, k.config);
    impala_views<double> views(d);
    auto grad = views.gradients();
    const seedrl::impala_loss<double> loss(k.config);
    loss(views.batch(d), grad);

    const auto numeric = [&](bool wrt_logits, std::size_t j) {
      std::vector<double> logits = d.logits, values = d.values;
      double& x = wrt_logits ? logits[j] : values[j];
      const double x0 = x;
      x = x0 + h;
      const double plus = naive_impala(d, logits, values, k.config, &at.targets).total;
      x = x0 - h;
      const double minus = naive_impala(d, logits, values, k.config, &at.targets).total;
      return (plus - minus) / (2 * h);
    };
    double worst = 0.0;
    double largest = 0.0;
    double worst_abs = 0.0;
    for (std::size_t j = 0; j < d.logits.size(); ++j) {
      const double fd = numeric(true, j);
      worst = std::max(worst, combined_error(views.grad_logits[j], fd));
      worst_abs = std::max(worst_abs, std::abs(views.grad_logits[j] - fd));
      largest = std::max(largest, std::abs(fd));
    }
    for (std::size_t j = 0; j < d.values.size(); ++j) {
      const double fd = numeric(false, j);
      worst = std::max(worst, combined_error(views.grad_values[j], fd));
      worst_abs = std::max(worst_abs, std::abs(views.grad_values[j] - fd));
      largest = std::max(largest, std::abs(fd));
    }
    const double scaled = worst_abs / largest;
    CAPTURE(worst, scaled, largest);
    CHECK(worst < 1e-6);
    CHECK(scaled < 1e-6);
    // The float loss computes the same gradients to float precision.
    impala_views<float> fviews(d);
    auto fgrad = fviews.gradients();
    seedrl::impala_loss<float>(vtrace_config_as<float>(k.config))(fviews.batch(d), fgrad);
    CHECK(max_combined_error(fviews.grad_logits, views.grad_logits) < 1e-6);
    CHECK(max_combined_error(fviews.grad_values, views.grad_values) < 1e-6);
  }
}

TEST_CASE("impala_loss rejects bad configs and batches before writing", "[loss]") {
  using cfg = seedrl::impala_loss_config<float>;
  const auto with = [](auto edit) {
    cfg c;
    edit(c);
    return c;
  };
  CHECK_THROWS_WITH(seedrl::impala_loss<float>(with([](cfg& c) { c.discount = 1.5f; })),
                    Catch::Contains("discount"));
  CHECK_THROWS_AS(seedrl::impala_loss<float>(with([](cfg& c) { c.baseline_cost = -1.f; })),
                  std::invalid_argument);
  CHECK_THROWS_AS(seedrl::impala_loss<float>(with([](cfg& c) { c.entropy_cost = -1.f; })),
                  std::invalid_argument);
  CHECK_THROWS_WITH(seedrl::impala_loss<float>(with([](cfg& c) { c.max_abs_reward = 0.f; })),
                    Catch::Contains("std::nullopt"));
  CHECK_THROWS_WITH(seedrl::impala_loss<float>(with([](cfg& c) { c.lambda = -0.1f; })),
                    Catch::Contains("lambda"));
  CHECK_THROWS_AS(seedrl::impala_loss<float>(with([](cfg& c) { c.clip_rho_threshold = -1.f; })),
                  std::invalid_argument);

  impala_data d = make_impala_data(3, 2, 4, 9, 1.0);
  const seedrl::impala_loss<float> loss;
  {
    impala_views<float> v(d);
    auto grad = v.gradients();
    auto batch = v.batch(d);
    batch.values = batch.values.first(batch.values.size() - 1);
    CHECK_THROWS_WITH(loss(batch, grad), Catch::Contains("batch.values holds 7 values"));
    CHECK(std::isnan(v.grad_values[0]));
    batch = v.batch(d);
    grad.logits = grad.logits.first(grad.logits.size() - 1);
    CHECK_THROWS_WITH(loss(batch, grad), Catch::Contains("grad.logits"));
  }
  {
    impala_data bad = d;
    bad.actions[5] = 4;  // t = 2, b = 1: used
    impala_views<float> v(bad);
    auto grad = v.gradients();
    CHECK_THROWS_WITH(loss(v.batch(bad), grad), Catch::Contains("(t = 2, b = 1) is 4"));
    CHECK(std::isnan(v.grad_logits[0]));
  }
  {
    // Step T's action belongs to the next unroll's first transition and is not read.
    impala_data last = d;
    last.actions[3 * 2 + 1] = -1;
    impala_views<float> v(last);
    auto grad = v.gradients();
    CHECK_NOTHROW(loss(v.batch(last), grad));
  }
  {
    impala_views<float> v(d);
    seedrl::impala_gradients<float> aliased{v.logits, v.grad_values};
    CHECK_THROWS_WITH(loss(v.batch(d), aliased), Catch::Contains("overlap"));
  }
}

namespace {

// The IMPALA loss with time limits, from the definitions, in double: the V-trace targets from
// the direct-sum oracle with transition t cut where step t+1 was truncated, and the gradients
// written out analytically:
//   d/dz_j = -(pg_t / N) (onehot_j - p_j) + (entropy_cost / N) p_j (log p_j + H_t)
//   d/dV_t = -baseline_cost (vs_t - V_t) / N
struct truncation_reference {
  naive_terms terms;
  std::vector<double> grad_logits, grad_values;
};

truncation_reference truncation_loss_reference(const impala_data& d,
                                               const seedrl::impala_loss_config<double>& c) {
  const std::size_t T = d.T, B = d.B, A = d.A, n = T * B;
  truncation_reference out;
  out.terms = naive_impala(d, d.logits, d.values, c);
  out.grad_logits.assign((T + 1) * B * A, 0.0);
  out.grad_values.assign((T + 1) * B, 0.0);
  const double N = static_cast<double>(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::vector<double> row(d.logits.begin() + static_cast<std::ptrdiff_t>(i * A),
                                  d.logits.begin() + static_cast<std::ptrdiff_t>((i + 1) * A));
    const std::vector<double> logp = naive_log_softmax(row);
    const double h = naive_entropy(row);
    for (std::size_t j = 0; j < A; ++j) {
      const double p = std::exp(logp[j]);
      const double onehot = static_cast<std::size_t>(d.actions[i]) == j ? 1.0 : 0.0;
      out.grad_logits[i * A + j] = -(out.terms.targets.pg_advantages[i] / N) * (onehot - p) +
                                   (c.entropy_cost / N) * p * (logp[j] + h);
    }
    out.grad_values[i] = -c.baseline_cost * (out.terms.targets.vs[i] - d.values[i]) / N;
  }
  return out;
}

}  // namespace

TEMPLATE_TEST_CASE("impala_loss leaves time-limit transitions out, against a float64 reference",
                   "[loss][truncation]", float, double) {
  using S = TestType;
  const double tol = std::is_same_v<S, float> ? 1e-5 : 1e-12;
  for (const impala_case& k : impala_cases()) {
    if (k.truncated_share == 0.0) {
      continue;
    }
    INFO("case: " << k.name);
    const impala_data d =
        make_impala_data(k.T, k.B, k.A, k.seed, k.reward_scale, k.truncated_share);
    const truncation_reference ref = truncation_loss_reference(d, k.config);
    impala_views<S> views(d);
    auto grad = views.gradients();
    const seedrl::loss_terms got =
        seedrl::impala_loss<S>(vtrace_config_as<S>(k.config))(views.batch(d), grad);
    CAPTURE(got.policy, ref.terms.policy, got.baseline, ref.terms.baseline, got.entropy,
            ref.terms.entropy);
    CHECK(combined_error(got.policy, ref.terms.policy) < tol);
    CHECK(combined_error(got.baseline, ref.terms.baseline) < tol);
    CHECK(combined_error(got.entropy, ref.terms.entropy) < tol);
    CHECK(combined_error(got.total, ref.terms.total) < tol);
    CHECK(max_combined_error(views.grad_logits, ref.grad_logits) < tol);
    CHECK(max_combined_error(views.grad_values, ref.grad_values) < tol);
    // At a cut transition: no value gradient, and the logits' gradient is the entropy's alone.
    std::size_t cut_steps = 0;
    for (std::size_t i = 0; i < k.T * k.B; ++i) {
      if (d.truncated[i + k.B] == 0) {
        continue;
      }
      ++cut_steps;
      CHECK(views.grad_values[i] == S(0));
      CHECK(ref.terms.targets.pg_advantages[i] == 0.0);
      CHECK(ref.terms.targets.vs[i] == d.values[i]);
    }
    CHECK(cut_steps > 0);
    // The case tells the conventions apart: with the flags dropped (the time limit read as a
    // termination, gamma = 0), the targets and the gradients differ.
    impala_data as_terminal = d;
    std::fill(as_terminal.truncated.begin(), as_terminal.truncated.end(), 0);
    const naive_terms terminal = naive_impala(as_terminal, d.logits, d.values, k.config);
    CHECK(max_combined_error(terminal.targets.vs, ref.terms.targets.vs) > 1e-2);
    impala_views<S> tviews(as_terminal);
    auto tgrad = tviews.gradients();
    seedrl::impala_loss<S>(vtrace_config_as<S>(k.config))(tviews.batch(as_terminal), tgrad);
    CHECK(max_combined_error(tviews.grad_values, ref.grad_values) > 1e-2);
    CHECK(max_combined_error(tviews.grad_logits, ref.grad_logits) > 1e-2);
  }
}

TEST_CASE("impala_loss checks its truncated flags", "[loss][truncation]") {
  const impala_data d = make_impala_data(3, 2, 4, 9, 1.0);
  const seedrl::impala_loss<float> loss;
  {
    impala_views<float> v(d);
    auto grad = v.gradients();
    auto batch = v.batch(d);
    batch.truncated = batch.truncated.first(batch.truncated.size() - 1);
    CHECK_THROWS_WITH(loss(batch, grad), Catch::Contains("batch.truncated holds 7 values"));
    batch.truncated = {};
    CHECK_THROWS_WITH(loss(batch, grad), Catch::Contains("batch.truncated holds 0 values"));
    CHECK(std::isnan(v.grad_values[0]));
  }
  {
    impala_data bad = d;
    bad.dones[5] = 0;  // t = 2, b = 1
    bad.truncated[5] = 1;
    impala_views<float> v(bad);
    auto grad = v.gradients();
    CHECK_THROWS_WITH(loss(v.batch(bad), grad),
                      Catch::Contains("truncated[5] (t = 2, b = 1) is set but dones is not"));
    CHECK(std::isnan(v.grad_logits[0]));
  }
}
