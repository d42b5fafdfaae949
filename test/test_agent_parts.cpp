// Agents composed as `actor_critic_agent<S, Torso, Config...>` (seedrl/net/actor_critic_agent.hpp):
// a BackendTorso part on host_backend under detail::agent_body's core and heads. In float64
// against central differences (gradcheck.hpp) and independent references: the small conv stack
// against direct convolution loops, a tanh MLP without core and a Gaussian head against
// plain-loop forwards from the documented parameter layout, a user's own torso part
// (softsign_torso.hpp), separate policy and value networks; step-by-step inference against the
// unroll; episode starts; copies that share nothing; the configurations that cannot work,
// refused with std::invalid_argument. Orthogonal initialisation against Gram-Schmidt on the same
// Gaussian draws, and through mlp_lstm_agent with its gains. Gradient checks and inference of the
// ready agents (mlp_lstm_agent in each configuration, the three pixel agents in both layouts).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "gradcheck.hpp"
#include "seedrl/backend/host_backend.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/net/activation_math.hpp"
#include "seedrl/net/actor_critic_agent.hpp"
#include "seedrl/net/detail/small_conv_torso.hpp"
#include "seedrl/net/diag_gaussian.hpp"
#include "seedrl/net/frame_stack.hpp"
#include "seedrl/net/impala_resnet_lstm_agent.hpp"
#include "seedrl/net/init_scheme.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"
#include "seedrl/net/nature_cnn_lstm_agent.hpp"
#include "seedrl/net/network.hpp"
#include "seedrl/net/small_conv_lstm_agent.hpp"
#include "seedrl/train/backend_core_config.hpp"
#include "seedrl/train/mlp_torso.hpp"
#include "softsign_torso.hpp"

namespace {

using seedrl_test::dot;
using seedrl_test::gradcheck;
using seedrl_test::random_vector;
using seedrl_test::require_close;

/// A user's own torso part (nothing in the library knows it) under the library's core and heads.
using user_torso = seedrl_test::softsign_torso<seedrl::host_backend, double>;
using user_agent = seedrl::actor_critic_agent<double, user_torso, seedrl_test::softsign_config>;
/// The MLP torso part with tanh, configured by an mlp_lstm_agent_config.
using tanh_mlp_torso =
    seedrl::backend_mlp_torso<seedrl::host_backend, double, seedrl::tanh_activation>;
using tanh_mlp_agent =
    seedrl::actor_critic_agent<double, tanh_mlp_torso, seedrl::mlp_lstm_agent_config>;
using small_conv_stack = seedrl::detail::backend_small_conv_torso<seedrl::host_backend, double>;

static_assert(seedrl::Network<user_agent>);
static_assert(seedrl::Network<tanh_mlp_agent>);
static_assert(seedrl::Network<seedrl::small_conv_lstm_agent<double>>);
static_assert(seedrl::Network<seedrl::frame_stacked<seedrl::small_conv_lstm_agent<double>>>);

/// The core and heads `user_agent`s get here: A actions, an LSTM of H units (0: none).
seedrl::backend_core_config user_core(std::int32_t A, std::ptrdiff_t H) {
  seedrl::backend_core_config core;
  core.num_actions = A;
  core.lstm_size = H;
  return core;
}

/// Random unroll inputs for any agent: observations from `pixel` (0..255) or [-1, 1].
struct unroll {
  std::size_t T1, B;
  std::vector<double> obs, rewards, start;
  std::vector<std::uint8_t> dones;
  std::vector<std::int32_t> prev;
  std::vector<double> prev_continuous = {};  ///< [T1 * B * D] for continuous-action agents
  seedrl::agent_unroll_input<double> input() const {
    return {T1, B, obs, rewards, dones, prev, start, prev_continuous};
  }
};

template <class Net>
unroll make_unroll(const Net& net, std::size_t T1, std::size_t B, bool pixels,
                   seedrl::random_generator& rng) {
  unroll d{T1, B, {}, {}, {}, {}, {}};
  d.obs.resize(T1 * B * static_cast<std::size_t>(net.observation_size()));
  for (auto& x : d.obs)
    x = pixels ? static_cast<double>(rng.below(256)) : rng.uniform(-1.0, 1.0);
  d.rewards = random_vector(T1 * B, rng, 3.0);
  d.start = random_vector(B * static_cast<std::size_t>(net.state_size()), rng, 0.5);
  for (std::size_t i = 0; i < T1 * B; ++i) {
    d.dones.push_back(i >= B && rng.below(3) == 0);
    d.prev.push_back(static_cast<std::int32_t>(rng.below(net.num_actions())));
  }
  return d;
}

/// Parameters spread wider than the default initialisation, so every path carries signal.
template <class Net>
void spread_parameters(Net& net, std::uint64_t seed) {
  seedrl::random_generator rng(seed);
  for (auto& p : net.parameters())
    p = rng.uniform(-0.5, 0.5);
}

/// The count of exact zeros in `g`.
std::size_t zeros(std::span<const double> g) {
  return static_cast<std::size_t>(std::count(g.begin(), g.end(), 0.0));
}

/// Central differences of <g, outputs> over every parameter against backward_unroll. At most
/// `max_zero_fraction` of the analytic gradient may be exactly 0 (a few ReLU units are dead on
/// any input), or the check would pass on dead paths.
template <class Net>
void check_gradients(Net& net, const unroll& d, seedrl::random_generator& rng,
                     double max_zero_fraction = 0.25) {
  const std::size_t N = d.T1 * d.B, P = static_cast<std::size_t>(net.policy_size());
  std::vector<double> logits(N * P), values(N);
  seedrl::agent_unroll_output<double> out{logits, values};
  const auto g_logits = random_vector(N * P, rng);
  const auto g_values = random_vector(N, rng);
  const auto in = d.input();
  auto loss = [&] {
    net.forward_unroll(in, out);
    return dot(logits, g_logits) + dot(values, g_values);
  };
  loss();
  net.zero_gradients();
  net.backward_unroll({g_logits, g_values});
  const std::vector<double> analytic(net.gradients().begin(), net.gradients().end());
  INFO("zero gradients: " << zeros(analytic) << " of " << analytic.size());
  CHECK(static_cast<double>(zeros(analytic)) <=
        max_zero_fraction * static_cast<double>(analytic.size()));
  require_close(gradcheck(net.parameters(), analytic, loss));
}

/// Step-by-step `infer` over `d` from its start states: per step the B rows' logits, then their
/// values; `state` ends as the state after the last step.
template <class Net>
std::vector<double> step_outputs(Net& net, const unroll& d, typename Net::state_type& state) {
  const std::size_t B = d.B, P = static_cast<std::size_t>(net.policy_size()),
                    n = static_cast<std::size_t>(net.observation_size());
  state = net.initial_state(B);
  std::copy(d.start.begin(), d.start.end(), state.data.begin());
  std::vector<double> step_logits(B * P), step_values(B), all;
  const std::size_t D = d.prev_continuous.size() / (d.T1 * B);
  for (std::size_t t = 0; t < d.T1; ++t) {
    const std::size_t r = t * B;
    seedrl::agent_step_output<double> step_out{step_logits, step_values};
    net.infer({std::span<const double>(d.obs).subspan(r * n, B * n),
               std::span<const double>(d.rewards).subspan(r, B),
               std::span<const std::uint8_t>(d.dones).subspan(r, B),
               std::span<const std::int32_t>(d.prev).subspan(r, B),
               std::span<const double>(d.prev_continuous).subspan(r * D, B * D)},
              state, step_out);
    all.insert(all.end(), step_logits.begin(), step_logits.end());
    all.insert(all.end(), step_values.begin(), step_values.end());
  }
  return all;
}

/// Step-by-step inference from the unroll's start states must reproduce the unroll.
template <class Net>
void check_inference_matches_unroll(Net& net, const unroll& d) {
  const std::size_t B = d.B, P = static_cast<std::size_t>(net.policy_size());
  std::vector<double> logits(d.T1 * B * P), values(d.T1 * B);
  seedrl::agent_unroll_output<double> out{logits, values};
  net.forward_unroll(d.input(), out);
  auto state = net.initial_state(B);
  const auto steps = step_outputs(net, d, state);
  for (std::size_t t = 0; t < d.T1; ++t) {
    const double* step = steps.data() + t * B * (P + 1);
    for (std::size_t i = 0; i < B * P; ++i)
      REQUIRE(step[i] == Approx(logits[t * B * P + i]).margin(1e-12));
    for (std::size_t b = 0; b < B; ++b)
      REQUIRE(step[B * P + b] == Approx(values[t * B + b]).margin(1e-12));
  }
}

/// Logits and values of `forward_unroll` and of step-by-step `infer` (with the state after the
/// last step) over `d`: everything the agent computes from its inputs.
template <class Net>
std::vector<double> all_outputs(Net& net, const unroll& d) {
  const std::size_t B = d.B, P = static_cast<std::size_t>(net.policy_size());
  std::vector<double> logits(d.T1 * B * P), values(d.T1 * B);
  seedrl::agent_unroll_output<double> out{logits, values};
  net.forward_unroll(d.input(), out);
  std::vector<double> all = logits;
  all.insert(all.end(), values.begin(), values.end());
  auto state = net.initial_state(B);
  const auto steps = step_outputs(net, d, state);
  all.insert(all.end(), steps.begin(), steps.end());
  all.insert(all.end(), state.data.begin(), state.data.end());
  return all;
}

/// The gradients of <g_logits, logits> + <g_values, values> over the unroll `d`.
template <class Net>
std::vector<double> unroll_gradients(Net& net, const unroll& d, std::span<const double> g_logits,
                                     std::span<const double> g_values) {
  std::vector<double> logits(g_logits.size()), values(g_values.size());
  seedrl::agent_unroll_output<double> out{logits, values};
  net.forward_unroll(d.input(), out);
  net.zero_gradients();
  net.backward_unroll({g_logits, g_values});
  return std::vector<double>(net.gradients().begin(), net.gradients().end());
}

/// Direct-loop 3x3 stride-1 convolutions + ReLU of one CHW image, from the parameters at p
/// (per convolution W [O, C, 3, 3] then b [O]).
std::vector<double> small_conv_reference(const double* p, std::vector<double> x, std::ptrdiff_t c,
                                         std::ptrdiff_t h, std::ptrdiff_t w,
                                         const std::vector<std::ptrdiff_t>& channels,
                                         std::ptrdiff_t pad) {
  for (std::ptrdiff_t out_c : channels) {
    const std::ptrdiff_t oh = h + 2 * pad - 2, ow = w + 2 * pad - 2;
    const double* wt = p;
    const double* bias = p + out_c * c * 9;
    std::vector<double> y(static_cast<std::size_t>(out_c * oh * ow));
    for (std::ptrdiff_t o = 0; o < out_c; ++o)
      for (std::ptrdiff_t i = 0; i < oh; ++i)
        for (std::ptrdiff_t j = 0; j < ow; ++j) {
          double s = bias[o];
          for (std::ptrdiff_t ic = 0; ic < c; ++ic)
            for (std::ptrdiff_t ki = 0; ki < 3; ++ki)
              for (std::ptrdiff_t kj = 0; kj < 3; ++kj) {
                const std::ptrdiff_t yi = i + ki - pad, xj = j + kj - pad;
                if (yi >= 0 && yi < h && xj >= 0 && xj < w)
                  s += wt[((o * c + ic) * 3 + ki) * 3 + kj] *
                       x[static_cast<std::size_t>((ic * h + yi) * w + xj)];
              }
          y[static_cast<std::size_t>((o * oh + i) * ow + j)] = std::max(s, 0.0);
        }
    p = bias + out_c;
    x = std::move(y);
    c = out_c;
    h = oh;
    w = ow;
  }
  return x;
}

/// One dense layer of a plain-loop reference: act(W x + b) with W [n_out, x.size()] row-major at
/// `p`, then b; moves `p` past both (a part's parameters, layer after layer).
template <class Act>
std::vector<double> plain_dense(const double*& p, const std::vector<double>& x, std::size_t n_out,
                                Act act) {
  std::vector<double> y(n_out);
  for (std::size_t o = 0; o < n_out; ++o) {
    double s = p[n_out * x.size() + o];
    for (std::size_t i = 0; i < x.size(); ++i)
      s += p[o * x.size() + i] * x[i];
    y[o] = act(s);
  }
  p += n_out * (x.size() + 1);
  return y;
}

}  // namespace

TEST_CASE("small conv torso: features match direct loops, gradients central differences",
          "[parts][small_conv][gradcheck]") {
  const std::ptrdiff_t padding = GENERATE(std::ptrdiff_t{0}, std::ptrdiff_t{1});
  INFO("padding " << padding);
  SECTION("the backend stack against direct loops and central differences") {
    constexpr std::ptrdiff_t C = 3, H = 10, W = 10;
    constexpr std::size_t N = 2, in = C * H * W;
    seedrl::host_backend backend;
    small_conv_stack stack(backend, {.channels = {4, 3}, .padding = padding}, C, H, W,
                           "seedrl::test");
    const std::size_t F = padding == 0 ? 3 * 6 * 6 : 3 * 10 * 10;
    REQUIRE(stack.output_size() == F);
    REQUIRE(stack.num_parameters() == (4 * 3 * 9 + 4) + (3 * 4 * 9 + 3));
    std::vector<double> params(stack.num_parameters()), grads(params.size(), 0.0);
    seedrl::random_generator rng(5);
    stack.init(rng, params.data());
    // PyTorch's Conv2d draws: uniform in +-1/sqrt(C * 3 * 3), per convolution.
    for (std::size_t i = 0; i < params.size(); ++i) {
      const double bound = 1.0 / std::sqrt(i < 112 ? 27.0 : 36.0);
      REQUIRE(std::abs(params[i]) <= bound);
    }
    // Wider than those draws: with them, whole channels are dead on all-positive pixels.
    for (auto& v : params)
      v = rng.uniform(-0.5, 0.5);
    // Scaled pixels, as the pixel torso feeds the stack.
    std::vector<double> x(N * in);
    for (auto& v : x)
      v = static_cast<double>(rng.below(256)) / 255.0;
    stack.reserve(N);
    const double* y = stack.forward(params.data(), x.data(), N);
    const std::vector<double> features(y, y + N * F);
    // ReLU on both sides of zero, so the reference's max is exercised and the check is not
    // vacuous.
    CHECK(zeros(features) > 0);
    CHECK(zeros(features) < N * F * 3 / 4);
    for (std::size_t n = 0; n < N; ++n) {
      const auto want = small_conv_reference(
          params.data(),
          std::vector<double>(x.begin() + static_cast<std::ptrdiff_t>(n * in),
                              x.begin() + static_cast<std::ptrdiff_t>((n + 1) * in)),
          C, H, W, {4, 3}, padding);
      REQUIRE(want.size() == F);
      for (std::size_t i = 0; i < F; ++i)
        REQUIRE(features[n * F + i] == Approx(want[i]).margin(1e-12));
    }
    // Inference, on an instance of its own, writes the same features.
    small_conv_stack inference(backend, {.channels = {4, 3}, .padding = padding}, C, H, W,
                               "seedrl::test");
    inference.reserve_inference(N);
    const double* yi = inference.infer(params.data(), x.data(), N);
    CHECK(std::equal(features.begin(), features.end(), yi));
    // The stack's backward against central differences of <g, features>.
    const auto g = random_vector(N * F, rng);
    const auto loss = [&] {
      const double* out = stack.forward(params.data(), x.data(), N);
      return dot(std::span<const double>(out, N * F), g);
    };
    loss();
    stack.backward(params.data(), grads.data(), g.data(), N);
    INFO("zero gradients: " << zeros(grads) << " of " << grads.size());
    CHECK(zeros(grads) < grads.size() / 4);
    require_close(gradcheck(params, grads, loss));
  }
  SECTION("a small conv agent, both pixel layouts") {
    for (const bool channels_last : {false, true}) {
      INFO("channels_last " << channels_last);
      seedrl::small_conv_lstm_agent_config c;
      c.height = c.width = 8;
      c.channels = 3;
      c.channels_last = channels_last;
      c.num_actions = 4;
      c.torso.channels = {4, 3};
      c.torso.padding = padding;
      c.dense_size = 5;
      c.lstm_size = 3;
      c.seed = 3;
      seedrl::small_conv_lstm_agent<double> net(c);
      const std::size_t conv_parameters = (4 * 3 * 9 + 4) + (3 * 4 * 9 + 3),
                        F = padding == 0 ? 3 * 4 * 4 : 3 * 8 * 8;
      REQUIRE(net.body().lstm_offset() == conv_parameters + 5 * F + 5);
      // The dense layer's ReLU follows noise-image features: positive biases keep all five
      // units live, so that none of its weights goes untested.
      seedrl::random_generator rng(6);
      for (std::size_t i = 0; i < 5; ++i)
        net.parameters()[conv_parameters + 5 * F + i] = rng.uniform(0.2, 0.6);
      const auto d = make_unroll(net, 4, 2, true, rng);
      check_gradients(net, d, rng);
      // Each output channel of the first convolution gets gradient: no dead path hides one.
      for (std::size_t o = 0; o < 4; ++o) {
        INFO("first convolution, output channel " << o);
        const auto kernel = net.gradients().subspan(o * 27, 27);
        CHECK(std::any_of(kernel.begin(), kernel.end(), [](double v) { return v != 0.0; }));
      }
      check_inference_matches_unroll(net, d);
      if (!channels_last)
        continue;
      // The same agent reading C x H x W pixels computes, from the transposed images, what
      // this one computes from H x W x C ones (the layout is not part of the parameters).
      auto chw_config = c;
      chw_config.channels_last = false;
      seedrl::small_conv_lstm_agent<double> chw_net(chw_config);
      REQUIRE(std::equal(chw_net.parameters().begin(), chw_net.parameters().end(),
                         seedrl::small_conv_lstm_agent<double>(c).parameters().begin()));
      std::copy(net.parameters().begin(), net.parameters().end(), chw_net.parameters().begin());
      auto transposed = d;
      const std::size_t plane = 8 * 8;
      for (std::size_t r = 0; r < d.T1 * d.B; ++r)
        for (std::size_t p = 0; p < plane; ++p)
          for (std::size_t ch = 0; ch < 3; ++ch)
            transposed.obs[r * 3 * plane + ch * plane + p] = d.obs[r * 3 * plane + p * 3 + ch];
      CHECK(transposed.obs != d.obs);
      const auto want = all_outputs(net, d), got = all_outputs(chw_net, transposed);
      REQUIRE(got.size() == want.size());
      for (std::size_t i = 0; i < want.size(); ++i)
        REQUIRE(got[i] == Approx(want[i]).margin(1e-12));
      CHECK(all_outputs(chw_net, d) != want);  // the layout matters: the check can fail
    }
  }
}

TEST_CASE("small conv torso accepts any channel count and refuses images too small",
          "[parts][small_conv]") {
  seedrl::small_conv_lstm_agent_config c;
  c.height = c.width = 10;
  c.num_actions = 3;
  c.torso.channels = {16, 32};
  c.dense_size = 8;
  c.lstm_size = 4;
  seedrl::host_backend backend;
  for (const std::ptrdiff_t C : {1, 7}) {
    INFO(C << " channels");
    c.channels = C;
    const seedrl::small_conv_lstm_agent<float> net(c);
    CHECK(net.observation_size() == C * 100);
    const small_conv_stack stack(backend, c.torso, static_cast<std::size_t>(C), 10, 10, "test");
    CHECK(stack.output_size() == 32 * 6 * 6);
    // Convolutions, the dense layer on their 32 x 6 x 6 features, the LSTM on
    // [dense | reward | one-hot], the heads.
    CHECK(net.parameters().size() ==
          static_cast<std::size_t>((16 * C * 9 + 16) + (32 * 16 * 9 + 32) + (8 * 32 * 36 + 8) +
                                   (16 * (8 + 1 + 3 + 4) + 16) + (3 * 4 + 3) + (4 + 1)));
  }
  c.channels = 1;
  c.height = c.width = 3;
  c.torso.channels = {8, 8};
  CHECK_THROWS_MATCHES(seedrl::small_conv_lstm_agent<float>(c), std::invalid_argument,
                       Catch::Message("seedrl::small_conv_lstm_agent: a 3x3 image is too small "
                                      "for 2 3x3 convolutions with padding 0"));
  c.torso.padding = 1;
  CHECK_NOTHROW(seedrl::small_conv_lstm_agent<float>(c));
  c.torso.padding = 0;
  c.height = 5;  // 5x3 shrinks to 3x1 after the first convolution
  CHECK_THROWS_AS(seedrl::small_conv_lstm_agent<float>(c), std::invalid_argument);
  c.width = 5;
  CHECK_NOTHROW(seedrl::small_conv_lstm_agent<float>(c));
}

TEST_CASE("conv agents: copies that share nothing, clear refusals", "[parts][small_conv]") {
  seedrl::small_conv_lstm_agent_config c;
  c.height = 6;
  c.width = 5;
  c.channels = 2;
  c.num_actions = 3;
  c.torso.channels = {3, 2};
  c.torso.padding = 1;
  c.dense_size = 5;
  c.lstm_size = 4;
  c.seed = 12;
  seedrl::small_conv_lstm_agent<double> net(c);
  spread_parameters(net, 13);
  seedrl::random_generator rng(14);
  const auto d = make_unroll(net, 3, 2, true, rng), other = make_unroll(net, 3, 2, true, rng);
  const std::size_t N = 6;
  const auto g_logits = random_vector(N * 3, rng), g_values = random_vector(N, rng);
  const auto want = all_outputs(net, d);
  const auto want_grads = unroll_gradients(net, d, g_logits, g_values);
  REQUIRE(zeros(want_grads) < want_grads.size() / 2);

  seedrl::small_conv_lstm_agent<double> copy(net);
  CHECK(copy.parameters().data() != net.parameters().data());
  CHECK(std::equal(copy.parameters().begin(), copy.parameters().end(), net.parameters().begin(),
                   net.parameters().end()));
  CHECK(zeros(copy.gradients()) == copy.gradients().size());  // its own, zero
  CHECK(all_outputs(copy, d) == want);
  // Neither the copy's unroll nor the original's own inference disturbs what the original's
  // forward_unroll kept for its backward.
  {
    std::vector<double> logits(N * 3), values(N), other_logits(N * 3), other_values(N);
    seedrl::agent_unroll_output<double> out{logits, values}, other_out{other_logits, other_values};
    net.forward_unroll(d.input(), out);
    copy.forward_unroll(other.input(), other_out);
    all_outputs(copy, other);
    auto state = net.initial_state(2);
    std::vector<double> step_logits(2 * 3), step_values(2);
    seedrl::agent_step_output<double> step_out{step_logits, step_values};
    const auto n = static_cast<std::size_t>(net.observation_size());
    net.infer({std::span<const double>(other.obs).first(2 * n),
               std::span<const double>(other.rewards).first(2),
               std::span<const std::uint8_t>(other.dones).first(2),
               std::span<const std::int32_t>(other.prev).first(2)},
              state, step_out);
    net.zero_gradients();
    net.backward_unroll({g_logits, g_values});
    CHECK(std::equal(want_grads.begin(), want_grads.end(), net.gradients().begin()));
  }
  // Changing the original's parameters leaves the copy as it was.
  for (auto& p : net.parameters())
    p += 0.25;
  CHECK(all_outputs(net, d) != want);
  CHECK(all_outputs(copy, d) == want);
  CHECK(unroll_gradients(copy, d, g_logits, g_values) == want_grads);

  // Refusals, saying why.
  seedrl::small_conv_lstm_agent<double> fresh(c);
  CHECK_THROWS_WITH(fresh.backward_unroll({g_logits, g_values}),
                    Catch::Contains("call forward_unroll first"));
  CHECK_THROWS_AS(fresh.backward_unroll({g_logits, g_values}), std::logic_error);
  {
    std::vector<double> logits(N * 3), values(N);
    seedrl::agent_unroll_output<double> out{logits, values};
    auto short_obs = d;
    short_obs.obs.pop_back();
    CHECK_THROWS_WITH(fresh.forward_unroll(short_obs.input(), out),
                      Catch::Contains("observations has 359 elements, expected 360"));
    fresh.forward_unroll(d.input(), out);
    CHECK_THROWS_AS(
        fresh.backward_unroll({std::span<const double>(g_logits).first(N * 3 - 1), g_values}),
        std::invalid_argument);
  }
  auto bad = c;
  bad.channels = 0;
  CHECK_THROWS_WITH(
      seedrl::small_conv_lstm_agent<float>(bad),
      Catch::Contains("seedrl::small_conv_lstm_agent") && Catch::Contains("positive"));
  bad = c;
  bad.torso.channels = {3, 0};
  CHECK_THROWS_WITH(seedrl::small_conv_lstm_agent<float>(bad),
                    Catch::Contains("convolution channels must be positive"));
  bad = c;
  bad.torso.padding = -1;
  CHECK_THROWS_WITH(seedrl::small_conv_lstm_agent<float>(bad), Catch::Contains("padding >= 0"));
  bad = c;
  bad.torso.channels = {};
  CHECK_THROWS_AS(seedrl::small_conv_lstm_agent<float>(bad), std::invalid_argument);
  seedrl::nature_cnn_lstm_agent_config nature;
  nature.height = 35;
  CHECK_THROWS_WITH(seedrl::nature_cnn_lstm_agent<float>(nature),
                    Catch::Contains("seedrl::nature_cnn_lstm_agent") && Catch::Contains("36x36"));
  seedrl::impala_resnet_lstm_agent_config impala;
  impala.torso.channels = {};
  CHECK_THROWS_WITH(
      seedrl::impala_resnet_lstm_agent<float>(impala),
      Catch::Contains("seedrl::impala_resnet_lstm_agent") && Catch::Contains("at least one stack"));
}

TEST_CASE("a user's own torso composes, infers and its gradients match central differences",
          "[parts][gradcheck]") {
  const seedrl_test::softsign_config part{4, 5};
  user_agent net({.name = "user_agent", .seed = 9}, user_core(3, 4), part);
  CHECK(net.state_size() == 2 * 4);
  CHECK(net.observation_size() == 4);
  // The torso's W [5, 4] and b; the LSTM's W [16, 5 + 1 + 3 + 4] and b [16]; the heads.
  CHECK(net.parameters().size() == 5 * 5 + 4 * 4 * (5 + 1 + 3 + 4 + 1) + 3 * (4 + 1) + (4 + 1));
  CHECK(net.body().lstm_offset() == 25);
  seedrl::random_generator rng(10);
  const auto d = make_unroll(net, 5, 3, false, rng);
  check_gradients(net, d, rng);
  check_inference_matches_unroll(net, d);
  // A copy has its own buffers and computes the same.
  user_agent copy(net);
  CHECK(copy.parameters().data() != net.parameters().data());
  CHECK(all_outputs(copy, d) == all_outputs(net, d));
  // A torso_init draws the torso's parameters first, from the generator the body then draws
  // from: one that draws as the part's own init gives the same agent; one that draws nothing
  // leaves the body its draws from the start of the stream.
  const user_agent fresh({.seed = 9}, user_core(3, 4), part);
  const user_agent::torso_init as_part = [](const user_torso& t, seedrl::random_generator& r,
                                            double* p) { t.init(r, p); };
  const user_agent drawn({.seed = 9}, as_part, user_core(3, 4), part);
  CHECK(std::equal(drawn.parameters().begin(), drawn.parameters().end(), fresh.parameters().begin(),
                   fresh.parameters().end()));
  const user_agent::torso_init constant = [](const user_torso& t, seedrl::random_generator&,
                                             double* p) {
    std::fill_n(p, t.num_parameters(), 0.25);
  };
  const user_agent fixed({.seed = 9}, constant, user_core(3, 4), part);
  const auto fp = fixed.parameters();
  CHECK(std::all_of(fp.begin(), fp.begin() + 25, [](double v) { return v == 0.25; }));
  CHECK_FALSE(std::equal(fp.begin() + 25, fp.end(), fresh.parameters().begin() + 25));
}

TEST_CASE("a tanh MLP with no core matches a plain-loop forward and central differences",
          "[parts][gradcheck]") {
  seedrl::mlp_lstm_agent_config c;
  c.observation_size = 3;
  c.num_actions = 2;
  c.hidden_sizes = {5, 4};
  c.lstm_size = 0;
  c.reward_and_action_inputs = false;
  tanh_mlp_agent net({.seed = 11}, seedrl::mlp_torso_init<double, seedrl::tanh_activation>(), c);
  CHECK(net.state_size() == 0);
  // Layout: W1 [5,3] b1, W2 [4,5] b2, policy W [2,4] b, value W [1,4] b.
  REQUIRE(net.parameters().size() == (15 + 5) + (20 + 4) + (8 + 2) + (4 + 1));
  spread_parameters(net, 12);
  seedrl::random_generator rng(13);
  const auto d = make_unroll(net, 3, 2, false, rng);
  std::vector<double> logits(6 * 2), values(6);
  seedrl::agent_unroll_output<double> out{logits, values};
  net.forward_unroll(d.input(), out);
  const double* p = net.parameters().data();
  const auto dense = [&p](const std::vector<double>& x, std::size_t n_out, bool squash) {
    return plain_dense(p, x, n_out, [squash](double v) { return squash ? std::tanh(v) : v; });
  };
  for (std::size_t r = 0; r < 6; ++r) {
    p = net.parameters().data();
    const std::vector<double> x(d.obs.begin() + static_cast<std::ptrdiff_t>(3 * r),
                                d.obs.begin() + static_cast<std::ptrdiff_t>(3 * r + 3));
    const auto h = dense(dense(x, 5, true), 4, true);
    const auto l = dense(h, 2, false);
    const auto v = dense(h, 1, false);
    CHECK(logits[2 * r] == Approx(l[0]).margin(1e-12));
    CHECK(logits[2 * r + 1] == Approx(l[1]).margin(1e-12));
    CHECK(values[r] == Approx(v[0]).margin(1e-12));
  }
  check_gradients(net, d, rng);
  check_inference_matches_unroll(net, d);
}

TEST_CASE(
    "separate policy and value networks: two towers sharing nothing, each head on its own, "
    "against a plain-loop forward and central differences",
    "[parts][gradcheck][separate]") {
  // mlp_lstm_agent with separate_value_network: a two-tower ReLU MLP (the value's first), no
  // core, the value head on the first tower, a Gaussian head with one log-std vector on the
  // second tower's features followed by the reward and the previous action.
  seedrl::mlp_lstm_agent_config c;
  c.observation_size = 3;
  c.continuous_action_size = 2;
  c.num_actions = 4;
  c.hidden_sizes = {8, 6};
  c.lstm_size = 0;
  c.log_std_init = -0.5;
  c.separate_value_network = true;
  c.seed = 21;
  REQUIRE(c.reward_and_action_inputs);
  seedrl::mlp_lstm_agent<double> net(c);
  // Two towers of (3*8+8) + (8*6+6); the means' layer [2, 6+1+2] + 2; two log-stds; the value
  // layer [1, 6] + 1.
  constexpr std::size_t tower = 86;
  REQUIRE(net.parameters().size() == 2 * tower + 20 + 2 + 7);
  REQUIRE(net.body().policy_offset() == 2 * tower);
  REQUIRE(net.body().value_offset() == 2 * tower + 22);
  REQUIRE(net.body().value_inputs() == 6);
  spread_parameters(net, 22);
  seedrl::random_generator rng(23);
  // Positive hidden biases, so that every ReLU unit is live on some row (tiny towers with
  // biases in +-0.5 leave a third of the weights without gradient).
  for (std::size_t t = 0; t < 2; ++t) {
    const auto tower_params = net.parameters().subspan(t * tower);
    for (std::size_t i = 24; i < 32; ++i)
      tower_params[i] = rng.uniform(0.2, 0.6);
    for (std::size_t i = 80; i < 86; ++i)
      tower_params[i] = rng.uniform(0.2, 0.6);
  }
  constexpr std::size_t N = 12;
  auto d = make_unroll(net, 4, 3, false, rng);
  d.prev_continuous = random_vector(N * 2, rng, 1.0);
  std::vector<double> outputs(N * 4), values(N);
  seedrl::agent_unroll_output<double> out{outputs, values};
  net.forward_unroll(d.input(), out);
  const double* p = nullptr;
  const auto dense = [&p](const std::vector<double>& x, std::size_t n_out, bool relu) {
    return plain_dense(p, x, n_out, [relu](double v) { return relu ? std::max(v, 0.0) : v; });
  };
  for (std::size_t r = 0; r < N; ++r) {
    p = net.parameters().data();
    const std::vector<double> x(d.obs.begin() + static_cast<std::ptrdiff_t>(3 * r),
                                d.obs.begin() + static_cast<std::ptrdiff_t>(3 * r + 3));
    const auto value_features = dense(dense(x, 8, true), 6, true);
    auto policy_input = dense(dense(x, 8, true), 6, true);
    // Episode starts feed reward 0 and no previous action.
    const bool start = d.dones[r] != 0;
    policy_input.push_back(start ? 0.0 : d.rewards[r]);
    for (std::size_t i = 0; i < 2; ++i)
      policy_input.push_back(start ? 0.0 : d.prev_continuous[2 * r + i]);
    const auto means = dense(policy_input, 2, false);
    const double* log_std = p;
    p += 2;
    const auto v = dense(value_features, 1, false);
    for (std::size_t i = 0; i < 2; ++i) {
      CHECK(outputs[4 * r + i] == Approx(means[i]).margin(1e-12));
      CHECK(outputs[4 * r + 2 + i] == log_std[i]);
    }
    CHECK(values[r] == Approx(v[0]).margin(1e-12));
  }
  check_gradients(net, d, rng);
  check_inference_matches_unroll(net, d);
  // Nothing is shared: the value's gradient reaches only the value tower and head, the
  // policy's only the policy tower and head.
  const std::size_t n = net.parameters().size();
  const auto gradients_of = [&](double logit_grad, double value_grad) {
    const std::vector<double> g_logits(N * 4, logit_grad), g_values(N, value_grad);
    return unroll_gradients(net, d, g_logits, g_values);
  };
  const auto nonzero = [](const std::vector<double>& g, std::size_t from, std::size_t to) {
    return std::any_of(g.begin() + static_cast<std::ptrdiff_t>(from),
                       g.begin() + static_cast<std::ptrdiff_t>(to),
                       [](double x) { return x != 0.0; });
  };
  const auto value_only = gradients_of(0.0, 1.0);
  CHECK(nonzero(value_only, 0, tower));
  CHECK_FALSE(nonzero(value_only, tower, n - 7));
  CHECK(nonzero(value_only, n - 7, n));
  const auto policy_only = gradients_of(1.0, 0.0);
  CHECK_FALSE(nonzero(policy_only, 0, tower));
  CHECK(nonzero(policy_only, tower, n - 7));
  CHECK_FALSE(nonzero(policy_only, n - 7, n));
  // A description round trip keeps the layout; an LSTM with it is refused.
  const std::string text = seedrl::describe(c);
  CHECK(text.ends_with(" value_network=separate"));
  CHECK(seedrl::parse_mlp_lstm_agent_description(text).separate_value_network);
  CHECK_FALSE(
      seedrl::parse_mlp_lstm_agent_description(seedrl::describe({})).separate_value_network);
  auto with_lstm = c;
  with_lstm.lstm_size = 4;
  CHECK_THROWS_AS(seedrl::mlp_lstm_agent<double>(with_lstm), std::invalid_argument);
}

namespace {

/// The episode-start convention (docs/architecture.md): at a row whose `done` is set the core
/// reads reward 0 and an all-zero previous-action one-hot, so the finished episode's last reward
/// and action cannot leak into the new one. Inputs that differ only there give identical outputs,
/// in the unroll and in inference alike; the same change at a row without `done` does not.
template <class Net>
void check_episode_start_inputs(Net& net, unroll d) {
  const auto A = net.num_actions();
  d.dones[0] = 1;  // a start at t = 0 too, where the state is also reset
  std::size_t starts = 0;
  for (std::uint8_t x : d.dones)
    starts += x;
  REQUIRE(starts >= 2);
  // Rewards inside the clip, so that clipping cannot make the two inputs agree.
  unroll other = d;
  for (std::size_t r = 0; r < d.dones.size(); ++r) {
    if (d.dones[r] == 0)
      continue;
    d.rewards[r] = 0.75;
    other.rewards[r] = -0.5;
    other.prev[r] = (d.prev[r] + 1) % A;
  }
  const auto want = all_outputs(net, d);
  const auto got = all_outputs(net, other);
  REQUIRE(got.size() == want.size());
  std::size_t differ = 0;  // the same core input, so the same outputs bit for bit
  for (std::size_t i = 0; i < want.size(); ++i)
    differ += got[i] != want[i] ? 1 : 0;
  CHECK(differ == 0);
  // The columns are live elsewhere: the same change at a row without `done` is seen.
  std::size_t live = 0;
  while (d.dones[live] != 0)
    ++live;
  unroll changed = d;
  changed.rewards[live] = d.rewards[live] > 0.0 ? -0.5 : 0.5;
  changed.prev[live] = (d.prev[live] + 1) % A;
  CHECK(all_outputs(net, changed) != want);
}

}  // namespace

TEST_CASE(
    "a Gaussian head writes rows of means then log-stds and its gradients match central "
    "differences, with continuous previous actions as core inputs",
    "[parts][gaussian][gradcheck]") {
  const bool dependent = GENERATE(false, true);
  const std::ptrdiff_t H = GENERATE(std::ptrdiff_t{0}, std::ptrdiff_t{4});
  INFO("state-dependent log-std " << dependent << ", LSTM " << H);
  constexpr std::size_t D = 2, T1 = 4, B = 2, N = T1 * B;
  seedrl::mlp_lstm_agent_config c;
  c.observation_size = 3;
  c.continuous_action_size = D;
  c.num_actions = 2 * D;
  c.hidden_sizes = {6};
  c.lstm_size = H;
  c.seed = 5;
  if (!dependent)
    c.log_std_init = -0.5;
  seedrl::mlp_lstm_agent<double> net(c);
  REQUIRE(net.policy_size() == 2 * D);
  REQUIRE(net.num_actions() == 2 * D);
  const auto& policy = net.body().policy();
  REQUIRE(policy.layer_outputs() == (dependent ? 2 * D : D));
  REQUIRE(policy.independent_log_std() == (dependent ? 0 : D));
  seedrl::random_generator rng(7);
  auto d = make_unroll(net, T1, B, false, rng);
  d.prev_continuous = random_vector(N * D, rng, 2.0);
  std::vector<double> outputs(N * 2 * D), values(N);
  seedrl::agent_unroll_output<double> out{outputs, values};
  net.forward_unroll(d.input(), out);
  if (!dependent) {
    // The log-std vector ends the policy head's parameters (the value head's follow),
    // initialised as asked, and is in every row.
    const auto p = net.parameters();
    const std::size_t end = net.body().value_offset();
    REQUIRE(end - D == net.body().policy_offset() + policy.layer_parameters());
    for (std::size_t i = 0; i < D; ++i) {
      CHECK(p[end - D + i] == -0.5);
      for (std::size_t r = 0; r < N; ++r)
        CHECK(outputs[r * 2 * D + D + i] == -0.5);
    }
  }
  spread_parameters(net, 6);
  if (H == 0) {
    // Without a core the heads read [ReLU features | reward | previous action]: a plain loop
    // from the layout (torso W b, policy W b [log-stds], value W b).
    net.forward_unroll(d.input(), out);
    for (std::size_t r = 0; r < N; ++r) {
      const double* p = net.parameters().data();
      const std::vector<double> x(d.obs.begin() + static_cast<std::ptrdiff_t>(3 * r),
                                  d.obs.begin() + static_cast<std::ptrdiff_t>(3 * r + 3));
      auto core = plain_dense(p, x, 6, [](double v) { return std::max(v, 0.0); });
      const bool start = d.dones[r] != 0;
      core.push_back(start ? 0.0 : d.rewards[r]);
      for (std::size_t i = 0; i < D; ++i)
        core.push_back(start ? 0.0 : d.prev_continuous[r * D + i]);
      const auto identity = [](double v) { return v; };
      auto row = plain_dense(p, core, dependent ? 2 * D : D, identity);
      for (std::size_t i = 0; !dependent && i < D; ++i)
        row.push_back(*p++);
      const auto v = plain_dense(p, core, 1, identity);
      REQUIRE(p == net.parameters().data() + net.parameters().size());
      for (std::size_t i = 0; i < 2 * D; ++i)
        CHECK(outputs[r * 2 * D + i] == Approx(row[i]).margin(1e-12));
      CHECK(values[r] == Approx(v[0]).margin(1e-12));
    }
  }
  check_gradients(net, d, rng);
  check_inference_matches_unroll(net, d);
  // The previous action's values reach the outputs (they are core inputs, not a one-hot).
  auto moved = d;
  for (std::size_t i = 0; i < moved.prev_continuous.size(); ++i)
    moved.prev_continuous[i] += 0.5;
  std::vector<double> moved_outputs(outputs.size());
  seedrl::agent_unroll_output<double> moved_out{moved_outputs, values};
  net.forward_unroll(d.input(), out);
  net.forward_unroll(moved.input(), moved_out);
  CHECK(moved_outputs != outputs);
}

TEST_CASE("episode starts feed the core reward 0 and no previous action", "[parts]") {
  seedrl::random_generator rng(21);
  SECTION("a user's torso with an LSTM core") {
    user_agent net({.seed = 9}, user_core(3, 4), seedrl_test::softsign_config{4, 5});
    spread_parameters(net, 22);
    check_episode_start_inputs(net, make_unroll(net, 5, 3, false, rng));
  }
  SECTION("a conv torso, clipped input reward, an LSTM core") {
    seedrl::small_conv_lstm_agent_config c;
    c.height = c.width = 6;
    c.channels = 2;
    c.num_actions = 4;
    c.torso.channels = {3};
    c.dense_size = 5;
    c.lstm_size = 3;
    c.seed = 3;
    REQUIRE(c.max_abs_input_reward == 1.0);
    seedrl::small_conv_lstm_agent<double> net(c);
    spread_parameters(net, 23);
    check_episode_start_inputs(net, make_unroll(net, 4, 2, true, rng));
  }
  SECTION("an MLP torso, clipped input reward, no core") {
    seedrl::mlp_lstm_agent_config c;
    c.observation_size = 3;
    c.num_actions = 4;
    c.hidden_sizes = {5};
    c.lstm_size = 0;
    c.max_abs_input_reward = 1.0;
    c.seed = 24;
    seedrl::mlp_lstm_agent<double> net(c);
    spread_parameters(net, 25);
    check_episode_start_inputs(net, make_unroll(net, 5, 3, false, rng));
  }
}

TEST_CASE("configurations that cannot work are refused at construction, saying why",
          "[parts][errors]") {
  const seedrl_test::softsign_config part{4, 5};
  const auto refused = [&](seedrl::backend_core_config core) {
    return user_agent({.name = "my_agent"}, core, part);
  };
  // The core and heads (backend_core_config), named by agent_options::name.
  auto core = user_core(3, 0);
  CHECK_NOTHROW(refused(core));
  core.num_actions = 0;
  CHECK_THROWS_WITH(refused(core),
                    Catch::Contains("seedrl::my_agent: num_actions must be positive"));
  core = user_core(3, 0);
  core.continuous_action_size = 2;
  CHECK_THROWS_MATCHES(refused(core), std::invalid_argument,
                       Catch::Message("seedrl::my_agent: continuous actions of 2 elements need 2 "
                                      "* 2 policy outputs (means, then log-stds), not 3"));
  core = user_core(3, 0);
  core.independent_log_std = true;
  CHECK_THROWS_WITH(refused(core),
                    Catch::Contains("seedrl::my_agent: a state-independent log-std needs "
                                    "continuous actions"));
  core = user_core(3, 4);
  core.value_features = 2;
  CHECK_THROWS_WITH(refused(core), Catch::Contains("seedrl::my_agent: separate policy and value "
                                                   "networks (value_features 2) need no LSTM"));
  core = user_core(3, 0);
  core.value_features = 5 + 1 + 3;  // all the core outputs: none left for the policy
  CHECK_THROWS_AS(refused(core), std::invalid_argument);
  core.value_features = 5;
  CHECK_NOTHROW(refused(core));
  core = user_core(3, -1);
  CHECK_THROWS_AS(refused(core), std::invalid_argument);

  // mlp_lstm_agent's configuration.
  seedrl::mlp_lstm_agent_config c;
  c.observation_size = 3;
  c.hidden_sizes = {4};
  c.lstm_size = 2;
  CHECK_NOTHROW(seedrl::mlp_lstm_agent<float>(c));
  const auto refuses = [](const seedrl::mlp_lstm_agent_config& bad, const char* why) {
    INFO(why);
    CHECK_THROWS_WITH(seedrl::mlp_lstm_agent<float>(bad),
                      Catch::StartsWith("seedrl::mlp_lstm_agent: "));
    CHECK_THROWS_AS(seedrl::mlp_lstm_agent<float>(bad), std::invalid_argument);
  };
  auto bad = c;
  bad.num_actions = 0;
  refuses(bad, "no actions");
  bad = c;
  bad.observation_size = 0;
  refuses(bad, "no observation");
  bad = c;
  bad.hidden_sizes = {};
  refuses(bad, "no hidden layer");
  bad = c;
  bad.hidden_sizes = {4, 0};
  refuses(bad, "an empty hidden layer");
  bad = c;
  bad.lstm_layers = 0;
  refuses(bad, "no LSTM layers");
  bad = c;
  bad.log_std_init = 0.0;
  refuses(bad, "a log-std vector for discrete actions");
  bad = c;
  bad.continuous_action_size = 2;
  bad.num_actions = 4;
  bad.log_std_init = std::numeric_limits<double>::quiet_NaN();
  refuses(bad, "a log-std vector starting at NaN");
  bad.log_std_init = -1.0;
  CHECK_NOTHROW(seedrl::mlp_lstm_agent<float>(bad));
  bad.num_actions = 3;
  refuses(bad, "2 continuous elements but 3 outputs");
  CHECK_THROWS_WITH(seedrl::mlp_lstm_agent<float>(bad),
                    Catch::Contains("need 2 * 2 policy outputs (means, then log-stds), not 3"));
  bad = c;
  bad.separate_value_network = true;
  refuses(bad, "separate networks with an LSTM");
  bad.lstm_size = 0;
  CHECK_NOTHROW(seedrl::mlp_lstm_agent<float>(bad));

  // Inputs the core cannot read.
  seedrl::mlp_lstm_agent<float> net(c);
  auto state = net.initial_state(1);
  std::vector<float> obs(3), rewards(1), logits(2), values(1);
  std::vector<std::uint8_t> dones(1);
  std::vector<std::int32_t> prev{2};
  seedrl::agent_step_output<float> o{logits, values};
  CHECK_THROWS_MATCHES(net.infer({obs, rewards, dones, prev}, state, o), std::out_of_range,
                       Catch::Message("seedrl::mlp_lstm_agent: previous action 2 is outside "
                                      "[0, 2)"));
  prev[0] = 1;
  CHECK_NOTHROW(net.infer({obs, rewards, dones, prev}, state, o));
  auto wide = net.initial_state(2);
  CHECK_THROWS_WITH(net.infer({obs, rewards, dones, prev}, wide, o),
                    Catch::Contains("state is [2, 4], expected [1, 4]"));
  auto continuous = c;
  continuous.continuous_action_size = 1;
  continuous.num_actions = 2;
  seedrl::mlp_lstm_agent<float> gaussian(continuous);
  CHECK_THROWS_WITH(gaussian.infer({obs, rewards, dones, {}}, state, o),
                    Catch::Contains("prev_continuous_actions has 0 elements, expected 1"));
}

// ---------------------------------------------------------------------------------------------
// Orthogonal initialisation (seedrl/net/init_scheme.hpp).

namespace {

/// The reference: Gram-Schmidt (twice, for float64 accuracy) on the columns of the same
/// Gaussian draws orthogonal_fill takes, [n, m] row-major with n >= m. With R's diagonal made
/// positive, QR is unique, so this is the Q orthogonal_fill must give.
std::vector<double> gram_schmidt_q(std::uint64_t seed, std::ptrdiff_t n, std::ptrdiff_t m) {
  seedrl::random_generator rng(seed);
  std::vector<double> a(static_cast<std::size_t>(n * m));
  for (double& x : a)
    x = rng.normal();
  const auto at = [&](std::ptrdiff_t i, std::ptrdiff_t j) -> double& {
    return a[static_cast<std::size_t>(i * m + j)];
  };
  for (std::ptrdiff_t j = 0; j < m; ++j) {
    for (int pass = 0; pass < 2; ++pass)
      for (std::ptrdiff_t k = 0; k < j; ++k) {
        double d = 0.0;
        for (std::ptrdiff_t i = 0; i < n; ++i)
          d += at(i, k) * at(i, j);
        for (std::ptrdiff_t i = 0; i < n; ++i)
          at(i, j) -= d * at(i, k);
      }
    double norm = 0.0;
    for (std::ptrdiff_t i = 0; i < n; ++i)
      norm += at(i, j) * at(i, j);
    norm = std::sqrt(norm);
    for (std::ptrdiff_t i = 0; i < n; ++i)
      at(i, j) /= norm;
  }
  return a;
}

/// max |G - gain^2 I| where G = W^T W (tall or square) or W W^T (wide), W [rows, cols].
template <class S>
double gram_error(std::span<const S> w, std::ptrdiff_t rows, std::ptrdiff_t cols, double gain) {
  const bool wide = rows < cols;
  const std::ptrdiff_t m = wide ? rows : cols, n = wide ? cols : rows;
  const auto el = [&](std::ptrdiff_t vec, std::ptrdiff_t k) {  // element k of vector vec
    return static_cast<double>(wide ? w[static_cast<std::size_t>(vec * cols + k)]
                                    : w[static_cast<std::size_t>(k * cols + vec)]);
  };
  double worst = 0.0;
  for (std::ptrdiff_t p = 0; p < m; ++p)
    for (std::ptrdiff_t q = 0; q < m; ++q) {
      double g = 0.0;
      for (std::ptrdiff_t k = 0; k < n; ++k)
        g += el(p, k) * el(q, k);
      worst = std::max(worst, std::abs(g - (p == q ? gain * gain : 0.0)));
    }
  return worst;
}

}  // namespace

TEST_CASE("orthogonal_fill: gain x the Q of a Gaussian matrix, against Gram-Schmidt",
          "[parts][init]") {
  struct shape {
    std::ptrdiff_t rows, cols;
  };
  for (const shape s : {shape{64, 8}, shape{16, 16}, shape{2, 64}, shape{1, 5}, shape{7, 1}}) {
    INFO(s.rows << " x " << s.cols);
    const double gain = 1.7;
    std::vector<double> w(static_cast<std::size_t>(s.rows * s.cols));
    seedrl::random_generator rng(99);
    seedrl::orthogonal_fill(rng, std::span<double>(w), s.rows, s.cols, gain);
    CHECK(gram_error(std::span<const double>(w), s.rows, s.cols, gain) < 1e-12);
    const bool wide = s.rows < s.cols;
    const auto q = gram_schmidt_q(99, wide ? s.cols : s.rows, wide ? s.rows : s.cols);
    double worst = 0.0;
    for (std::ptrdiff_t i = 0; i < s.rows; ++i)
      for (std::ptrdiff_t j = 0; j < s.cols; ++j) {
        const double want = gain * (wide ? q[static_cast<std::size_t>(j * s.rows + i)]
                                         : q[static_cast<std::size_t>(i * s.cols + j)]);
        worst = std::max(worst, std::abs(w[static_cast<std::size_t>(i * s.cols + j)] - want));
      }
    CHECK(worst < 1e-12);
  }
  // Not degenerate: uniform over orthogonal matrices, so an element is as often positive as
  // negative (a QR without the sign correction makes W(0, 0) always negative with Eigen's
  // Householder convention) and its mean square is 1/n; two seeds give different matrices.
  seedrl::random_generator rng(5);
  double sum00 = 0.0, sum_sq = 0.0;
  int positive00 = 0;
  constexpr int draws = 2000;
  std::vector<float> w(4 * 3), first(4 * 3);
  for (int k = 0; k < draws; ++k) {
    seedrl::orthogonal_fill(rng, std::span<float>(w), 4, 3, 1.0);
    if (k == 0)
      first = w;
    sum00 += w[0];
    positive00 += w[0] > 0.0f ? 1 : 0;
    sum_sq += static_cast<double>(w[5]) * w[5];
    CHECK(gram_error(std::span<const float>(w), 4, 3, 1.0) < 1e-6);
  }
  CHECK(std::abs(sum00 / draws) < 0.05);
  CHECK(positive00 > draws * 4 / 10);
  CHECK(positive00 < draws * 6 / 10);
  CHECK(sum_sq / draws == Approx(1.0 / 4.0).epsilon(0.1));
  CHECK(first != w);
  CHECK_THROWS_AS(seedrl::orthogonal_fill(rng, std::span<float>(w), 5, 3, 1.0),
                  std::invalid_argument);
}

TEST_CASE(
    "orthogonal init through mlp_lstm_agent: torso sqrt(2), policy 0.01, value 1, zero "
    "biases",
    "[parts][init]") {
  constexpr std::ptrdiff_t obs = 5, h1 = 32, h2 = 16, A = 3;
  seedrl::mlp_lstm_agent_config c;
  c.observation_size = obs;
  c.num_actions = A;
  c.hidden_sizes = {h1, h2};
  c.lstm_size = 0;  // the heads read the torso
  c.seed = 4;
  c.orthogonal_init = true;
  const double root2 = std::sqrt(2.0);
  {
    const seedrl::mlp_lstm_agent<double> net(c);
    const std::span<const double> p = net.parameters();
    std::size_t at = 0;
    const auto take = [&](std::ptrdiff_t rows, std::ptrdiff_t cols) {
      const auto w = p.subspan(at, static_cast<std::size_t>(rows * cols));
      const auto b = p.subspan(at + w.size(), static_cast<std::size_t>(rows));
      at += w.size() + b.size();
      CHECK(std::all_of(b.begin(), b.end(), [](double x) { return x == 0.0; }));
      return w;
    };
    CHECK(gram_error(take(h1, obs), h1, obs, root2) < 1e-12);  // tall: W^T W = 2 I
    CHECK(gram_error(take(h2, h1), h2, h1, root2) < 1e-12);    // wide: W W^T = 2 I
    // The core adds the reward and one-hot previous action to the torso's features.
    const std::ptrdiff_t core_out = h2 + 1 + A;
    CHECK(gram_error(take(A, core_out), A, core_out, 0.01) < 1e-12);
    CHECK(gram_error(take(1, core_out), 1, core_out, 1.0) < 1e-12);
    CHECK(at == p.size());
  }
  {
    // The default is unchanged: PyTorch's uniform draws, biases included.
    auto plain_config = c;
    plain_config.orthogonal_init = false;
    const seedrl::mlp_lstm_agent<double> plain(plain_config);
    const auto bias0 = plain.parameters().subspan(static_cast<std::size_t>(h1 * obs), h1);
    CHECK(std::any_of(bias0.begin(), bias0.end(), [](double x) { return x != 0.0; }));
    const double bound = 1.0 / std::sqrt(static_cast<double>(obs));
    CHECK(std::all_of(bias0.begin(), bias0.end(), [&](double x) { return std::abs(x) <= bound; }));
  }
  {
    // A Gaussian head with one log-std vector: the means' layer orthogonal with the policy
    // gain, then the log-stds where log_std_init put them.
    auto g = c;
    g.hidden_sizes = {8};
    g.continuous_action_size = 2;
    g.num_actions = 4;
    g.log_std_init = -0.5;
    const seedrl::mlp_lstm_agent<double> net(g);
    const auto p = net.parameters();
    const std::size_t at = net.body().policy_offset();
    REQUIRE(at == 8 * obs + 8);
    const std::ptrdiff_t core_out = 8 + 1 + 2;
    CHECK(gram_error(p.subspan(at, 2 * core_out), 2, core_out, 0.01) < 1e-12);
    CHECK(p[at + 2 * core_out] == 0.0);
    CHECK(p[at + 2 * core_out + 1] == 0.0);
    CHECK(p[at + 2 * core_out + 2] == -0.5);
    CHECK(p[at + 2 * core_out + 3] == -0.5);
    REQUIRE(net.body().value_offset() == at + 2 * core_out + 4);
    CHECK(gram_error(p.subspan(net.body().value_offset(), core_out), 1, core_out, 1.0) < 1e-12);
  }
  {
    // With an LSTM the heads read its H outputs; the LSTM keeps PyTorch's draws, uniform in
    // +-1/sqrt(H), plus the forget bias on the forget gates' biases (gates i, f, g, o).
    for (const double forget_bias : {1.0, 0.0}) {
      INFO("forget bias " << forget_bias);
      auto l = c;
      l.hidden_sizes = {6};
      l.lstm_size = 4;
      l.forget_bias = forget_bias;
      const seedrl::mlp_lstm_agent<double> net(l);
      const auto p = net.parameters();
      const std::size_t lstm = net.body().lstm_offset(), H = 4, in = 6 + 1 + A;
      REQUIRE(lstm == 6 * obs + 6);
      CHECK(gram_error(p.subspan(0, static_cast<std::size_t>(6 * obs)), 6, obs, root2) < 1e-12);
      const auto bias = p.subspan(lstm + 4 * H * (in + H), 4 * H);
      REQUIRE(net.body().policy_offset() == lstm + 4 * H * (in + H) + 4 * H);
      const double bound = 0.5;  // 1 / sqrt(4)
      for (std::size_t j = 0; j < 4 * H; ++j) {
        const double shift = j >= H && j < 2 * H ? forget_bias : 0.0;
        CHECK(std::abs(bias[j] - shift) <= bound);
      }
      CHECK(gram_error(p.subspan(net.body().policy_offset(), A * H), A, 4, 0.01) < 1e-12);
      CHECK(gram_error(p.subspan(net.body().value_offset(), H), 1, 4, 1.0) < 1e-12);
    }
  }
}

TEST_CASE("a state-independent log-std pushed past the clamp comes back", "[parts][gaussian]") {
  // The distribution clamps log-stds into [-20, 2] and gives no gradient beyond. The head writes
  // the vector clamped into its rows and passes the rows' gradient through, so a vector that
  // an update pushed past 2 still moves when the loss asks for less noise.
  constexpr std::size_t D = 2, N = 3;
  seedrl::mlp_lstm_agent_config c;
  c.observation_size = 4;
  c.continuous_action_size = D;
  c.num_actions = 2 * D;
  c.hidden_sizes = {4};
  c.lstm_size = 0;
  c.log_std_init = 0.0;
  c.seed = 4;
  seedrl::mlp_lstm_agent<double> net(c);
  const std::size_t first_log_std =
      net.body().policy_offset() + net.body().policy().layer_parameters();
  REQUIRE(first_log_std + D == net.body().value_offset());
  const auto p = net.parameters();
  const auto grad = net.gradients();
  p[first_log_std] = 3.5;        // past the upper end
  p[first_log_std + 1] = -25.0;  // past the lower end
  seedrl::random_generator rng(5);
  auto d = make_unroll(net, N, 1, false, rng);
  d.prev_continuous = random_vector(N * D, rng);
  std::vector<double> y(N * 2 * D), values(N);
  seedrl::agent_unroll_output<double> out{y, values};
  const std::vector<double> no_value_gradient(N, 0.0);
  std::vector<double> dy(N * 2 * D, 0.0);
  const auto backward = [&] {
    net.forward_unroll(d.input(), out);
    net.zero_gradients();
    net.backward_unroll({dy, no_value_gradient});
  };
  net.forward_unroll(d.input(), out);
  for (std::size_t r = 0; r < N; ++r) {
    CHECK(y[r * 2 * D + D] == seedrl::diag_gaussian_log_std_max);
    CHECK(y[r * 2 * D + D + 1] == seedrl::diag_gaussian_log_std_min);
  }
  // The loss wants a smaller first std and a larger second one (d loss / d row log-std = +1
  // and -1 in every row): the vector gets the rows' sum, not the clamp's zero.
  for (std::size_t r = 0; r < N; ++r) {
    dy[r * 2 * D + D] = 1.0;
    dy[r * 2 * D + D + 1] = -1.0;
  }
  backward();
  CHECK(grad[first_log_std] == static_cast<double>(N));
  CHECK(grad[first_log_std + 1] == -static_cast<double>(N));
  // Plain gradient steps bring both back inside, where the rows follow them again.
  for (int step = 0; step < 4; ++step) {
    p[first_log_std] -= 0.25 * grad[first_log_std];
    p[first_log_std + 1] -= 1.0 * grad[first_log_std + 1];
  }
  net.forward_unroll(d.input(), out);
  for (std::size_t r = 0; r < N; ++r) {
    CHECK(y[r * 2 * D + D] == Approx(0.5));
    CHECK(y[r * 2 * D + D + 1] == Approx(-13.0));
  }
  // Beyond an end, a gradient that would push the vector further out does not pass (else an
  // entropy bonus drives it out for good, and the way back is as long as the way out), while
  // inside the range every gradient does.
  p[first_log_std] = 2.5;
  p[first_log_std + 1] = -21.0;
  for (std::size_t r = 0; r < N; ++r) {
    dy[r * 2 * D + D] = -1.0;     // descent would raise the first further
    dy[r * 2 * D + D + 1] = 1.0;  // and lower the second further
  }
  backward();
  CHECK(grad[first_log_std] == 0.0);
  CHECK(grad[first_log_std + 1] == 0.0);
  p[first_log_std] = 1.5;
  backward();
  CHECK(grad[first_log_std] == -static_cast<double>(N));
  CHECK(grad[first_log_std + 1] == 0.0);
}

namespace {

/// The agent's parameters widened (every path matters), then its gradients against central
/// differences (at most `max_zero_fraction` of them exactly 0) and its step-by-step inference
/// against the unroll. Returns the unroll.
template <class Agent>
unroll check_agent(Agent& net, bool pixels, std::size_t continuous, std::uint64_t seed,
                   double max_zero_fraction = 0.25) {
  seedrl::random_generator rng(seed);
  for (auto& p : net.parameters())
    p = p * 3.0 + rng.uniform(-0.05, 0.05);
  auto d = make_unroll(net, 3, 2, pixels, rng);
  if (continuous > 0)
    d.prev_continuous = random_vector(d.T1 * d.B * continuous, rng, 1.0);
  check_gradients(net, d, rng, max_zero_fraction);
  check_inference_matches_unroll(net, d);
  return d;
}

}  // namespace

TEST_CASE("mlp_lstm_agent in each configuration: gradients and inference against the unroll",
          "[parts][gradcheck][agent]") {
  seedrl::mlp_lstm_agent_config c;
  c.observation_size = 5;
  c.num_actions = 3;
  c.hidden_sizes = {7, 6};
  c.lstm_size = 4;
  c.seed = 31;
  const int variant = GENERATE(range(0, 7));
  switch (variant) {
    case 1:
      c.lstm_layers = 2;
      c.max_abs_input_reward = 0.5;
      break;
    case 2:
      c.lstm_size = 0;
      c.reward_and_action_inputs = false;
      break;
    case 3:  // continuous, log-stds from the layer
      c.continuous_action_size = 2;
      c.num_actions = 4;
      break;
    case 4:  // continuous, one log-std vector, orthogonal
      c.continuous_action_size = 2;
      c.num_actions = 4;
      c.log_std_init = -0.3;
      c.orthogonal_init = true;
      break;
    case 5:  // separate policy and value networks
      c.continuous_action_size = 2;
      c.num_actions = 4;
      c.log_std_init = 0.1;
      c.lstm_size = 0;
      c.separate_value_network = true;
      break;
    case 6:
      c.orthogonal_init = true;
      c.forget_bias = 0.0;
      break;
    default:
      break;
  }
  INFO("variant " << variant);
  seedrl::mlp_lstm_agent<double> net(c);
  CHECK(net.state_size() == 2 * c.lstm_size * (c.lstm_size > 0 ? c.lstm_layers : 0));
  CHECK(net.has_lstm() == (c.lstm_size > 0));
  // Tiny separate towers leave more dead ReLU units; the separate test above checks them with
  // live biases.
  check_agent(net, false, static_cast<std::size_t>(c.continuous_action_size), 32,
              c.separate_value_network ? 0.5 : 0.25);
  // A copy has the parameters.
  const seedrl::mlp_lstm_agent<double> copy(net);
  REQUIRE(std::equal(net.parameters().begin(), net.parameters().end(), copy.parameters().begin(),
                     copy.parameters().end()));
}

TEST_CASE("the pixel agents: gradients and inference against the unroll, both pixel layouts",
          "[parts][gradcheck][pixels]") {
  const bool channels_last = GENERATE(false, true);
  INFO("channels_last " << channels_last);
  // A ReLU after every convolution and after the dense layer: tiny stacks on noise images leave
  // whole channels and units dead, their weights without gradient (the IMPALA stack's about a
  // quarter); two thirds of every agent's parameters must still have one.
  constexpr double dead = 1.0 / 3.0;
  SECTION("Nature CNN") {
    seedrl::nature_cnn_lstm_agent_config c;
    c.height = c.width = 36;
    c.channels = 2;
    c.channels_last = channels_last;
    c.num_actions = 3;
    c.torso.channels = {3, 4, 4};
    c.dense_size = 6;
    c.lstm_size = 5;
    c.seed = 41;
    seedrl::nature_cnn_lstm_agent<double> net(c);
    check_agent(net, true, 0, 42, dead);
  }
  SECTION("IMPALA ResNet") {
    seedrl::impala_resnet_lstm_agent_config c;
    c.height = c.width = 12;
    c.channels = 2;
    c.channels_last = channels_last;
    c.num_actions = 4;
    c.torso.channels = {3, 4};
    c.torso.blocks_per_stack = 1;
    c.dense_size = 6;
    c.lstm_size = 5;
    c.max_abs_input_reward = std::nullopt;
    c.seed = 43;
    seedrl::impala_resnet_lstm_agent<double> net(c);
    check_agent(net, true, 0, 44, dead);
  }
  SECTION("small conv stack") {
    seedrl::small_conv_lstm_agent_config c;
    c.height = c.width = 7;
    c.channels = 3;
    c.channels_last = channels_last;
    c.num_actions = 2;
    c.torso.channels = {4, 5};
    c.dense_size = 6;
    c.lstm_size = 5;
    c.observation_scale = 0.5;
    c.seed = 45;
    seedrl::small_conv_lstm_agent<double> net(c);
    check_agent(net, false, 0, 46, dead);
  }
}
