// The PPO loss (categorical and diagonal-Gaussian policies): against the float64 fixtures of
// tools/gen_ppo_fixture.py (independent numpy code,
// its gradient checked by finite differences there), behaviours that must differ or agree
// between settings, config errors, and a few PPO epochs through host_trainer on a contextual
// bandit, to show the loss plugs into the existing Trainer.
#include <unistd.h>
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
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "seedrl/algo/policy_distribution.hpp"
#include "seedrl/algo/ppo_loss.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/metrics/metrics_log.hpp"
#include "seedrl/net/categorical.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/runtime/progress.hpp"
#include "seedrl/runtime/trainer.hpp"

#include "fixture_compare.hpp"

namespace {

using seedrl_test::cast_to;
using seedrl_test::first_mismatch;
using seedrl_test::tolerance;

using json = nlohmann::json;
using Catch::Matchers::Contains;

template <class S>
std::optional<S> optional_as(std::optional<double> x) {
  return x ? std::optional<S>(static_cast<S>(*x)) : std::nullopt;
}

// A batch in double (float-representable inputs) with its config, owning its arrays.
struct ppo_data {
  std::size_t T = 0, B = 0, A = 0;
  std::vector<double> logits, values, old_values, proximal_logits, behaviour_log_probs, rewards;
  std::vector<std::int32_t> actions;
  std::vector<std::uint8_t> dones, truncated;
  seedrl::ppo_loss_config<double> config;
  // A diagonal Gaussian policy (A = 2D outputs per row) instead of categorical logits.
  bool gaussian = false, squash = false;
  std::vector<double> raw_actions, low, high;
};

template <class S>
seedrl::ppo_loss_config<S> config_as(const seedrl::ppo_loss_config<double>& c) {
  seedrl::ppo_loss_config<S> s;
  s.discount = static_cast<S>(c.discount);
  s.lambda = static_cast<S>(c.lambda);
  s.advantage = c.advantage;
  s.clip_epsilon = static_cast<S>(c.clip_epsilon);
  s.value_clip = optional_as<S>(c.value_clip);
  s.value_cost = static_cast<S>(c.value_cost);
  s.entropy_cost = static_cast<S>(c.entropy_cost);
  s.normalize_advantages = c.normalize_advantages;
  s.advantage_epsilon = static_cast<S>(c.advantage_epsilon);
  s.clip_rho_threshold = optional_as<S>(c.clip_rho_threshold);
  s.proximal_weight_clip = optional_as<S>(c.proximal_weight_clip);
  return s;
}

// The loss's result on `d` in scalar type S: terms and both gradients (which start as NaN, so an
// element left unwritten shows).
template <class S>
struct ppo_result {
  seedrl::loss_terms terms;
  std::vector<S> grad_logits, grad_values;
};

template <class S, class Dist>
ppo_result<S> run_loss(const ppo_data& d, const seedrl::ppo_loss<S, Dist>& loss) {
  const auto logits = cast_to<S>(d.logits), values = cast_to<S>(d.values),
             old_values = cast_to<S>(d.old_values), mu = cast_to<S>(d.behaviour_log_probs),
             proximal_logits = cast_to<S>(d.proximal_logits), rewards = cast_to<S>(d.rewards),
             raw_actions = cast_to<S>(d.raw_actions);
  ppo_result<S> r;
  r.grad_logits.assign(logits.size(), std::numeric_limits<S>::quiet_NaN());
  r.grad_values.assign(values.size(), std::numeric_limits<S>::quiet_NaN());
  seedrl::impala_gradients<S> grad{r.grad_logits, r.grad_values};
  seedrl::ppo_batch<S> batch{d.T,       d.B, d.A,     logits,  values,
                             d.actions, mu,  rewards, d.dones, d.truncated};
  batch.raw_actions = raw_actions;
  batch.action_dim = d.gaussian ? d.A / 2 : 0;
  batch.old_values = old_values;
  batch.proximal_logits = proximal_logits;
  r.terms = loss(batch, grad);
  return r;
}

template <class S>
ppo_result<S> run_loss(const ppo_data& d) {
  if (d.gaussian) {
    seedrl::diag_gaussian_distribution<S> dist{d.squash, cast_to<S>(d.low), cast_to<S>(d.high)};
    return run_loss(d, seedrl::ppo_loss<S, seedrl::diag_gaussian_distribution<S>>(
                           config_as<S>(d.config), std::move(dist)));
  }
  return run_loss(d, seedrl::ppo_loss<S>(config_as<S>(d.config)));
}

// --- fixtures ------------------------------------------------------------------------------

struct ppo_fixture {
  std::string name;
  ppo_data data;
  json expected;
  tolerance tol_double, tol_float;
};

ppo_fixture load_ppo_fixture(const std::filesystem::path& path) {
  std::ifstream in(path);
  REQUIRE(in.good());
  const json j = json::parse(in);
  ppo_fixture f;
  f.name = path.filename().string();
  ppo_data& d = f.data;
  d.T = j.at("T").get<std::size_t>();
  d.B = j.at("B").get<std::size_t>();
  d.A = j.at("A").get<std::size_t>();
  const json& c = j.at("config");
  const auto optional_number = [](const json& x) {
    return x.is_null() ? std::nullopt : std::optional<double>(x.get<double>());
  };
  d.config.discount = c.at("discount").get<double>();
  d.config.lambda = c.at("lambda").get<double>();
  const std::string advantage = c.at("advantage").get<std::string>();
  REQUIRE((advantage == "gae" || advantage == "vtrace"));
  d.config.advantage =
      advantage == "gae" ? seedrl::ppo_advantage::gae : seedrl::ppo_advantage::vtrace;
  d.config.clip_epsilon = c.at("clip_epsilon").get<double>();
  d.config.value_clip = optional_number(c.at("value_clip"));
  d.config.value_cost = c.at("value_cost").get<double>();
  d.config.entropy_cost = c.at("entropy_cost").get<double>();
  d.config.normalize_advantages = c.at("normalize_advantages").get<bool>();
  d.config.advantage_epsilon = c.at("advantage_epsilon").get<double>();
  d.config.clip_rho_threshold = optional_number(c.at("clip_rho_threshold"));
  d.config.proximal_weight_clip = optional_number(c.at("proximal_weight_clip"));
  const json& in_j = j.at("inputs");
  d.logits = in_j.at("logits").get<std::vector<double>>();
  d.values = in_j.at("values").get<std::vector<double>>();
  d.old_values = in_j.at("old_values").get<std::vector<double>>();
  d.proximal_logits = in_j.at("proximal_logits").get<std::vector<double>>();
  d.behaviour_log_probs = in_j.at("behaviour_log_probs").get<std::vector<double>>();
  d.rewards = in_j.at("rewards").get<std::vector<double>>();
  d.actions = in_j.at("actions").get<std::vector<std::int32_t>>();
  d.dones = in_j.at("dones").get<std::vector<std::uint8_t>>();
  d.truncated = in_j.at("truncated").get<std::vector<std::uint8_t>>();
  d.raw_actions = in_j.at("raw_actions").get<std::vector<double>>();
  const json& policy = j.at("policy");
  d.gaussian = policy.at("kind").get<std::string>() == "gaussian";
  d.squash = policy.at("squash").get<bool>();
  d.low = policy.at("low").get<std::vector<double>>();
  d.high = policy.at("high").get<std::vector<double>>();
  f.expected = j.at("expected");
  const json& t = j.at("tolerance");
  f.tol_double = {t.at("double").at("abs").get<double>(), t.at("double").at("rel").get<double>()};
  f.tol_float = {t.at("float").at("abs").get<double>(), t.at("float").at("rel").get<double>()};
  return f;
}

std::vector<std::filesystem::path> fixture_paths() {
  std::vector<std::filesystem::path> paths;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(SEEDRL_TEST_FIXTURES) / "ppo")) {
    if (entry.is_regular_file() && entry.path().extension() == ".json") {
      paths.push_back(entry.path());
    }
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

template <class S>
std::string fixture_mismatch(const ppo_fixture& f, tolerance tol) {
  const ppo_result<S> r = run_loss<S>(f.data);
  const json& e = f.expected;
  const std::pair<const char*, double> terms[] = {
      {"total", r.terms.total},
      {"policy", r.terms.policy},
      {"baseline", r.terms.baseline},
      {"entropy", r.terms.entropy},
      {"approx_kl", r.terms.approx_kl},
      {"clip_fraction", r.terms.clip_fraction},
      {"behaviour_clip_fraction", r.terms.behaviour_clip_fraction}};
  for (const auto& [name, got] : terms) {
    std::string m = first_mismatch(name, got, e.at(name).template get<double>(), tol);
    if (!m.empty()) {
      return m;
    }
  }
  std::string m = first_mismatch<S>("grad_logits", r.grad_logits,
                                    e.at("grad_logits").get<std::vector<double>>(), tol);
  if (m.empty()) {
    m = first_mismatch<S>("grad_values", r.grad_values,
                          e.at("grad_values").get<std::vector<double>>(), tol);
  }
  return m;
}

// --- random batches for the behaviour tests --------------------------------------------------

double float_exact(double x) {
  return static_cast<double>(static_cast<float>(x));
}

// Behaviour log-probs are the learner's own plus `lag` * noise: 0 gives an on-policy batch.
ppo_data make_data(std::size_t T, std::size_t B, std::size_t A, std::uint64_t seed, double lag) {
  seedrl::random_generator rng(seed);
  ppo_data d;
  d.T = T;
  d.B = B;
  d.A = A;
  const std::size_t steps = (T + 1) * B;
  for (std::size_t i = 0; i < steps * A; ++i) {
    d.logits.push_back(float_exact(rng.uniform(-2.0, 2.0)));
  }
  for (std::size_t i = 0; i < steps; ++i) {
    d.values.push_back(float_exact(rng.uniform(-2.0, 2.0)));
    d.old_values.push_back(float_exact(d.values.back() + rng.uniform(-1.0, 1.0)));
    d.rewards.push_back(float_exact(rng.uniform(-1.0, 1.0)));
    d.dones.push_back(rng.uniform() < 0.15 ? 1 : 0);
    d.actions.push_back(static_cast<std::int32_t>(rng.below(A)));
    const double own = seedrl::log_prob(d.logits.data() + i * A, static_cast<int>(A),
                                        static_cast<int>(d.actions.back()));
    d.behaviour_log_probs.push_back(float_exact(own + lag * rng.uniform(-1.0, 1.0)));
  }
  d.truncated.assign(steps, 0);
  return d;
}

double max_abs_difference(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, std::abs(a[i] - b[i]));
  }
  return worst;
}

}  // namespace

TEST_CASE("ppo_loss models seedrl::Loss and reads the batch host_trainer builds", "[ppo]") {
  STATIC_REQUIRE(seedrl::Loss<seedrl::ppo_loss<float>>);
  STATIC_REQUIRE(seedrl::Loss<seedrl::ppo_loss<double>>);
  STATIC_REQUIRE(seedrl::Loss<seedrl::ppo_loss<float, seedrl::diag_gaussian_distribution<float>>>);
  STATIC_REQUIRE(seedrl::Trainer<seedrl::host_trainer, seedrl::mlp_lstm_agent<float>,
                                 seedrl::adam<float>, seedrl::ppo_loss<float>>);
}

TEST_CASE("ppo_loss matches every float64 reference fixture, in double and float",
          "[ppo][gaussian]") {
  const auto paths = fixture_paths();
  REQUIRE(paths.size() >= 10);
  bool gae = false, vtrace = false, value_clip = false, raw = false, cut = false;
  bool gaussian = false, squashed = false, proximal = false, one_step = false, untruncated = false;
  for (const auto& path : paths) {
    const ppo_fixture f = load_ppo_fixture(path);
    INFO("fixture " << f.name);
    CHECK(fixture_mismatch<double>(f, f.tol_double) == "");
    CHECK(fixture_mismatch<float>(f, f.tol_float) == "");
    gae |= f.data.config.advantage == seedrl::ppo_advantage::gae;
    vtrace |= f.data.config.advantage == seedrl::ppo_advantage::vtrace;
    value_clip |= f.data.config.value_clip.has_value();
    raw |= !f.data.config.normalize_advantages;
    cut |= std::any_of(f.data.truncated.begin(), f.data.truncated.end(),
                       [](std::uint8_t x) { return x != 0; });
    gaussian |= f.data.gaussian;
    squashed |= f.data.squash;
    proximal |= !f.data.proximal_logits.empty();
    one_step |= f.data.proximal_logits.empty();
    untruncated |= !f.data.config.proximal_weight_clip.has_value();
  }
  // The fixtures cover every branch, both policy kinds, and updates with and without a
  // proximal policy.
  CHECK((gae && vtrace && value_clip && raw && cut && gaussian && squashed));
  CHECK((proximal && one_step && untruncated));
}

TEST_CASE("the fixture comparison rejects a gradient off by ten tolerances", "[ppo]") {
  ppo_fixture f =
      load_ppo_fixture(std::filesystem::path(SEEDRL_TEST_FIXTURES) / "ppo" / "gae_normalized.json");
  REQUIRE(fixture_mismatch<double>(f, f.tol_double) == "");
  auto g = f.expected.at("grad_logits").get<std::vector<double>>();
  g[3] += 10 * (f.tol_double.abs + f.tol_double.rel * std::abs(g[3]));
  f.expected["grad_logits"] = g;
  CHECK_THAT(fixture_mismatch<double>(f, f.tol_double), Contains("grad_logits[3]"));
}

TEST_CASE("ppo_loss: GAE and V-trace agree on-policy with lambda 1 and differ off-policy",
          "[ppo]") {
  // On-policy (rho = 1) with lambda = 1, V-trace's vs is the n-step return, which is GAE(1)'s
  // target, and r + gamma vs' - V is GAE(1)'s advantage: the two settings must agree.
  for (const double lag : {0.0, 1.5}) {
    ppo_data d = make_data(6, 3, 4, 21, lag);
    d.config.lambda = 1.0;
    d.config.normalize_advantages = false;
    d.config.advantage = seedrl::ppo_advantage::gae;
    const auto gae = run_loss<double>(d);
    d.config.advantage = seedrl::ppo_advantage::vtrace;
    const auto vtrace = run_loss<double>(d);
    const double diff = max_abs_difference(gae.grad_values, vtrace.grad_values);
    INFO("lag " << lag << ": max |grad_values difference| " << diff);
    if (lag == 0.0) {
      // Not exact: behaviour log-probs are rounded to float, so rho = 1 +- 1e-7.
      CHECK(diff < 1e-6);
      CHECK(std::abs(gae.terms.total - vtrace.terms.total) < 1e-6);
    } else {
      CHECK(diff > 1e-3);
      CHECK(std::abs(gae.terms.policy - vtrace.terms.policy) > 1e-4);
    }
  }
}

TEST_CASE(
    "ppo_loss clips against the proximal policy: the actors' lag changes the weights and the "
    "behaviour clip fraction, not the clip",
    "[ppo][decoupled]") {
  ppo_data d = make_data(6, 3, 4, 26, 0.0);
  seedrl::random_generator rng(27);
  // Proximal logits: the current ones before some update steps; mu = pi_prox (no lag).
  for (const double z : d.logits)
    d.proximal_logits.push_back(float_exact(z + rng.uniform(-0.6, 0.6)));
  for (std::size_t i = 0; i < d.actions.size(); ++i)
    d.behaviour_log_probs[i] = float_exact(seedrl::log_prob(
        d.proximal_logits.data() + i * d.A, static_cast<int>(d.A), static_cast<int>(d.actions[i])));
  const auto no_lag = run_loss<double>(d);
  REQUIRE(no_lag.terms.clip_fraction > 0.0);
  // Without lag every weight is pi_prox / mu = 1 (within float rounding of mu): truncating
  // it changes nothing.
  d.config.proximal_weight_clip.reset();
  const auto untruncated = run_loss<double>(d);
  CHECK(max_abs_difference(untruncated.grad_logits, no_lag.grad_logits) < 1e-6);
  d.config.proximal_weight_clip = 1.0;

  for (std::size_t i = 0; i < d.actions.size(); ++i)
    d.behaviour_log_probs[i] = float_exact(d.behaviour_log_probs[i] + rng.uniform(-1.0, 1.0));
  const auto lagged = run_loss<double>(d);
  CHECK(lagged.terms.clip_fraction == no_lag.terms.clip_fraction);
  CHECK(lagged.terms.approx_kl == no_lag.terms.approx_kl);
  CHECK(lagged.terms.behaviour_clip_fraction > no_lag.terms.behaviour_clip_fraction);
  CHECK(lagged.terms.entropy == no_lag.terms.entropy);
  CHECK(lagged.grad_values == no_lag.grad_values);  // GAE's targets do not read mu
  CHECK(max_abs_difference(lagged.grad_logits, no_lag.grad_logits) > 1e-4);

  // The current logits passed as proximal ones are what an empty proximal_logits means.
  d.proximal_logits = d.logits;
  const auto explicit_own = run_loss<double>(d);
  d.proximal_logits.clear();
  const auto implicit_own = run_loss<double>(d);
  CHECK(max_abs_difference(explicit_own.grad_logits, implicit_own.grad_logits) < 1e-15);
  CHECK(explicit_own.terms.total == Approx(implicit_own.terms.total).epsilon(1e-15));
  CHECK(implicit_own.terms.clip_fraction == 0.0);
  CHECK(implicit_own.terms.approx_kl == 0.0);
}

TEST_CASE("ppo_loss: value clipping changes the value term only, and only when set", "[ppo]") {
  ppo_data d = make_data(5, 4, 3, 22, 0.8);
  const auto plain = run_loss<double>(d);
  // The proximal values are the targets' values: old_values equal to the values change nothing.
  std::vector<double> kept_old = d.old_values;
  d.old_values = d.values;
  const auto same_old = run_loss<double>(d);
  d.old_values.clear();
  const auto without_old = run_loss<double>(d);
  CHECK(same_old.terms.total == without_old.terms.total);
  CHECK(same_old.grad_values == without_old.grad_values);
  CHECK(plain.grad_values != without_old.grad_values);
  d.old_values = kept_old;
  d.config.value_clip = 0.1;
  const auto clipped = run_loss<double>(d);
  CHECK(clipped.terms.policy == plain.terms.policy);
  CHECK(clipped.terms.entropy == plain.terms.entropy);
  CHECK(clipped.terms.approx_kl == plain.terms.approx_kl);
  CHECK(clipped.terms.clip_fraction == plain.terms.clip_fraction);
  CHECK(clipped.grad_logits == plain.grad_logits);
  // max(...) can only raise the term, and here (old values up to 1 away, clip 0.1) it does.
  CHECK(clipped.terms.baseline > plain.terms.baseline);
  CHECK(clipped.grad_values != plain.grad_values);
  CHECK(clipped.terms.total ==
        clipped.terms.policy + clipped.terms.baseline + clipped.terms.entropy);
}

TEST_CASE("ppo_loss: a time limit is cut where a terminal state is not", "[ppo][truncation]") {
  for (const auto advantage : {seedrl::ppo_advantage::gae, seedrl::ppo_advantage::vtrace}) {
    ppo_data d = make_data(4, 2, 3, 23, 0.5);
    d.config.advantage = advantage;
    d.config.normalize_advantages = false;
    d.config.entropy_cost = 0.0;
    const std::size_t B = d.B, t = 1, b = 1, i = t * B + b;  // transition t of unroll b
    d.dones[(t + 1) * B + b] = 1;
    d.dones[t * B + b] = 0;  // so transition t-1 bootstraps through t
    const auto terminated = run_loss<double>(d);
    d.truncated[(t + 1) * B + b] = 1;
    const auto truncated = run_loss<double>(d);
    INFO("advantage " << static_cast<int>(advantage));
    CHECK(terminated.grad_values[i] != 0.0);
    CHECK(truncated.grad_values[i] == 0.0);
    for (std::size_t a = 0; a < d.A; ++a) {
      CHECK(truncated.grad_logits[i * d.A + a] == 0.0);  // no policy term, no entropy weight
    }
    CHECK(terminated.terms.total != truncated.terms.total);
    // The transition before bootstraps from V at the cut, not from 0: its value gradient moves.
    CHECK(terminated.grad_values[i - B] != truncated.grad_values[i - B]);
    // Later transitions do not see the cut.
    CHECK(terminated.grad_values[i + B] == truncated.grad_values[i + B]);
  }
}

TEST_CASE("ppo_loss writes every gradient element and zeroes step T", "[ppo]") {
  ppo_data d = make_data(3, 2, 4, 24, 1.0);
  const auto r = run_loss<float>(d);
  CHECK(std::all_of(r.grad_logits.begin(), r.grad_logits.end(),
                    [](float g) { return std::isfinite(g); }));
  CHECK(std::all_of(r.grad_values.begin(), r.grad_values.end(),
                    [](float g) { return std::isfinite(g); }));
  CHECK(std::all_of(r.grad_logits.end() - static_cast<std::ptrdiff_t>(d.B * d.A),
                    r.grad_logits.end(), [](float g) { return g == 0.0f; }));
  CHECK(std::all_of(r.grad_values.end() - static_cast<std::ptrdiff_t>(d.B), r.grad_values.end(),
                    [](float g) { return g == 0.0f; }));
  // No proximal policy: the update's first step, ratio 1 against itself; mu lags it.
  CHECK(r.terms.approx_kl == 0.0);
  CHECK(r.terms.clip_fraction == 0.0);
  CHECK(r.terms.behaviour_clip_fraction > 0.0);
  CHECK(r.terms.behaviour_clip_fraction < 1.0);
}

TEST_CASE("ppo_loss refuses bad configs and batches with messages naming the field", "[ppo]") {
  using config = seedrl::ppo_loss_config<float>;
  using loss = seedrl::ppo_loss<float>;
  const auto with = [](auto change) {
    config c;
    change(c);
    return c;
  };
  CHECK_THROWS_WITH(loss(with([](config& c) { c.clip_epsilon = 0.0f; })),
                    Contains("clip_epsilon must be in (0, 1)"));
  CHECK_THROWS_WITH(loss(with([](config& c) { c.discount = 1.5f; })),
                    Contains("discount must be in [0, 1]"));
  CHECK_THROWS_WITH(loss(with([](config& c) { c.lambda = -0.1f; })),
                    Contains("lambda must be in [0, 1]"));
  CHECK_THROWS_WITH(loss(with([](config& c) { c.value_clip = 0.0f; })),
                    Contains("value_clip must be finite and positive"));
  CHECK_THROWS_WITH(loss(with([](config& c) { c.value_cost = -1.0f; })),
                    Contains("value_cost must be finite and >= 0"));
  CHECK_THROWS_WITH(
      loss(with([](config& c) { c.entropy_cost = std::numeric_limits<float>::infinity(); })),
      Contains("entropy_cost must be finite and >= 0"));
  CHECK_THROWS_WITH(loss(with([](config& c) { c.advantage_epsilon = 0.0f; })),
                    Contains("advantage_epsilon must be finite and positive"));
  CHECK_THROWS_WITH(loss(with([](config& c) { c.clip_rho_threshold = -1.0f; })),
                    Contains("clip_rho_threshold must be positive"));
  CHECK_THROWS_WITH(
      loss(with([](config& c) { c.advantage = static_cast<seedrl::ppo_advantage>(7); })),
      Contains("advantage must be ppo_advantage::gae or ppo_advantage::vtrace"));
  CHECK_THROWS_WITH(loss(with([](config& c) { c.proximal_weight_clip = 0.0f; })),
                    Contains("proximal_weight_clip must be finite and positive"));
  CHECK_NOTHROW(loss(config{}));

  ppo_data d = make_data(2, 2, 3, 25, 0.3);
  d.config.value_clip = 0.2;
  d.old_values.clear();
  CHECK_THROWS_WITH(run_loss<float>(d),
                    Contains("value_clip is set but batch.old_values is empty"));
  d.old_values.assign(d.values.size() - 1, 0.0);
  CHECK_THROWS_WITH(run_loss<float>(d), Contains("batch.old_values holds 5 values"));
  d.old_values.assign(d.values.size(), 0.0);
  d.proximal_logits.assign(d.logits.size() - 1, 0.0);
  CHECK_THROWS_WITH(run_loss<float>(d), Contains("batch.proximal_logits holds 17 values"));
  d.proximal_logits.clear();
  d.actions[1] = 3;
  CHECK_THROWS_WITH(run_loss<float>(d), Contains("seedrl::ppo_loss: batch.actions[1]"));
  d.actions[1] = 0;
  d.truncated[2] = 1;
  d.dones[2] = 0;
  CHECK_THROWS_WITH(run_loss<float>(d), Contains("is set but dones is not"));
  d.dones[2] = 1;
  REQUIRE_NOTHROW(run_loss<float>(d));

  // old_values sharing memory with the value gradient: refused before anything is written.
  const auto logits = cast_to<float>(d.logits), values = cast_to<float>(d.values),
             mu = cast_to<float>(d.behaviour_log_probs), rewards = cast_to<float>(d.rewards);
  std::vector<float> grad_logits(logits.size(), -7.0f), grad_values(values.size(), -7.0f);
  seedrl::impala_gradients<float> grad{grad_logits, grad_values};
  const seedrl::ppo_batch<float> aliased{d.T, d.B,     d.A,     logits,      values,     d.actions,
                                         mu,  rewards, d.dones, d.truncated, grad_values};
  CHECK_THROWS_WITH(loss(config{})(aliased, grad), Contains("must not overlap"));
  CHECK(std::all_of(grad_logits.begin(), grad_logits.end(), [](float g) { return g == -7.0f; }));
}

// --- training through host_trainer -------------------------------------------------------------

TEST_CASE("host_trainer trains a contextual bandit with ppo_loss", "[ppo][train]") {
  // One-step episodes: observation one-hot(context) of 3, reward 1 for action == context, else
  // 0. Each round samples a batch from the current policy, then host_trainer takes the loss's
  // schedule on it (4 epochs x 4 minibatches of 12 unrolls), as the learner would.
  constexpr std::size_t T = 1, B = 48, A = 3;
  seedrl::mlp_lstm_agent_config nc;
  nc.observation_size = static_cast<std::ptrdiff_t>(A);
  nc.num_actions = static_cast<std::int32_t>(A);
  nc.hidden_sizes = {16};
  nc.lstm_size = 0;
  nc.reward_and_action_inputs = false;
  nc.seed = 5;
  seedrl::mlp_lstm_agent<float> net(nc);
  seedrl::adam_config ac;
  ac.learning_rate = 3e-3;
  seedrl::adam<float> opt(ac);
  seedrl::ppo_loss_config<float> lc;
  lc.entropy_cost = 0.0f;
  lc.epochs = 4;
  lc.minibatches = 4;
  const seedrl::ppo_loss<float> loss(lc);
  lc.epochs = lc.minibatches = 1;
  const seedrl::ppo_loss<float> one_step(lc);
  seedrl::host_trainer trainer;
  seedrl::random_generator rng(3);

  const std::size_t rows = (T + 1) * B;
  std::vector<float> obs(rows * A), rewards(rows), mu(rows), start(0), logits(rows * A),
      values(rows);
  std::vector<std::int32_t> actions(rows), prev(rows, 0), contexts(rows);
  std::vector<std::uint8_t> dones(rows, 0), truncated(rows, 0);
  // The policy's probability of the right action, averaged over contexts.
  const auto success = [&] {
    float total = 0.0f;
    for (std::size_t i = 0; i < B; ++i) {
      total += std::exp(seedrl::log_prob(logits.data() + i * A, static_cast<int>(A),
                                         static_cast<int>(contexts[i])));
    }
    return total / static_cast<float>(B);
  };
  float first = 0.0f, last = 0.0f;
  for (int round = 0; round < 40; ++round) {
    std::fill(obs.begin(), obs.end(), 0.0f);
    for (std::size_t i = 0; i < rows; ++i) {
      contexts[i] = static_cast<std::int32_t>(rng.below(A));
      obs[i * A + static_cast<std::size_t>(contexts[i])] = 1.0f;
    }
    seedrl::agent_unroll_output<float> out{logits, values};
    net.forward_unroll({T + 1, B, obs, rewards, dones, prev, start}, out);
    seedrl::sample_actions<float>(logits, rows, A, rng, actions);
    seedrl::categorical_log_probs<float>(logits, rows, A, actions, mu);
    for (std::size_t b = 0; b < B; ++b) {
      rewards[B + b] = actions[b] == contexts[b] ? 1.0f : 0.0f;  // step 1 holds its reward
      dones[B + b] = 1;
    }
    if (round == 0) {
      first = success();
    }
    last = success();
    const seedrl::training_batch<float> batch{T,         B,    A,       obs, rewards, dones,
                                              truncated, prev, actions, mu,  start};
    if (round == 0) {  // a step on a copy: the batch is on-policy, ratio 1 everywhere
      auto probe_net = net;
      auto probe_opt = opt;
      const auto r = trainer.train_step(batch, probe_net, probe_opt, one_step, 40.0);
      CHECK(r.terms.approx_kl < 1e-5);
      CHECK(r.terms.clip_fraction == 0.0);
    }
    const seedrl::train_step_result r = trainer.train_step(batch, net, opt, loss, 40.0);
    REQUIRE(r.applied);
    REQUIRE(std::isfinite(r.terms.total));
    if (round == 0)  // later minibatches moved the policy away from the behaviour one
      CHECK(r.terms.approx_kl > 0.0);
  }
  INFO("probability of the right action " << first << " -> " << last);
  CHECK(first < 0.5f);
  CHECK(last > 0.9f);
}

TEST_CASE(
    "the progress line and metrics show PPO's KL and clip fraction, and IMPALA's stay as "
    "they were",
    "[ppo][progress]") {
  seedrl::learner_stats s;
  s.last_loss.total = 1.5;
  const auto impala = seedrl::progress_between(s, s, 1.0, 8);
  CHECK_THAT(seedrl::progress_line(impala),
             Contains("ent  0.0000)  entropy") && !Contains("kl ") && !Contains("clip"));
  s.last_loss.approx_kl = 0.0123;
  s.last_loss.clip_fraction = 0.25;
  s.last_loss.behaviour_clip_fraction = 0.4;
  const auto ppo = seedrl::progress_between(s, s, 1.0, 8);
  CHECK_THAT(seedrl::progress_line(ppo),
             Contains("ent  0.0000 kl 0.0123 clip  25% vs mu  40%)  entropy"));

  const auto dir = std::filesystem::temp_directory_path() /
                   ("seedrl_ppo_progress_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  {
    seedrl::metrics_log log(dir);
    seedrl::log_progress(log, impala);
    seedrl::log_progress(log, ppo);
  }
  std::ifstream in(dir / "metrics.jsonl");
  std::string first, second;
  REQUIRE(std::getline(in, first));
  REQUIRE(std::getline(in, second));
  CHECK_THAT(first,
             Contains("\"loss/total\"") && !Contains("approx_kl") && !Contains("clip_fraction"));
  CHECK_THAT(second, Contains("\"loss/approx_kl\":0.0123") &&
                         Contains("\"loss/clip_fraction\":0.25") &&
                         Contains("\"loss/behaviour_clip_fraction\":0.4"));
  std::filesystem::remove_all(dir);
}
