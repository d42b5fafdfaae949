// The diagonal Gaussian policy distribution (net/diag_gaussian.hpp) and the generator's normal
// draw: checked against the float64 fixtures of tools/gen_gaussian_fixture.py (formulas and
// finite differences in Python), sampling statistics and exact bounds, and bad inputs.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <span>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "seedrl/core/random.hpp"
#include "seedrl/net/diag_gaussian.hpp"

#include "fixture_compare.hpp"

namespace {

using seedrl_test::cast_to;
using seedrl_test::first_mismatch;
using seedrl_test::tolerance;

using json = nlohmann::json;

struct gaussian_fixture {
  std::string name;
  std::size_t D = 0;
  std::size_t B = 0;
  bool dependent = true;
  bool squash = false;
  std::vector<double> outputs, shared_log_std, u, low, high, log_prob_coef, entropy_coef;
  std::vector<double> log_prob, entropy, action, d_log_prob_d_mean, d_log_prob_d_log_std,
      d_entropy_d_log_std, grad_outputs, grad_shared_log_std;
  tolerance value_tol[2];  // [0] float, [1] double
  tolerance gradient_tol[2];
};

tolerance read_tolerance(const json& j) {
  return {j.at("abs").get<double>(), j.at("rel").get<double>()};
}

gaussian_fixture load_gaussian_fixture(const std::filesystem::path& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  const json j = json::parse(in);
  gaussian_fixture f;
  f.name = j.at("name").get<std::string>();
  f.D = j.at("D").get<std::size_t>();
  f.B = j.at("B").get<std::size_t>();
  const std::string layout = j.at("layout").get<std::string>();
  REQUIRE((layout == "state_dependent" || layout == "state_independent"));
  f.dependent = layout == "state_dependent";
  f.squash = j.at("squash").get<bool>();
  const json& i = j.at("inputs");
  for (auto [key, field] :
       {std::pair{"outputs", &f.outputs}, std::pair{"shared_log_std", &f.shared_log_std},
        std::pair{"u", &f.u}, std::pair{"low", &f.low}, std::pair{"high", &f.high},
        std::pair{"log_prob_coef", &f.log_prob_coef}, std::pair{"entropy_coef", &f.entropy_coef}}) {
    *field = i.at(key).get<std::vector<double>>();
  }
  const json& e = j.at("expected");
  for (auto [key, field] :
       {std::pair{"log_prob", &f.log_prob}, std::pair{"entropy", &f.entropy},
        std::pair{"action", &f.action}, std::pair{"d_log_prob_d_mean", &f.d_log_prob_d_mean},
        std::pair{"d_log_prob_d_log_std", &f.d_log_prob_d_log_std},
        std::pair{"d_entropy_d_log_std", &f.d_entropy_d_log_std},
        std::pair{"grad_outputs", &f.grad_outputs},
        std::pair{"grad_shared_log_std", &f.grad_shared_log_std}}) {
    *field = e.at(key).get<std::vector<double>>();
  }
  const json& t = j.at("tolerance");
  for (int k = 0; k < 2; ++k) {
    const json& s = t.at(k == 0 ? "float" : "double");
    f.value_tol[k] = read_tolerance(s.at("value"));
    f.gradient_tol[k] = read_tolerance(s.at("gradient"));
  }
  return f;
}

std::vector<gaussian_fixture> load_all_fixtures() {
  std::vector<std::filesystem::path> paths;
  for (const auto& entry : std::filesystem::directory_iterator(
           std::filesystem::path(SEEDRL_TEST_FIXTURES) / "gaussian")) {
    if (entry.is_regular_file() && entry.path().extension() == ".json") {
      paths.push_back(entry.path());
    }
  }
  std::sort(paths.begin(), paths.end());
  std::vector<gaussian_fixture> out;
  for (const auto& p : paths) {
    out.push_back(load_gaussian_fixture(p));
  }
  return out;
}

// Runs one fixture through the row functions (with pointers laid out here, by hand, as the
// file comment describes the two layouts) and through the batch helpers; returns the first
// mismatch, or an empty string.
template <class S>
std::string run_gaussian_fixture(const gaussian_fixture& f) {
  const int k = std::is_same_v<S, float> ? 0 : 1;
  const tolerance vtol = f.value_tol[k];
  const tolerance gtol = f.gradient_tol[k];
  const std::size_t D = f.D;
  const std::size_t B = f.B;
  const int d = static_cast<int>(D);
  const auto outputs = cast_to<S>(f.outputs);
  const auto shared = cast_to<S>(f.shared_log_std);
  const auto u = cast_to<S>(f.u);
  const auto low = cast_to<S>(f.low);
  const auto high = cast_to<S>(f.high);
  const auto lp_coef = cast_to<S>(f.log_prob_coef);
  const auto ent_coef = cast_to<S>(f.entropy_coef);
  const std::size_t width = f.dependent ? 2 * D : D;

  std::vector<S> log_prob(B), entropy(B), entropy2(B), action(B * D), d_mean(B * D),
      d_log_std(B * D), d_entropy(B * D), combined_mean(B * D), combined_log_std(B * D);
  std::vector<double> expected_combined_mean(B * D), expected_combined_log_std(B * D);
  for (std::size_t b = 0; b < B; ++b) {
    const S* mean = outputs.data() + b * width;
    const S* log_std = f.dependent ? mean + D : shared.data();
    const S* ub = u.data() + b * D;
    log_prob[b] = f.squash ? seedrl::squashed_diag_gaussian_log_prob(mean, log_std, ub, low.data(),
                                                                     high.data(), d)
                           : seedrl::diag_gaussian_log_prob(mean, log_std, ub, d);
    entropy[b] = seedrl::diag_gaussian_entropy(log_std, d);
    if (f.squash) {
      seedrl::tanh_squash(ub, low.data(), high.data(), d, action.data() + b * D);
    } else {
      seedrl::clip_to_bounds(ub, low.data(), high.data(), d, action.data() + b * D);
    }
    seedrl::diag_gaussian_log_prob_gradient(mean, log_std, ub, d, d_mean.data() + b * D,
                                            d_log_std.data() + b * D);
    entropy2[b] = seedrl::diag_gaussian_entropy_gradient(log_std, d, d_entropy.data() + b * D);
    const S h = seedrl::diag_gaussian_log_prob_entropy_gradient(
        mean, log_std, ub, d, lp_coef[b], ent_coef[b], combined_mean.data() + b * D,
        combined_log_std.data() + b * D);
    if (h != entropy[b]) {
      return "log_prob_entropy_gradient's entropy differs from diag_gaussian_entropy";
    }
    // The combination of the reference's own gradients (its d entropy / d mean is 0).
    for (std::size_t i = 0; i < D; ++i) {
      const std::size_t n = b * D + i;
      expected_combined_mean[n] = f.log_prob_coef[b] * f.d_log_prob_d_mean[n];
      expected_combined_log_std[n] = f.log_prob_coef[b] * f.d_log_prob_d_log_std[n] +
                                     f.entropy_coef[b] * f.d_entropy_d_log_std[n];
    }
  }

  // The batch helpers, through diag_gaussian_batch.
  seedrl::diag_gaussian_batch<S> batch{outputs, shared, B, D,
                                       f.dependent ? seedrl::log_std_layout::state_dependent
                                                   : seedrl::log_std_layout::state_independent};
  const seedrl::diag_gaussian_bounds<S> bounds{low, high, f.squash};
  std::vector<S> batch_log_prob(B), batch_entropy(B), grad_outputs(outputs.size()),
      grad_shared(shared.size());
  seedrl::diag_gaussian_log_probs<S>(batch, bounds, u, batch_log_prob);
  seedrl::diag_gaussian_entropies<S>(batch, batch_entropy);
  seedrl::diag_gaussian_gradients<S>(batch, u, lp_coef, ent_coef, grad_outputs, grad_shared);

  const std::string checks[] = {
      first_mismatch("log_prob", log_prob, f.log_prob, vtol),
      first_mismatch("entropy", entropy, f.entropy, vtol),
      first_mismatch("entropy from entropy_gradient", entropy2, f.entropy, vtol),
      first_mismatch("action", action, f.action, vtol),
      first_mismatch("d_log_prob_d_mean", d_mean, f.d_log_prob_d_mean, gtol),
      first_mismatch("d_log_prob_d_log_std", d_log_std, f.d_log_prob_d_log_std, gtol),
      first_mismatch("d_entropy_d_log_std", d_entropy, f.d_entropy_d_log_std, gtol),
      first_mismatch("combined d mean", combined_mean, expected_combined_mean, gtol),
      first_mismatch("combined d log_std", combined_log_std, expected_combined_log_std, gtol),
      first_mismatch("batch log_prob", batch_log_prob, f.log_prob, vtol),
      first_mismatch("batch entropy", batch_entropy, f.entropy, vtol),
      first_mismatch("batch grad_outputs", grad_outputs, f.grad_outputs, gtol),
      first_mismatch("batch grad_shared_log_std", grad_shared, f.grad_shared_log_std, gtol),
  };
  for (const auto& check : checks) {
    if (!check.empty()) {
      return check;
    }
  }
  return {};
}

// Sample mean and variance of each of D columns of row-major draws.
struct moments {
  std::vector<double> mean;
  std::vector<double> variance;
};

template <class S>
moments column_moments(const std::vector<S>& x, std::size_t D) {
  const std::size_t n = x.size() / D;
  moments m{std::vector<double>(D, 0.0), std::vector<double>(D, 0.0)};
  for (std::size_t r = 0; r < n; ++r) {
    for (std::size_t i = 0; i < D; ++i) {
      m.mean[i] += static_cast<double>(x[r * D + i]);
    }
  }
  for (std::size_t i = 0; i < D; ++i) {
    m.mean[i] /= static_cast<double>(n);
  }
  for (std::size_t r = 0; r < n; ++r) {
    for (std::size_t i = 0; i < D; ++i) {
      const double c = static_cast<double>(x[r * D + i]) - m.mean[i];
      m.variance[i] += c * c;
    }
  }
  for (std::size_t i = 0; i < D; ++i) {
    m.variance[i] /= static_cast<double>(n - 1);
  }
  return m;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Against the fixtures

TEST_CASE("diag_gaussian matches every reference fixture in float and double", "[gaussian]") {
  const auto fixtures = load_all_fixtures();
  REQUIRE(fixtures.size() >= 8);
  bool squashed = false, clipped = false, dependent = false, shared = false;
  for (const auto& f : fixtures) {
    INFO("fixture " << f.name << " (D = " << f.D << ", B = " << f.B << ")");
    CHECK(run_gaussian_fixture<double>(f) == "");
    CHECK(run_gaussian_fixture<float>(f) == "");
    squashed = squashed || f.squash;
    clipped = clipped || !f.squash;
    dependent = dependent || f.dependent;
    shared = shared || !f.dependent;
  }
  CHECK((squashed && clipped && dependent && shared));
}

TEST_CASE("the gaussian fixture comparison rejects values off by ten tolerances", "[gaussian]") {
  const auto fixtures = load_all_fixtures();
  REQUIRE(!fixtures.empty());
  for (const auto& original : fixtures) {
    INFO("fixture " << original.name);
    REQUIRE(run_gaussian_fixture<double>(original) == "");
    for (int which = 0; which < 4; ++which) {
      gaussian_fixture f = original;
      std::vector<double>& v = which == 0   ? f.log_prob
                               : which == 1 ? f.d_log_prob_d_log_std
                               : which == 2 ? f.grad_outputs
                                            : f.action;
      const tolerance t = which == 0 || which == 3 ? f.value_tol[1] : f.gradient_tol[1];
      v.back() += 10.0 * (t.abs + t.rel * std::abs(v.back()));
      CHECK(run_gaussian_fixture<double>(f) != "");
    }
  }
}

TEST_CASE("the fixtures exercise the clamp and saturated squashing", "[gaussian]") {
  bool clamped_low = false, clamped_high = false, saturated = false;
  for (const auto& f : load_all_fixtures()) {
    const std::size_t width = f.dependent ? 2 * f.D : f.D;
    for (std::size_t b = 0; b < f.B; ++b) {
      for (std::size_t i = 0; i < f.D; ++i) {
        const double l = f.dependent ? f.outputs[b * width + f.D + i] : f.shared_log_std[i];
        clamped_low = clamped_low || l < seedrl::diag_gaussian_log_std_min;
        clamped_high = clamped_high || l > seedrl::diag_gaussian_log_std_max;
        // In float, tanh(u) rounds to +-1 and 1 - tanh^2 to 0 here.
        saturated = saturated || (f.squash && std::abs(f.u[b * f.D + i]) > 10.0);
      }
    }
  }
  CHECK(clamped_low);
  CHECK(clamped_high);
  CHECK(saturated);
}

// ---------------------------------------------------------------------------------------------
// Row functions at the edges

TEMPLATE_TEST_CASE("the log-std clamp: values, and gradient 1 on [-20, 2] ends included",
                   "[gaussian]", float, double) {
  using S = TestType;
  const S mean[1] = {S(0.25)};
  const S u[1] = {S(0.5)};
  for (const S outside : {S(-30), S(-20.5)}) {
    const S l[1] = {outside};
    const S at_min[1] = {S(-20)};
    CHECK(seedrl::diag_gaussian_log_prob(mean, l, u, 1) ==
          seedrl::diag_gaussian_log_prob(mean, at_min, u, 1));
    CHECK(seedrl::diag_gaussian_entropy(l, 1) == seedrl::diag_gaussian_entropy(at_min, 1));
    S dm[1], dl[1];
    seedrl::diag_gaussian_log_prob_gradient(mean, l, u, 1, dm, dl);
    CHECK(dl[0] == S(0));
    CHECK(dm[0] != S(0));  // the mean still gets its gradient
    CHECK(seedrl::diag_gaussian_entropy_gradient(l, 1, dl) == seedrl::diag_gaussian_entropy(l, 1));
    CHECK(dl[0] == S(0));
  }
  for (const S inside : {S(-20), S(0), S(2)}) {
    const S l[1] = {inside};
    S dl[1];
    seedrl::diag_gaussian_entropy_gradient(l, 1, dl);
    CHECK(dl[0] == S(1));
  }
  const S above[1] = {S(2.5)};
  S dl[1];
  seedrl::diag_gaussian_entropy_gradient(above, 1, dl);
  CHECK(dl[0] == S(0));
  // H = D (1 + log(2 pi)) / 2 + sum l: at l = 2 and D = 1.
  CHECK(seedrl::diag_gaussian_entropy(above, 1) ==
        Approx(0.5 * (1.0 + std::log(2.0 * 3.141592653589793)) + 2.0).epsilon(1e-6));
}

TEMPLATE_TEST_CASE("the squashing correction stays finite where tanh saturates", "[gaussian]",
                   float, double) {
  using S = TestType;
  for (const double u : {-100.0, -50.0, -12.0, 0.0, 3.0, 12.0, 50.0, 100.0}) {
    const S got = seedrl::log_one_minus_tanh_squared(static_cast<S>(u));
    // 1 - tanh(u)^2 = 1 / cosh(u)^2 = 4 / (e^u + e^-u)^2; for |u| >= 12 the e^-|u| term is
    // below 1e-10 relative, so log = 2 log 2 - 2 |u| to that accuracy.
    const double expected = std::abs(u) < 12.0 ? -2.0 * std::log(std::cosh(u))
                                               : 2.0 * std::log(2.0) - 2.0 * std::abs(u);
    CAPTURE(u);
    REQUIRE(std::isfinite(got));
    CHECK(static_cast<double>(got) == Approx(expected).epsilon(1e-6).margin(1e-5));
  }
}

TEMPLATE_TEST_CASE("tanh_unsquash inverts tanh_squash and clips at the bounds", "[gaussian]", float,
                   double) {
  using S = TestType;
  const S low[3] = {S(-1), S(0), S(-3)};
  const S high[3] = {S(1), S(4), S(0.5)};
  const S u[3] = {S(-2.5), S(0.75), S(4)};
  S a[3];
  seedrl::tanh_squash(u, low, high, 3, a);
  // atanh turns an error dy in y = tanh(u) into dy / (1 - y^2), about 750 dy at |u| = 4.
  const double tol = std::is_same_v<S, float> ? 2e-4 : 1e-11;
  for (int i = 0; i < 3; ++i) {
    CHECK(static_cast<double>(seedrl::tanh_unsquash(a[i], low[i], high[i])) ==
          Approx(static_cast<double>(u[i])).epsilon(tol));
  }
  // At a bound the clip gives |u| = atanh(1 - 1e-6) = 7.25 (7.248 in float, where 1 - 1e-6
  // rounds to 1 - 1.01e-6), not infinity.
  const double cap =
      std::atanh(static_cast<double>(S(1) - static_cast<S>(seedrl::tanh_unsquash_epsilon)));
  CHECK(static_cast<double>(seedrl::tanh_unsquash(high[1], low[1], high[1])) ==
        Approx(cap).epsilon(1e-4));
  CHECK(static_cast<double>(seedrl::tanh_unsquash(low[1], low[1], high[1])) ==
        Approx(-cap).epsilon(1e-4));
}

// ---------------------------------------------------------------------------------------------
// Sampling

TEST_CASE("random_generator::normal is standard normal, reproducible, two draws each",
          "[gaussian][random]") {
  seedrl::random_generator a(11), b(11), c(12);
  for (int i = 0; i < 10; ++i) {
    const double x = a.normal();
    CHECK(x == b.normal());
    CHECK(x != c.normal());
  }
  // Exactly two 64-bit draws per normal: afterwards the stream continues in step.
  seedrl::random_generator d(5), e(5);
  d.normal();
  e();
  e();
  CHECK(d() == e());

  // Bounds of 5 standard errors: for a correct generator each fails with probability below
  // 6e-7 over seeds; this seed is fixed, so the outcome is deterministic.
  const std::size_t n = 200000;
  seedrl::random_generator rng(2026);
  std::vector<double> z(n);
  std::size_t within1 = 0, within2 = 0;
  for (auto& x : z) {
    x = rng.normal();
    REQUIRE(std::abs(x) <= 8.58);
    within1 += std::abs(x) < 1.0 ? 1 : 0;
    within2 += std::abs(x) < 2.0 ? 1 : 0;
  }
  const moments m = column_moments(z, 1);
  const double nd = static_cast<double>(n);
  CHECK(std::abs(m.mean[0]) <= 5.0 / std::sqrt(nd));
  CHECK(std::abs(m.variance[0] - 1.0) <= 5.0 * std::sqrt(2.0 / (nd - 1.0)));
  // The shape, not only the moments: P(|z| < 1) and P(|z| < 2) of a standard normal.
  for (const auto& [count, p] :
       {std::pair{within1, 0.6826894921370859}, std::pair{within2, 0.9544997361036416}}) {
    CHECK(std::abs(static_cast<double>(count) / nd - p) <= 5.0 * std::sqrt(p * (1.0 - p) / nd));
  }
}

TEMPLATE_TEST_CASE("sampled means and variances match the distribution in both layouts",
                   "[gaussian]", float, double) {
  using S = TestType;
  const std::size_t D = 3;
  const std::size_t n = 100000;
  const S mean[D] = {S(0.5), S(-2), S(10)};
  const S log_std[D] = {S(-1), S(3), S(-25)};  // clamped to 2 and to -20
  const std::vector<S> low(D, -std::numeric_limits<S>::infinity());
  const std::vector<S> high(D, std::numeric_limits<S>::infinity());
  for (const bool dependent : {true, false}) {
    INFO((dependent ? "state-dependent" : "state-independent"));
    std::vector<S> outputs;
    for (std::size_t r = 0; r < n; ++r) {
      outputs.insert(outputs.end(), mean, mean + D);
      if (dependent) {
        outputs.insert(outputs.end(), log_std, log_std + D);
      }
    }
    const std::vector<S> shared =
        dependent ? std::vector<S>{} : std::vector<S>(log_std, log_std + D);
    const seedrl::diag_gaussian_batch<S> batch{outputs, shared, n, D,
                                               dependent
                                                   ? seedrl::log_std_layout::state_dependent
                                                   : seedrl::log_std_layout::state_independent};
    std::vector<S> u(n * D), actions(n * D);
    seedrl::random_generator rng(99);
    seedrl::sample_diag_gaussian<S>(batch, {low, high, false}, rng, u, actions);
    CHECK(actions == u);  // infinite bounds: clipping leaves the samples alone

    const moments m = column_moments(u, D);
    const double nd = static_cast<double>(n);
    for (std::size_t i = 0; i < 2; ++i) {  // the third, at std 2e-9, is checked below
      CAPTURE(i);
      const double s = std::exp(std::min(static_cast<double>(log_std[i]), 2.0));
      // 5 standard errors of the sample mean (s / sqrt(n)) and variance (s^2 sqrt(2 / (n - 1))
      // for a normal), plus a few roundings of the mean in S.
      const double rounding = 4.0 * std::numeric_limits<S>::epsilon() * std::abs(mean[i]);
      CHECK(std::abs(m.mean[i] - static_cast<double>(mean[i])) <=
            5.0 * s / std::sqrt(nd) + rounding);
      CHECK(std::abs(m.variance[i] - s * s) <= 5.0 * s * s * std::sqrt(2.0 / (nd - 1.0)));
    }
    // The clamped dimension: std 2e-9 is below float's spacing at 10, so float samples are
    // within a rounding of the mean; double ones within 9 std (|noise| <= 8.58).
    for (std::size_t r = 0; r < n; ++r) {
      REQUIRE(std::abs(static_cast<double>(u[r * D + 2]) - 10.0) <= 9.0 * std::exp(-20.0) + 1e-6);
    }
  }
}

TEMPLATE_TEST_CASE("sampling is reproducible and is mean + std * rng.normal() in row order",
                   "[gaussian]", float, double) {
  using S = TestType;
  const std::size_t B = 4;
  const std::size_t D = 2;
  const std::vector<S> outputs = {S(0.1), S(-0.2), S(0.5), S(-1),  S(1),    S(2),
                                  S(0),   S(-3),   S(1.5), S(0.2), S(-0.7), S(0)};
  const std::vector<S> shared = {S(-0.5), S(0.25)};
  const std::vector<S> low = {S(-2), S(-1)};
  const std::vector<S> high = {S(2), S(1)};
  // The same 12 numbers as 3 state-dependent rows (2 means, 2 log-stds) or, first 8 of them,
  // as 4 rows of means with a shared log-std vector.
  const seedrl::diag_gaussian_batch<S> batch{
      outputs, {}, 3, D, seedrl::log_std_layout::state_dependent};
  const seedrl::diag_gaussian_batch<S> shared_batch{std::span<const S>(outputs).first(B * D),
                                                    shared, B, D,
                                                    seedrl::log_std_layout::state_independent};
  for (const auto* bt : {&batch, &shared_batch}) {
    for (const bool squash : {false, true}) {
      const seedrl::diag_gaussian_bounds<S> bounds{low, high, squash};
      std::vector<S> u1(bt->B * D), a1(bt->B * D), u2(bt->B * D), a2(bt->B * D), u3(bt->B * D),
          a3(bt->B * D);
      seedrl::random_generator r1(7), r2(7), r3(8), reference(7);
      seedrl::sample_diag_gaussian<S>(*bt, bounds, r1, u1, a1);
      seedrl::sample_diag_gaussian<S>(*bt, bounds, r2, u2, a2);
      seedrl::sample_diag_gaussian<S>(*bt, bounds, r3, u3, a3);
      CHECK(u1 == u2);
      CHECK(a1 == a2);
      CHECK(u1 != u3);
      for (std::size_t b = 0; b < bt->B; ++b) {
        for (std::size_t i = 0; i < D; ++i) {
          const std::size_t n = b * D + i;
          const S mean = bt->outputs[b * bt->row_width() + i];
          const S l = bt->layout == seedrl::log_std_layout::state_dependent
                          ? bt->outputs[b * 2 * D + D + i]
                          : shared[i];
          const S z = static_cast<S>(reference.normal());
          // Equal up to an FMA contraction the compiler may make in one place and not the other.
          CHECK(static_cast<double>(u1[n]) == Approx(static_cast<double>(mean + std::exp(l) * z))
                                                  .epsilon(4 * std::numeric_limits<S>::epsilon()));
          const double expected_action =
              squash ? static_cast<double>(low[i]) + (std::tanh(static_cast<double>(u1[n])) + 1.0) /
                                                         2.0 * static_cast<double>(high[i] - low[i])
                     : std::clamp(static_cast<double>(u1[n]), static_cast<double>(low[i]),
                                  static_cast<double>(high[i]));
          CHECK(static_cast<double>(a1[n]) == Approx(expected_action).margin(1e-6));
        }
      }
      CHECK(r1() == reference());  // B * D normals drawn, no more
    }
  }
}

TEMPLATE_TEST_CASE("squashed samples and deterministic actions stay inside the bounds",
                   "[gaussian]", float, double) {
  using S = TestType;
  const std::size_t D = 3;
  const std::size_t B = 2000;
  // Means far outside the bounds and the largest std: most samples saturate tanh. For
  // [-0.24, -0.05], low + 2 * (high / 2 - low / 2) rounds above high in float and double.
  const std::vector<S> low = {S(-1), S(-0.24), S(-1e6)};
  const std::vector<S> high = {S(1), S(-0.05), S(-999999)};
  std::vector<S> outputs;
  for (std::size_t b = 0; b < B; ++b) {
    const S sign = b % 2 == 0 ? S(1) : S(-1);
    for (const S m : {S(50), S(-3), S(20)}) {
      outputs.push_back(sign * m);
    }
    for (std::size_t i = 0; i < D; ++i) {
      outputs.push_back(S(2));
    }
  }
  const seedrl::diag_gaussian_batch<S> batch{
      outputs, {}, B, D, seedrl::log_std_layout::state_dependent};
  std::vector<S> u(B * D), actions(B * D), det(B * D);
  seedrl::random_generator rng(3);
  seedrl::sample_diag_gaussian<S>(batch, {low, high, true}, rng, u, actions);
  seedrl::diag_gaussian_deterministic_actions<S>(batch, {low, high, true}, det);
  std::size_t at_bound = 0;
  for (std::size_t n = 0; n < B * D; ++n) {
    const std::size_t i = n % D;
    REQUIRE(actions[n] >= low[i]);
    REQUIRE(actions[n] <= high[i]);
    REQUIRE(det[n] >= low[i]);
    REQUIRE(det[n] <= high[i]);
    at_bound += actions[n] == low[i] || actions[n] == high[i] ? 1 : 0;
  }
  CHECK(at_bound > 0);  // the clamp after tanh was exercised
  // Deterministic actions: the squashed mean; clipped, the mean clipped.
  CHECK(det[0] == high[0]);
  const double squashed_mean = -0.24 + (std::tanh(-3.0) + 1.0) / 2.0 * 0.19;
  CHECK(static_cast<double>(det[1]) == Approx(squashed_mean).epsilon(1e-6));
  seedrl::diag_gaussian_deterministic_actions<S>(batch, {low, high, false}, det);
  CHECK(det[0] == high[0]);
  CHECK(det[1] == low[1]);
  CHECK(det[D + 0] == low[0]);
}

// ---------------------------------------------------------------------------------------------
// Bad input

TEST_CASE("diag_gaussian batch helpers reject bad shapes and bounds before writing", "[gaussian]") {
  using S = double;
  const std::size_t B = 2;
  const std::size_t D = 2;
  const std::vector<S> outputs(B * 2 * D, 0.1);
  const std::vector<S> shared(D, -0.5);
  const std::vector<S> u(B * D, 0.2), coef(B, 1.0), low(D, -1.0), high(D, 1.0);
  const seedrl::diag_gaussian_batch<S> ok{
      outputs, {}, B, D, seedrl::log_std_layout::state_dependent};
  const seedrl::diag_gaussian_bounds<S> clip{low, high, false};
  const seedrl::diag_gaussian_bounds<S> squash{low, high, true};
  std::vector<S> out(B, -7.0), u_out(B * D, -7.0), a_out(B * D, -7.0), g(outputs.size(), -7.0);
  seedrl::random_generator rng(1);
  const auto untouched = [&] {
    return std::all_of(out.begin(), out.end(), [](S x) { return x == -7.0; }) &&
           std::all_of(u_out.begin(), u_out.end(), [](S x) { return x == -7.0; }) &&
           std::all_of(a_out.begin(), a_out.end(), [](S x) { return x == -7.0; }) &&
           std::all_of(g.begin(), g.end(), [](S x) { return x == -7.0; });
  };

  auto bad = ok;
  bad.D = 0;
  bad.outputs = {};
  CHECK_THROWS_WITH(seedrl::diag_gaussian_entropies<S>(bad, out),
                    Catch::Contains("D (action dimensions) must be in [1,"));
  bad = ok;
  bad.outputs = std::span<const S>(outputs).first(B * D);  // the shared layout's size
  CHECK_THROWS_WITH(seedrl::diag_gaussian_log_probs<S>(bad, clip, u, out),
                    Catch::Contains("outputs holds 4 values, expected B * 2D = 2 * 4"));
  bad = ok;
  bad.shared_log_std = shared;  // a shared vector given with the state-dependent layout
  CHECK_THROWS_WITH(seedrl::diag_gaussian_entropies<S>(bad, out),
                    Catch::Contains("shared_log_std holds 2 values, expected 0"));
  bad = ok;
  bad.layout = seedrl::log_std_layout::state_independent;
  bad.outputs = std::span<const S>(outputs).first(B * D);  // shared vector missing
  CHECK_THROWS_WITH(seedrl::sample_diag_gaussian<S>(bad, clip, rng, u_out, a_out),
                    Catch::Contains("shared_log_std holds 0 values, expected 2"));
  CHECK_THROWS_WITH(
      seedrl::diag_gaussian_log_probs<S>(ok, clip, std::span<const S>(u).first(3), out),
      Catch::Contains("u holds 3 values, expected B * D = 4"));
  CHECK_THROWS_WITH(seedrl::diag_gaussian_log_probs<S>(ok, clip, u, std::span<S>(out).first(1)),
                    Catch::Contains("out holds 1 values, expected B = 2"));
  CHECK_THROWS_WITH(
      seedrl::sample_diag_gaussian<S>(ok, clip, rng, u_out, std::span<S>(a_out).first(3)),
      Catch::Contains("actions holds 3 values"));
  CHECK_THROWS_WITH(
      seedrl::diag_gaussian_gradients<S>(ok, u, std::span<const S>(coef).first(1), coef, g, {}),
      Catch::Contains("log_prob_coef holds 1 values, expected B = 2"));
  CHECK_THROWS_WITH(seedrl::diag_gaussian_gradients<S>(ok, u, coef, coef, g, std::span<S>(a_out)),
                    Catch::Contains("grad_shared_log_std holds 4 values, expected"));
  CHECK_THROWS_WITH(
      seedrl::diag_gaussian_gradients<S>(ok, u, coef, coef, std::span<S>(g).first(4), {}),
      Catch::Contains("grad_outputs holds 4 values, expected outputs.size() = 8"));

  // Bounds.
  const std::vector<S> short_low(1, -1.0);
  CHECK_THROWS_WITH(
      seedrl::diag_gaussian_deterministic_actions<S>(ok, {short_low, high, false}, a_out),
      Catch::Contains("bounds.low holds 1 values, expected D = 2"));
  const std::vector<S> inf_high = {1.0, std::numeric_limits<S>::infinity()};
  CHECK_NOTHROW(seedrl::diag_gaussian_log_probs<S>(ok, {low, inf_high, false}, u, out));
  std::fill(out.begin(), out.end(), -7.0);
  CHECK_THROWS_WITH(seedrl::diag_gaussian_log_probs<S>(ok, {low, inf_high, true}, u, out),
                    Catch::Contains("tanh squashing needs finite bounds with low < high"));
  const std::vector<S> equal = {-1.0, -1.0};
  const std::vector<S> low_equal = {-1.0, -1.0};
  CHECK_NOTHROW(
      seedrl::diag_gaussian_deterministic_actions<S>(ok, {low_equal, equal, false}, u_out));
  std::fill(u_out.begin(), u_out.end(), -7.0);
  CHECK_THROWS_WITH(
      seedrl::sample_diag_gaussian<S>(ok, {low_equal, equal, true}, rng, u_out, a_out),
      Catch::Contains("bounds of dimension 0"));
  const std::vector<S> reversed = {2.0, -2.0};
  CHECK_THROWS_WITH(seedrl::diag_gaussian_log_probs<S>(ok, {low, reversed, false}, u, out),
                    Catch::Contains("bounds of dimension 1") && Catch::Contains("low <= high"));
  const std::vector<S> nan_low = {std::numeric_limits<S>::quiet_NaN(), -1.0};
  CHECK_THROWS_WITH(seedrl::diag_gaussian_log_probs<S>(ok, {nan_low, high, false}, u, out),
                    Catch::Contains("must be numbers"));
  CHECK(untouched());

  // And a good call writes.
  seedrl::sample_diag_gaussian<S>(ok, squash, rng, u_out, a_out);
  CHECK(!untouched());
}
