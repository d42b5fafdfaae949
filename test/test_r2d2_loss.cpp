// R2D2's loss (dueling n-step double-Q with value rescaling, burn-in, importance weights)
// against tools/gen_r2d2_fixture.py's float64 reference: targets written from the definition
// per step, the gradient by finite differences of the loss. Cases cover terminations,
// truncations one and several steps ahead, windows past the sequence's end and burn-in.
#include <catch2/catch.hpp>
#include <cstdint>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "fixture_compare.hpp"
#include "seedrl/algo/r2d2_loss.hpp"

namespace {

nlohmann::json cases() {
  std::ifstream in(std::string(SEEDRL_TEST_FIXTURES) + "/r2d2/r2d2_loss.json");
  REQUIRE(in);
  return nlohmann::json::parse(in)["cases"];
}

template <class S>
struct case_arrays {
  std::size_t T, B, A;
  seedrl::r2d2_loss_config<S> config;
  std::vector<S> logits, values, target_logits, target_values, rewards, weights;
  std::vector<std::int32_t> actions;
  std::vector<std::uint8_t> dones, truncated;

  explicit case_arrays(const nlohmann::json& c) : T(c["T"]), B(c["B"]), A(c["num_actions"]) {
    config.n_step = c["n"];
    config.burn_in = c["burn_in"];
    config.discount = static_cast<S>(c["discount"].get<double>());
    config.value_rescaling_eps = static_cast<S>(c["eps"].get<double>());
    config.priority_eta = c["eta"];
    const auto get = [&](const char* k) {
      return seedrl_test::cast_to<S>(c[k].get<std::vector<double>>());
    };
    logits = get("advantages");
    values = get("values");
    target_logits = get("target_advantages");
    target_values = get("target_values");
    rewards = get("rewards");
    weights = get("importance_weights");
    actions = c["actions"].get<std::vector<std::int32_t>>();
    dones = c["dones"].get<std::vector<std::uint8_t>>();
    truncated = c["truncated"].get<std::vector<std::uint8_t>>();
  }

  seedrl::r2d2_batch<S> batch() const {
    return {T,       B,       A,     logits,    values,  target_logits, target_values,
            actions, rewards, dones, truncated, weights, config.burn_in};
  }
};

}  // namespace

TEMPLATE_TEST_CASE("the R2D2 loss matches its float64 reference", "[r2d2]", double, float) {
  using S = TestType;
  const bool is_double = std::is_same_v<S, double>;
  for (const auto& c : cases()) {
    INFO(c["name"].get<std::string>());
    const case_arrays<S> in(c);
    std::vector<S> grad_logits((in.T + 1) * in.B * in.A, S(99)),
        grad_values((in.T + 1) * in.B, S(99));
    std::vector<double> priorities(in.B, -1.0);
    seedrl::r2d2_gradients<S> grad{grad_logits, grad_values, priorities};
    const seedrl::loss_terms terms = seedrl::r2d2_loss<S>(in.config)(in.batch(), grad);
    const seedrl_test::tolerance value_tol =
        is_double ? seedrl_test::tolerance{1e-9, 1e-9} : seedrl_test::tolerance{2e-5, 2e-5};
    // The reference's gradient comes from central differences (step 1e-6): good to ~1e-8.
    const seedrl_test::tolerance grad_tol =
        is_double ? seedrl_test::tolerance{1e-7, 1e-6} : seedrl_test::tolerance{2e-6, 1e-4};
    CHECK(seedrl_test::first_mismatch("loss", terms.total, c["loss"].get<double>(), value_tol) ==
          "");
    CHECK(terms.baseline == terms.total);
    CHECK(seedrl_test::first_mismatch("grad advantages", grad_logits,
                                      c["grad_advantages"].get<std::vector<double>>(),
                                      grad_tol) == "");
    CHECK(seedrl_test::first_mismatch("grad values", grad_values,
                                      c["grad_values"].get<std::vector<double>>(), grad_tol) == "");
    CHECK(seedrl_test::first_mismatch("priorities", priorities,
                                      c["priorities"].get<std::vector<double>>(), value_tol) == "");
  }
}

TEST_CASE("the R2D2 loss's mean Q is over the trained steps and weights scale each sequence",
          "[r2d2]") {
  // One action, so Q = V: the mean Q is the mean value over steps burn_in..T-1.
  seedrl::r2d2_loss_config<double> config;
  config.n_step = 1;
  config.burn_in = 1;
  config.value_rescaling = false;
  config.discount = 0.5;
  const std::size_t T = 3, B = 2, A = 1;
  std::vector<double> logits((T + 1) * B, 0.0), values = {9, 9, 1, 2, 3, 4, 5, 6};
  std::vector<double> target_logits = logits, target_values = {0, 0, 0, 0, 0, 0, 10, 20};
  std::vector<std::int32_t> actions((T + 1) * B, 0);
  std::vector<double> rewards = {0, 0, 0, 0, 1, 1, 1, 1};
  std::vector<std::uint8_t> dones((T + 1) * B, 0), truncated = dones;
  std::vector<double> weights = {1.0, 0.0};
  std::vector<double> gl((T + 1) * B), gv((T + 1) * B), prio(B);
  seedrl::r2d2_gradients<double> grad{gl, gv, prio};
  const auto terms =
      seedrl::r2d2_loss<double>(config)({T, B, A, logits, values, target_logits, target_values,
                                         actions, rewards, dones, truncated, weights, 1},
                                        grad);
  CHECK(terms.q_value == Approx((1 + 2 + 3 + 4) / 4.0));
  // column 0: y_1 = 1 + 0.5 * 0 = 1 (Q 1), y_2 = 1 + 0.5 * 10 = 6 (Q 3): td 0 and 3
  CHECK(terms.total == Approx(0.5 * 9.0 / 4.0));
  CHECK(gv[2 * B + 0] == Approx(-3.0 / 4.0));
  CHECK(gv[2 * B + 1] == 0.0);  // weight 0
  CHECK(gv[0] == 0.0);          // burn-in
  CHECK(prio[0] == Approx(0.9 * 3 + 0.1 * 1.5));
}

TEST_CASE("the R2D2 loss refuses bad batches before writing", "[r2d2]") {
  const std::size_t T = 2, B = 1, A = 2;
  std::vector<float> logits((T + 1) * B * A), values((T + 1) * B), rewards((T + 1) * B);
  std::vector<std::int32_t> actions((T + 1) * B, 0);
  std::vector<std::uint8_t> dones((T + 1) * B, 0), truncated = dones;
  std::vector<float> weights = {1.0f};
  std::vector<float> gl(logits.size(), 7.0f), gv(values.size(), 7.0f);
  seedrl::r2d2_gradients<float> grad{gl, gv};
  seedrl::r2d2_loss_config<float> config;
  config.burn_in = 0;
  const seedrl::r2d2_loss<float> loss(config);
  auto batch = [&] {
    return seedrl::r2d2_batch<float>{T,      B,       A,       logits, values,    logits,
                                     values, actions, rewards, dones,  truncated, weights};
  };
  SECTION("an action out of range") {
    actions[1] = 2;
    CHECK_THROWS_WITH(loss(batch(), grad), Catch::Contains("batch.actions[1]"));
  }
  SECTION("a NaN importance weight") {
    weights[0] = std::numeric_limits<float>::quiet_NaN();
    CHECK_THROWS_WITH(loss(batch(), grad), Catch::Contains("importance weight 0"));
  }
  SECTION("truncated without done") {
    truncated[2] = 1;
    CHECK_THROWS_WITH(loss(batch(), grad), Catch::Contains("truncated[2]"));
  }
  SECTION("burn-in as long as the sequence") {
    auto b = batch();
    b.burn_in = 2;
    CHECK_THROWS_WITH(loss(b, grad), Catch::Contains("T > burn_in"));
  }
  CHECK(gl[0] == 7.0f);  // nothing written
  CHECK_THROWS_AS(seedrl::r2d2_loss<float>(seedrl::r2d2_loss_config<float>{.n_step = 0}),
                  std::invalid_argument);
}
