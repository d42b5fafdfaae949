// Layers and the MLP+LSTM agent: central-difference gradient checks in float64, the LSTM
// against PyTorch fixtures (tools/gen_lstm_fixture.py), and inference against the unroll.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <vector>

#include "gradcheck.hpp"
#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/algo/vtrace.hpp"
#include "seedrl/backend/detail/host_dense_primitives.hpp"
#include "seedrl/backend/detail/host_sgemm_primitives.hpp"
#include "seedrl/backend/detail/host_tiled_primitives.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/net/activation_math.hpp"
#include "seedrl/net/categorical.hpp"
#include "seedrl/net/detail/dense_stack.hpp"
#include "seedrl/net/detail/lstm_stack.hpp"
#include "seedrl/net/lstm.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"

namespace {

using seedrl::cview;
using seedrl::view;
using seedrl_test::gradcheck;

using seedrl_test::dot;
using seedrl_test::random_vector;
using seedrl_test::require_close;

}  // namespace

TEST_CASE("dense layers' gradients match central differences", "[network][gradcheck]") {
  // detail::dense_stack, the one dense-layer implementation (MLP torsos, heads, the pixel
  // torsos' dense layer): one linear layer, and tanh/ReLU stacks of two layers, on the host's
  // primitives and on the tiled ones (the pixel torsos'), with strided input, output and input
  // gradient, the input gradient overwritten and accumulated.
  seedrl::random_generator rng(1);
  const std::size_t N = 5, in = 4, ldx = 6, ldy = 5, lddx = 7;
  const auto check = [&](auto backend, auto stack, double dx_beta) {
    using stack_type = decltype(stack);
    const std::size_t out = stack.output_size();
    std::vector<double> params(stack.num_parameters()), grads(params.size(), 0.0);
    for (auto& p : params)
      p = rng.uniform(-0.8, 0.8);
    auto x = random_vector(static_cast<std::ptrdiff_t>(N * ldx), rng);
    const auto g = random_vector(static_cast<std::ptrdiff_t>(N * ldy), rng);
    std::vector<double> y(N * ldy, 0.0), dx(N * lddx, 0.25);
    typename stack_type::template workspace<decltype(backend)> ws;
    auto loss = [&] {
      stack.forward(backend, ws, params.data(), x.data(), ldx, N, y.data(), ldy);
      double l = 0.0;
      for (std::size_t r = 0; r < N; ++r)
        for (std::size_t c = 0; c < out; ++c)
          l += y[r * ldy + c] * g[r * ldy + c];
      return l;
    };
    loss();
    stack.backward(backend, ws, params.data(), grads.data(), x.data(), ldx, N, y.data(), ldy,
                   g.data(), ldy, dx.data(), lddx, dx_beta);
    require_close(gradcheck(params, grads, loss));
    // The input gradient in dx's columns (what was there scaled by dx_beta), the gaps left.
    for (std::size_t r = 0; r < N; ++r) {
      for (std::size_t c = 0; c < in; ++c) {
        const double h = 1e-6, keep = x[r * ldx + c];
        x[r * ldx + c] = keep + h;
        const double up = loss();
        x[r * ldx + c] = keep - h;
        const double down = loss();
        x[r * ldx + c] = keep;
        CHECK(dx[r * lddx + c] == Approx((up - down) / (2 * h) + 0.25 * dx_beta).margin(1e-6));
      }
      for (std::size_t c = in; c < lddx; ++c)
        CHECK(dx[r * lddx + c] == 0.25);
    }
  };
  using seedrl::detail::dense_stack;
  const seedrl::detail::host_dense_primitives host;
  const seedrl::detail::host_tiled_primitives tiled;
  check(host, dense_stack<double, seedrl::identity_activation>(in, {3}, "test"), 0.0);
  check(tiled, dense_stack<double, seedrl::identity_activation>(in, {3}, "test"), 1.0);
  check(host, dense_stack<double, seedrl::tanh_activation>(in, {6, 5}, "test"), 1.0);
  check(tiled, dense_stack<double, seedrl::relu_activation>(in, {6, 4}, "test"), 0.0);
}

TEST_CASE("the relu and tanh policies' gradients match central differences",
          "[network][gradcheck]") {
  // The per-element functions every dense layer and conv stack runs (net/activation_math.hpp):
  // backward(grad, y) from the forward's output y.
  seedrl::random_generator rng(2);
  auto x = random_vector(24, rng, 2.0);
  const auto g = random_vector(24, rng);
  std::vector<double> y(24);
  const auto check = [&]<class Act>(Act) {
    auto loss = [&] {
      for (std::size_t i = 0; i < x.size(); ++i)
        y[i] = Act::template forward<double>(x[i]);
      return dot(y, g);
    };
    loss();
    std::vector<double> dx(g.size());
    for (std::size_t i = 0; i < g.size(); ++i)
      dx[i] = Act::template backward<double>(g[i], y[i]);
    INFO(Act::name);
    require_close(gradcheck(x, dx, loss));
  };
  check(seedrl::relu_activation{});
  check(seedrl::tanh_activation{});
}

TEMPLATE_TEST_CASE("relu backward over strided rows keeps dy where y > 0, in packets and tails",
                   "[network][relu]", float, double) {
  using S = TestType;
  seedrl::random_generator rng(7);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // Widths around every packet size (4, 8, 16 floats; 2, 4, 8 doubles) and their tails.
  for (std::size_t cols = 1; cols <= 37; ++cols) {
    const std::size_t rows = 3, ld_y = cols + 3, ld_dy = cols + 1, ld_dx = cols + 5;
    std::vector<S> y(rows * ld_y), dy(rows * ld_dy), dx(rows * ld_dx, S(-7));
    for (std::size_t i = 0; i < y.size(); ++i) {
      const auto u = rng.uniform();
      y[i] = static_cast<S>(u < 0.1 ? nan : u < 0.2 ? 0.0 : u < 0.3 ? -0.0 : u - 0.6);
    }
    for (auto& v : dy)
      v = static_cast<S>(rng.uniform() - 0.5);
    const auto want = [&](std::size_t r, std::size_t j) {
      return y[r * ld_y + j] > S(0) ? dy[r * ld_dy + j] : S(0);
    };
    seedrl::detail::relu_backward_rows(rows, cols, y.data(), ld_y, dy.data(), ld_dy, dx.data(),
                                       ld_dx);
    auto in_place = dy;
    seedrl::detail::relu_backward_rows(rows, cols, y.data(), ld_y, in_place.data(), ld_dy,
                                       in_place.data(), ld_dy);
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t j = 0; j < ld_dx; ++j) {
        INFO("cols " << cols << " row " << r << " col " << j);
        if (j < cols) {
          REQUIRE(dx[r * ld_dx + j] == want(r, j));
          REQUIRE(in_place[r * ld_dy + j] == want(r, j));
        } else {
          REQUIRE(dx[r * ld_dx + j] == S(-7));  // the stride's padding is not written
        }
      }
    }
  }
}

TEST_CASE("lstm stack gradients match central differences across episode boundaries",
          "[network][gradcheck][lstm]") {
  seedrl::random_generator rng(3);
  const std::ptrdiff_t T = 6, B = 3, I = 4, H = 5;
  seedrl::lstm<double> net(seedrl::lstm_config{I, H, 2, 1.0});
  std::vector<double> params(net.num_parameters()), grads(net.num_parameters(), 0.0);
  net.bind(params.data(), grads.data());
  net.init(rng);
  auto x = random_vector(T * B * I, rng);
  auto start = random_vector(B * net.state_size(), rng, 0.5);
  // env 0 resets at t = 0, env 1 at t = 2 and t = 4, env 2 never.
  std::vector<std::uint8_t> dones(T * B, 0);
  dones[0 * B + 0] = dones[2 * B + 1] = dones[4 * B + 1] = 1;
  const auto gy = random_vector(T * B * H, rng);
  const auto gend = random_vector(B * net.state_size(), rng);
  std::vector<double> y(T * B * H), end(B * net.state_size());
  auto loss = [&] {
    auto end_view = view(end.data(), B, net.state_size());
    net.forward_unroll(T, B, cview(x.data(), T * B, I), dones,
                       cview(start.data(), B, net.state_size()), view(y.data(), T * B, H),
                       &end_view);
    return dot(y, gy) + dot(end, gend);
  };
  loss();
  std::vector<double> dx(T * B * I), dstart(B * net.state_size());
  auto dx_view = view(dx.data(), T * B, I);
  auto dstart_view = view(dstart.data(), B, net.state_size());
  const auto gend_view = cview(gend.data(), B, net.state_size());
  net.backward_unroll(cview(gy.data(), T * B, H), &gend_view, &dx_view, &dstart_view);
  require_close(gradcheck(params, grads, loss));
  require_close(gradcheck(x, dx, loss));
  require_close(gradcheck(start, dstart, loss));
  // env 0 was reset before its first step: its start state cannot matter.
  for (std::ptrdiff_t j = 0; j < net.state_size(); ++j)
    CHECK(dstart[j] == 0.0);
}

namespace {

struct lstm_case {
  nlohmann::json j;
  std::ptrdiff_t L, I, H, T, B;
};

/// Runs the stack on a PyTorch fixture in scalar type S and compares outputs and gradients.
template <class S>
void run_lstm_fixture(const lstm_case& c) {
  const auto& j = c.j;
  const auto L = c.L, I = c.I, H = c.H, T = c.T, B = c.B;
  seedrl::lstm<S> net(seedrl::lstm_config{I, H, L, 0.0});
  std::vector<S> params(net.num_parameters()), grads(net.num_parameters(), S(0));
  net.bind(params.data(), grads.data());
  for (std::ptrdiff_t l = 0; l < L; ++l) {
    const auto& layer = j.at("layers").at(l);
    const auto wih = layer.at("weight_ih").get<std::vector<double>>();
    const auto whh = layer.at("weight_hh").get<std::vector<double>>();
    const auto bias = layer.at("bias").get<std::vector<double>>();
    const std::ptrdiff_t Il = net.layer_input_size(l);
    auto w = net.weight(l);
    for (std::ptrdiff_t r = 0; r < 4 * H; ++r) {
      for (std::ptrdiff_t k = 0; k < Il; ++k)
        w(r, k) = static_cast<S>(wih[r * Il + k]);
      for (std::ptrdiff_t k = 0; k < H; ++k)
        w(r, Il + k) = static_cast<S>(whh[r * H + k]);
    }
    auto b = net.bias(l);
    for (std::ptrdiff_t r = 0; r < 4 * H; ++r)
      b[r] = static_cast<S>(bias[r]);
  }
  auto to_s = [](const nlohmann::json& a) {
    const auto d = a.get<std::vector<double>>();
    return std::vector<S>(d.begin(), d.end());
  };
  const auto x = to_s(j.at("x"));
  const auto done_ints = j.at("done").get<std::vector<int>>();
  const std::vector<std::uint8_t> dones(done_ints.begin(), done_ints.end());
  // Fixture states are [L, B, H]; ours are one row per env of (h, c) per layer.
  auto to_state = [&](const std::vector<S>& h, const std::vector<S>& cc) {
    std::vector<S> s(B * net.state_size());
    for (std::ptrdiff_t l = 0; l < L; ++l)
      for (std::ptrdiff_t b = 0; b < B; ++b)
        for (std::ptrdiff_t k = 0; k < H; ++k) {
          s[b * net.state_size() + 2 * H * l + k] = h[(l * B + b) * H + k];
          s[b * net.state_size() + 2 * H * l + H + k] = cc[(l * B + b) * H + k];
        }
    return s;
  };
  const auto start = to_state(to_s(j.at("h0")), to_s(j.at("c0")));
  const auto d_end = to_state(to_s(j.at("GH")), to_s(j.at("GC")));
  const auto expected_end = to_state(to_s(j.at("hT")), to_s(j.at("cT")));
  std::vector<S> y(T * B * H), end(B * net.state_size());
  auto end_view = view(end.data(), B, net.state_size());
  net.forward_unroll(T, B, cview(x.data(), T * B, I), dones,
                     cview(start.data(), B, net.state_size()), view(y.data(), T * B, H), &end_view);
  const double abs_tol = j.at("tolerance").at("abs").get<double>();
  const double rel_tol = j.at("tolerance").at("rel").get<double>();
  auto compare = [&](const char* what, const std::vector<S>& got, const std::vector<double>& want) {
    INFO(what);
    REQUIRE(got.size() == want.size());
    std::size_t bad = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (!(std::abs(static_cast<double>(got[i]) - want[i]) <=
            abs_tol + rel_tol * std::abs(want[i])))
        ++bad;
    }
    CHECK(bad == 0);
  };
  compare("y", y, j.at("y").get<std::vector<double>>());
  std::vector<double> want_end(expected_end.begin(), expected_end.end());
  compare("final state", end, want_end);

  const auto gy = to_s(j.at("G"));
  std::vector<S> dx(T * B * I), dstart(B * net.state_size());
  auto dx_view = view(dx.data(), T * B, I);
  auto dstart_view = view(dstart.data(), B, net.state_size());
  const auto d_end_view = cview(d_end.data(), B, net.state_size());
  net.backward_unroll(cview(gy.data(), T * B, H), &d_end_view, &dx_view, &dstart_view);
  const auto& g = j.at("grads");
  compare("d x", dx, g.at("x").get<std::vector<double>>());
  const auto dstart_expected = to_state(to_s(g.at("h0")), to_s(g.at("c0")));
  compare("d start state", dstart,
          std::vector<double>(dstart_expected.begin(), dstart_expected.end()));
  for (std::ptrdiff_t l = 0; l < L; ++l) {
    const auto& gl = g.at("layers").at(l);
    const auto wih = gl.at("weight_ih").get<std::vector<double>>();
    const auto whh = gl.at("weight_hh").get<std::vector<double>>();
    const std::ptrdiff_t Il = net.layer_input_size(l);
    std::vector<S> got_ih, got_hh;
    auto wg = net.weight_grad(l);
    for (std::ptrdiff_t r = 0; r < 4 * H; ++r) {
      for (std::ptrdiff_t k = 0; k < Il; ++k)
        got_ih.push_back(wg(r, k));
      for (std::ptrdiff_t k = 0; k < H; ++k)
        got_hh.push_back(wg(r, Il + k));
    }
    compare("d weight_ih", got_ih, wih);
    compare("d weight_hh", got_hh, whh);
    const auto bg = net.bias_grad(l);
    compare("d bias", std::vector<S>(bg.begin(), bg.end()),
            gl.at("bias").get<std::vector<double>>());
  }
}

}  // namespace

TEST_CASE("lstm matches PyTorch LSTMCell fixtures in float and double",
          "[network][lstm][fixture]") {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(SEEDRL_TEST_FIXTURES "/lstm")) {
    if (entry.path().extension() != ".json")
      continue;
    std::ifstream in(entry.path());
    lstm_case c{nlohmann::json::parse(in), 0, 0, 0, 0, 0};
    c.L = c.j.at("num_layers");
    c.I = c.j.at("input_size");
    c.H = c.j.at("hidden_size");
    c.T = c.j.at("T");
    c.B = c.j.at("B");
    INFO(entry.path().filename().string());
    run_lstm_fixture<double>(c);
    run_lstm_fixture<float>(c);
    ++files;
  }
  CHECK(files >= 3);
}

namespace {

/// An unroll's inputs for the agent, random but valid.
struct unroll_data {
  std::size_t T1, B;
  std::vector<double> obs, rewards, start;
  std::vector<std::uint8_t> dones;
  std::vector<std::int32_t> prev_actions;
};

unroll_data make_network_unroll(const seedrl::mlp_lstm_agent<double>& net, std::size_t T1,
                                std::size_t B, seedrl::random_generator& rng) {
  unroll_data d{T1, B, {}, {}, {}, {}, {}};
  const auto& c = net.config();
  d.obs = random_vector(T1 * B * c.observation_size, rng);
  d.rewards = random_vector(T1 * B, rng, 2.0);
  d.start = random_vector(B * net.state_size(), rng, 0.5);
  d.dones.assign(T1 * B, 0);
  for (std::size_t i = 0; i < T1 * B; ++i) {
    d.dones[i] = rng.below(4) == 0;  // about one step in four starts an episode
    d.prev_actions.push_back(static_cast<std::int32_t>(rng.below(c.num_actions)));
  }
  return d;
}

seedrl::agent_unroll_input<double> as_input(const unroll_data& d) {
  return {d.T1, d.B, d.obs, d.rewards, d.dones, d.prev_actions, d.start};
}

}  // namespace

TEST_CASE("mlp_lstm_agent gradients match central differences", "[network][gradcheck][agent]") {
  for (const std::ptrdiff_t lstm_size : {std::ptrdiff_t{0}, std::ptrdiff_t{5}}) {
    INFO("lstm_size " << lstm_size);
    seedrl::mlp_lstm_agent_config config;
    config.observation_size = 3;
    config.num_actions = 3;
    config.hidden_sizes = {6, 5};
    config.lstm_size = lstm_size;
    config.max_abs_input_reward = 1.0;
    config.seed = 7;
    seedrl::mlp_lstm_agent<double> net(config);
    seedrl::random_generator rng(8);
    const auto data = make_network_unroll(net, 5, 3, rng);
    const auto in = as_input(data);
    const std::size_t N = 15;
    const auto g_logits = random_vector(N * 3, rng);
    const auto g_values = random_vector(N, rng);
    std::vector<double> logits(N * 3), values(N);
    seedrl::agent_unroll_output<double> out{logits, values};
    auto loss = [&] {
      net.forward_unroll(in, out);
      return dot(logits, g_logits) + dot(values, g_values);
    };
    loss();
    net.zero_gradients();
    net.backward_unroll({g_logits, g_values});
    const std::vector<double> analytic(net.gradients().begin(), net.gradients().end());
    require_close(gradcheck(net.parameters(), analytic, loss));
    // Gradients accumulate: a second backward doubles them.
    net.backward_unroll({g_logits, g_values});
    CHECK(net.gradients()[0] == Approx(2 * analytic[0]));
  }
}

TEST_CASE("mlp_lstm_agent one-step inference reproduces the unroll forward", "[network][agent]") {
  seedrl::mlp_lstm_agent_config config;
  config.observation_size = 4;
  config.num_actions = 2;
  config.hidden_sizes = {8, 8};
  config.lstm_size = 6;
  config.seed = 11;
  seedrl::mlp_lstm_agent<double> net(config);
  seedrl::random_generator rng(12);
  const std::size_t T1 = 7, B = 4;
  const auto data = make_network_unroll(net, T1, B, rng);
  std::vector<double> logits(T1 * B * 2), values(T1 * B);
  seedrl::agent_unroll_output<double> out{logits, values};
  net.forward_unroll(as_input(data), out);

  auto state = net.initial_state(B);
  std::copy(data.start.begin(), data.start.end(), state.data.begin());
  std::vector<double> step_logits(B * 2), step_values(B);
  for (std::size_t t = 0; t < T1; ++t) {
    const std::size_t r = t * B;
    seedrl::agent_step_input<double> in{
        std::span<const double>(data.obs).subspan(r * 4, B * 4),
        std::span<const double>(data.rewards).subspan(r, B),
        std::span<const std::uint8_t>(data.dones).subspan(r, B),
        std::span<const std::int32_t>(data.prev_actions).subspan(r, B)};
    seedrl::agent_step_output<double> step_out{step_logits, step_values};
    net.infer(in, state, step_out);
    for (std::size_t i = 0; i < B * 2; ++i)
      REQUIRE(step_logits[i] == Approx(logits[r * 2 + i]).margin(1e-12));
    for (std::size_t b = 0; b < B; ++b)
      REQUIRE(step_values[b] == Approx(values[r + b]).margin(1e-12));
  }
}

TEST_CASE("mlp_lstm_agent resets state where done and rejects bad input", "[network][agent]") {
  seedrl::mlp_lstm_agent<float> net;  // the CartPole network: MLP 64-64, LSTM 64
  CHECK(net.has_lstm());
  CHECK(net.state_size() == 128);
  auto state = net.initial_state(2);
  std::fill(state.data.begin(), state.data.end(), 0.5f);
  const std::vector<float> obs{0.1f, 0.2f, 0.3f, 0.4f, 0.1f, 0.2f, 0.3f, 0.4f};
  const std::vector<float> rewards{1.0f, 1.0f};
  const std::vector<std::uint8_t> dones{1, 0};
  const std::vector<std::int32_t> prev{0, 0};
  std::vector<float> logits(4), values(2);
  seedrl::agent_step_output<float> out{logits, values};
  net.infer({obs, rewards, dones, prev}, state, out);
  // Same input, but env 0 started from a reset state and env 1 from 0.5s: outputs differ,
  // and env 0's matches a fresh zero state's (done there too: an episode start also zeroes
  // the reward and previous-action inputs, so only the state may differ).
  CHECK(values[0] != values[1]);
  auto fresh = net.initial_state(1);
  std::vector<float> l1(2), v1(1);
  seedrl::agent_step_output<float> out1{l1, v1};
  net.infer({std::span(obs).first(4), std::span(rewards).first(1), std::span(dones).first(1),
             std::span(prev).first(1)},
            fresh, out1);
  CHECK(v1[0] == Approx(values[0]).margin(1e-6));

  const std::vector<std::int32_t> bad_prev{0, 5};
  CHECK_THROWS_AS(net.infer({obs, rewards, dones, bad_prev}, state, out), std::out_of_range);
  auto wrong_state = net.initial_state(3);
  CHECK_THROWS_AS(net.infer({obs, rewards, dones, prev}, wrong_state, out), std::invalid_argument);
  const std::vector<float> short_obs{0.1f};
  CHECK_THROWS_AS(net.infer({short_obs, rewards, dones, prev}, state, out), std::invalid_argument);
}

TEST_CASE("lstm vectorised step agrees with the shared per-unit math", "[network][lstm]") {
  // detail::lstm_unit is what the CUDA kernels run; the CPU layer uses Eigen's vectorised
  // logistic and tanh. Both must compute the same cell.
  seedrl::random_generator rng(21);
  const std::ptrdiff_t B = 3, I = 4, H = 5;
  seedrl::lstm<double> net(seedrl::lstm_config{I, H, 1, 0.0});
  std::vector<double> params(net.num_parameters()), grads(net.num_parameters());
  net.bind(params.data(), grads.data());
  net.init(rng);
  const auto x = random_vector(B * I, rng);
  auto state = random_vector(B * net.state_size(), rng);
  const auto before = state;
  std::vector<double> y(B * H);
  net.step(cview(x.data(), B, I), {}, view(state.data(), B, net.state_size()),
           view(y.data(), B, H));
  const auto w = net.weight(0);
  const auto bias = net.bias(0);
  for (std::ptrdiff_t b = 0; b < B; ++b) {
    for (std::ptrdiff_t j = 0; j < H; ++j) {
      double z[4];
      for (int gate = 0; gate < 4; ++gate) {
        const std::ptrdiff_t r = gate * H + j;
        z[gate] = bias[r];
        for (std::ptrdiff_t k = 0; k < I; ++k)
          z[gate] += w(r, k) * x[b * I + k];
        for (std::ptrdiff_t k = 0; k < H; ++k)
          z[gate] += w(r, I + k) * before[b * net.state_size() + k];
      }
      const auto u =
          seedrl::detail::lstm_unit(z[0], z[1], z[2], z[3], before[b * net.state_size() + H + j]);
      CHECK(state[b * net.state_size() + j] == Approx(u.h).margin(1e-12));
      CHECK(state[b * net.state_size() + H + j] == Approx(u.c).margin(1e-12));
      CHECK(y[b * H + j] == Approx(u.h).margin(1e-12));
    }
  }
}

namespace {

/// The host's dense primitives with every for_each run element by element (the functors'
/// operator(), what a GPU runs), none of the host's row or Eigen paths.
struct element_backend : seedrl::detail::host_dense_primitives {
  template <class F>
  void for_each(std::size_t n, const F& f) const {
    seedrl::detail::host_primitives::for_each(n, f);
  }
};

/// Runs lstm_stack<S> on `Backend`: a step in place over state rows of stride ld (resets on
/// some rows), an unroll from a start state with dones, its end state, and the backward with
/// d_end, dx and d_start. Returns every output, concatenated.
template <class S, class Backend>
std::vector<S> lstm_stack_outputs(Backend& be, std::size_t L) {
  const std::size_t I = 5, H = 7, B = 4, T = 5, ld = 2 * L * H + 3;
  const seedrl::detail::lstm_stack<S> stack(I, H, L, "test");
  seedrl::random_generator rng(17);
  std::vector<S> params(stack.num_parameters()), grads(stack.num_parameters(), S(0));
  stack.init(params.data(), rng, 1.0);
  const auto draw = [&](std::size_t n) {
    std::vector<S> v(n);
    for (auto& e : v)
      e = static_cast<S>(rng.uniform(-1.0, 1.0));
    return v;
  };
  std::vector<S> out;
  typename seedrl::detail::lstm_stack<S>::template workspace<Backend> ws;
  // A step, in place, with row 1 reset.
  const auto x = draw(B * (I + 2));
  auto state = draw(B * ld);
  const std::vector<std::uint8_t> resets{0, 1, 0, 0};
  stack.step(be, ws, params.data(), x.data(), I + 2, B, resets.data(), state.data(), ld,
             state.data(), ld);
  out.insert(out.end(), state.begin(), state.end());
  // An unroll with episode starts at (t 0, b 0), (t 2, b 1), (t 4, b 1).
  const auto xs = draw(T * B * I);
  const auto start = draw(B * ld);
  std::vector<std::uint8_t> dones(T * B, 0);
  dones[0] = dones[2 * B + 1] = dones[4 * B + 1] = 1;
  std::vector<S> end(B * ld, S(0));
  const S* y = stack.forward(be, ws, params.data(), xs.data(), I, T, B, dones.data(), start.data(),
                             ld, end.data(), ld);
  out.insert(out.end(), y, y + T * B * H);
  out.insert(out.end(), end.begin(), end.end());
  const auto dy = draw(T * B * H);
  const auto d_end = draw(B * ld);
  std::vector<S> dx(T * B * I), d_start(B * ld, S(0));
  stack.backward(be, ws, params.data(), grads.data(), xs.data(), I, T, B, dones.data(), dy.data(),
                 H, dx.data(), I, d_end.data(), ld, d_start.data(), ld);
  out.insert(out.end(), grads.begin(), grads.end());
  out.insert(out.end(), dx.begin(), dx.end());
  out.insert(out.end(), d_start.begin(), d_start.end());
  return out;
}

template <class S>
void check_lstm_paths(double tolerance) {
  for (const std::size_t L : {std::size_t{1}, std::size_t{2}}) {
    INFO("layers " << L);
    element_backend elements;
    seedrl::detail::host_sgemm_primitives host;
    const auto want = lstm_stack_outputs<S>(elements, L);
    const auto got = lstm_stack_outputs<S>(host, L);
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      INFO("output " << i);
      CHECK(std::abs(static_cast<double>(got[i]) - static_cast<double>(want[i])) <=
            tolerance * (1.0 + std::abs(static_cast<double>(want[i]))));
    }
  }
}

}  // namespace

TEST_CASE("host_sgemm_primitives' products match Eigen's through every path", "[network][lstm]") {
  // Few rows times a wide transposed operand (computed as its transpose), 16 rows or more
  // (oneDNN's sgemm), fewer (stack-sized tiles), every transpose, beta 0 and 1, a row stride
  // longer than a row whose padding must stay untouched.
  const seedrl::detail::host_sgemm_primitives fast;
  const seedrl::detail::host_dense_primitives plain;
  seedrl::random_generator rng(5);
  struct shape {
    int m, n, k;
  };
  for (const shape sh : {shape{1, 1024, 512}, shape{8, 1024, 512}, shape{48, 1024, 513},
                         shape{49, 1024, 512}, shape{16, 64, 32}, shape{5, 40, 24}})
    for (const bool ta : {false, true})
      for (const bool tb : {false, true})
        for (const float beta : {0.0f, 1.0f}) {
          INFO("m " << sh.m << " n " << sh.n << " k " << sh.k << " ta " << ta << " tb " << tb
                    << " beta " << beta);
          const int lda = (ta ? sh.m : sh.k) + 1, ldb = (tb ? sh.k : sh.n) + 2, ldc = sh.n + 3;
          const auto a = random_vector((ta ? sh.k : sh.m) * static_cast<std::ptrdiff_t>(lda), rng);
          const auto b = random_vector((tb ? sh.n : sh.k) * static_cast<std::ptrdiff_t>(ldb), rng);
          std::vector<float> af(a.begin(), a.end()), bf(b.begin(), b.end());
          auto c0 = random_vector(sh.m * static_cast<std::ptrdiff_t>(ldc), rng);
          std::vector<float> got(c0.begin(), c0.end()), want = got;
          fast.gemm(ta, tb, sh.m, sh.n, sh.k, 1.0f, af.data(), lda, bf.data(), ldb, beta,
                    got.data(), ldc);
          plain.gemm(ta, tb, sh.m, sh.n, sh.k, 1.0f, af.data(), lda, bf.data(), ldb, beta,
                     want.data(), ldc);
          std::size_t bad = 0;
          for (std::size_t i = 0; i < got.size(); ++i) {
            const bool padding = static_cast<int>(i % static_cast<std::size_t>(ldc)) >= sh.n;
            if (padding ? got[i] != want[i]
                        : !(std::abs(got[i] - want[i]) <= 1e-4f * (1.0f + std::abs(want[i]))))
              ++bad;
          }
          CHECK(bad == 0);
        }
}

TEST_CASE("the lstm stack's element kernels (what a GPU runs) match the host's row paths",
          "[network][lstm]") {
  // The host runs the cells as Eigen expressions and row loops; every other backend runs the
  // kernels' element functions. Double: the same arithmetic up to summation order; float: Eigen's
  // vectorised logistic and tanh against std::exp and std::tanh.
  check_lstm_paths<double>(1e-12);
  check_lstm_paths<float>(2e-5);
}

TEST_CASE("agent network plus IMPALA loss gradients match central differences",
          "[network][gradcheck][loss]") {
  // The whole training objective as a function of every parameter, across episode ends.
  seedrl::mlp_lstm_agent_config config;
  config.observation_size = 3;
  config.num_actions = 3;
  config.hidden_sizes = {5};
  config.lstm_size = 4;
  config.seed = 31;
  seedrl::mlp_lstm_agent<double> net(config);
  seedrl::random_generator rng(32);
  const std::size_t T = 5, T1 = T + 1, B = 3, A = 3;
  const auto data = make_network_unroll(net, T1, B, rng);
  std::vector<std::int32_t> actions(T1 * B);
  for (auto& a : actions)
    a = static_cast<std::int32_t>(rng.below(A));
  const auto behaviour = random_vector(T1 * B, rng);  // log mu(a): rho is clipped in places
  seedrl::impala_loss_config<double> loss_config;
  loss_config.entropy_cost = 0.01;  // large enough that the entropy path matters
  loss_config.max_abs_reward = 1.0;
  const seedrl::impala_loss<double> loss_fn(loss_config);
  std::vector<double> logits(T1 * B * A), values(T1 * B), d_logits(T1 * B * A), d_values(T1 * B);
  seedrl::agent_unroll_output<double> out{logits, values};
  seedrl::impala_gradients<double> grads{d_logits, d_values};
  // The IMPALA loss is a semi-gradient: V-trace targets are held fixed (stop-gradient). So the
  // finite differences are taken of the surrogate with the targets frozen at the base point.
  net.forward_unroll(as_input(data), out);
  const std::vector<std::uint8_t> no_truncation(data.dones.size(), 0);
  const seedrl::impala_batch<double> base{
      T, B, A, logits, values, actions, behaviour, data.rewards, data.dones, no_truncation};
  const auto terms = loss_fn(base, grads);
  std::vector<double> logp(T * B), log_rhos(T * B), discounts(T * B), rewards(T * B), vs(T * B),
      pg_adv(T * B);
  seedrl::categorical_log_probs<double>(std::span<const double>(logits).first(T * B * A), T * B, A,
                                        std::span<const std::int32_t>(actions).first(T * B), logp);
  for (std::size_t i = 0; i < T * B; ++i) {
    log_rhos[i] = logp[i] - behaviour[i];
    discounts[i] = data.dones[i + B] ? 0.0 : 0.99;
    rewards[i] = std::clamp(data.rewards[i + B], -1.0, 1.0);
  }
  seedrl::vtrace<double>(T, B, log_rhos, discounts, rewards,
                         std::span<const double>(values).first(T * B),
                         std::span<const double>(values).subspan(T * B), {}, vs, pg_adv);
  auto loss = [&] {
    net.forward_unroll(as_input(data), out);
    std::vector<double> lp(T * B), entropy(T * B);
    seedrl::categorical_log_probs<double>(std::span<const double>(logits).first(T * B * A), T * B,
                                          A, std::span<const std::int32_t>(actions).first(T * B),
                                          lp);
    seedrl::categorical_entropy<double>(std::span<const double>(logits).first(T * B * A), T * B, A,
                                        entropy);
    double total = 0.0;
    for (std::size_t i = 0; i < T * B; ++i) {
      total += -lp[i] * pg_adv[i] + 0.5 * 0.5 * (vs[i] - values[i]) * (vs[i] - values[i]) -
               0.01 * entropy[i];
    }
    return total / static_cast<double>(T * B);
  };
  CHECK(loss() == Approx(terms.total).epsilon(1e-12));  // same objective at the base point
  net.zero_gradients();
  net.backward_unroll({d_logits, d_values});
  const std::vector<double> analytic(net.gradients().begin(), net.gradients().end());
  require_close(gradcheck(net.parameters(), analytic, loss));
}

TEST_CASE(
    "mlp_lstm_agent with a state-independent log-std: its description, one vector in every row, "
    "and that vector's gradient summed over the rows",
    "[network][gaussian]") {
  seedrl::mlp_lstm_agent_config c;
  c.observation_size = 3;
  c.num_actions = 4;  // 2 means, 2 log-stds
  c.continuous_action_size = 2;
  c.hidden_sizes = {6};
  c.lstm_size = 0;
  c.seed = 3;
  seedrl::mlp_lstm_agent<double> dependent(c);
  c.log_std_init = -0.7;
  const std::string text = seedrl::describe(c);
  CHECK(text.ends_with(" continuous_actions=2 log_std=independent"));
  const auto back = seedrl::parse_mlp_lstm_agent_description(text);
  CHECK(back.log_std_init.has_value());
  CHECK_FALSE(seedrl::parse_mlp_lstm_agent_description(seedrl::describe(dependent.config()))
                  .log_std_init.has_value());
  CHECK_THROWS_AS(
      seedrl::parse_mlp_lstm_agent_description(seedrl::describe({}) + " log_std=independent"),
      std::invalid_argument);  // only with continuous actions
  CHECK_THROWS_AS(seedrl::parse_mlp_lstm_agent_description(text + "x"), std::invalid_argument);
  seedrl::mlp_lstm_agent<double> net(c);
  CHECK(net.body().policy().independent_log_std() == 2);
  CHECK(dependent.body().policy().independent_log_std() == 0);
  // The layer writes the 2 means only, and 2 log-std parameters follow it.
  CHECK(net.parameters().size() < dependent.parameters().size());
  auto wrong = c;
  wrong.continuous_action_size = 0;  // a log-std for discrete actions
  CHECK_THROWS_AS(seedrl::mlp_lstm_agent<double>(wrong), std::invalid_argument);

  constexpr std::size_t T1 = 3, B = 2, N = T1 * B;
  seedrl::random_generator rng(4);
  const auto obs = random_vector(N * 3, rng), rewards = random_vector(N, rng),
             prev = random_vector(N * 2, rng);
  const std::vector<std::uint8_t> dones(N, 0);
  const std::vector<std::int32_t> prev_actions(N, 0);
  const std::vector<double> start;
  const seedrl::agent_unroll_input<double> input{T1,           B,     obs, rewards, dones,
                                                 prev_actions, start, prev};
  std::vector<double> outputs(N * 4), values(N);
  seedrl::agent_unroll_output<double> out{outputs, values};
  net.forward_unroll(input, out);
  for (std::size_t r = 0; r < N; ++r) {
    CHECK(outputs[r * 4 + 2] == -0.7);
    CHECK(outputs[r * 4 + 3] == -0.7);
  }
  // d(sum of every row's log-stds) / d(log-std vector) = N for each element.
  std::vector<double> d_outputs(N * 4, 0.0), d_values(N, 0.0);
  for (std::size_t r = 0; r < N; ++r)
    d_outputs[r * 4 + 2] = d_outputs[r * 4 + 3] = 1.0;
  net.zero_gradients();
  net.backward_unroll({d_outputs, d_values});
  const auto g = net.gradients();
  const std::size_t log_std_at = net.body().value_offset() - 2;
  CHECK(g[log_std_at] == static_cast<double>(N));
  CHECK(g[log_std_at + 1] == static_cast<double>(N));
}

TEST_CASE("mlp_lstm_agent description round trips and bad ones are refused", "[network]") {
  seedrl::mlp_lstm_agent_config c;
  c.observation_size = 7;
  c.num_actions = 5;
  c.hidden_sizes = {32, 16, 8};
  c.lstm_size = 24;
  c.lstm_layers = 2;
  c.reward_and_action_inputs = false;
  c.max_abs_input_reward = 1.0;
  const std::string text = seedrl::describe(c);
  CHECK(text ==
        "mlp_lstm_agent obs=7 actions=5 hidden=32,16,8 lstm=24 layers=2 reward_action_inputs=0 "
        "max_abs_input_reward=1.000000");
  const auto back = seedrl::parse_mlp_lstm_agent_description(text);
  CHECK(back.observation_size == 7);
  CHECK(back.num_actions == 5);
  CHECK(back.hidden_sizes == std::vector<std::ptrdiff_t>{32, 16, 8});
  CHECK(back.lstm_size == 24);
  CHECK(back.lstm_layers == 2);
  CHECK_FALSE(back.reward_and_action_inputs);
  REQUIRE(back.max_abs_input_reward);
  CHECK(*back.max_abs_input_reward == 1.0);
  // The rebuilt network has the same parameter count.
  CHECK(seedrl::mlp_lstm_agent<float>(back).parameters().size() ==
        seedrl::mlp_lstm_agent<float>(c).parameters().size());
  CHECK(seedrl::parse_mlp_lstm_agent_description(seedrl::describe({})).hidden_sizes ==
        std::vector<std::ptrdiff_t>{64, 64});
  // A continuous-action network says so, and only then.
  CHECK(seedrl::describe({}).find("continuous") == std::string::npos);
  seedrl::mlp_lstm_agent_config cont;
  cont.num_actions = 6;
  cont.continuous_action_size = 3;
  const std::string cont_text = seedrl::describe(cont);
  CHECK(cont_text.ends_with(" continuous_actions=3"));
  CHECK(seedrl::parse_mlp_lstm_agent_description(cont_text).continuous_action_size == 3);
  CHECK(seedrl::parse_mlp_lstm_agent_description(text).continuous_action_size == 0);
  CHECK_THROWS_AS(seedrl::parse_mlp_lstm_agent_description(cont_text + " continuous_actions=3"),
                  std::invalid_argument);
  CHECK_THROWS_AS(seedrl::parse_mlp_lstm_agent_description(text + " continuous_actions=0"),
                  std::invalid_argument);
  // Its core reads the previous action's 3 values (one reward column, no one-hot over 6).
  seedrl::mlp_lstm_agent<double> cont_net(cont);
  cont.continuous_action_size = 0;
  seedrl::mlp_lstm_agent<double> one_hot_net(cont);
  CHECK(cont_net.parameters().size() + 3 * 4 * 64 == one_hot_net.parameters().size());
  for (const char* bad :
       {"cnn obs=4", "mlp_lstm_agent obs=4",
        "mlp_lstm_agent obs=-1 actions=2 hidden=1 lstm=0 "
        "layers=1 reward_action_inputs=1 "
        "max_abs_input_reward=none",
        "mlp_lstm_agent obs=4 actions=2 hidden=64,x lstm=0 layers=1 reward_action_inputs=1 "
        "max_abs_input_reward=none",
        "mlp_lstm_agent obs=4 actions=2 hidden=64 lstm=0 layers=1 reward_action_inputs=1 "
        "max_abs_input_reward=none colour=blue",
        // a field twice (the count alone would not see it), another kind that starts alike
        "mlp_lstm_agent obs=4 obs=4 actions=2 hidden=64 lstm=0 layers=1 reward_action_inputs=1",
        "mlp_lstm_agentx obs=4 actions=2 hidden=64 lstm=0 layers=1 reward_action_inputs=1 "
        "max_abs_input_reward=none",
        "mlp_lstm_agent obs=4 actions=2 hidden=64 lstm=0 layers=1 reward_action_inputs=1 "
        "max_abs_input_reward=1,5"}) {
    INFO(bad);
    CHECK_THROWS_AS(seedrl::parse_mlp_lstm_agent_description(bad), std::invalid_argument);
  }
}
