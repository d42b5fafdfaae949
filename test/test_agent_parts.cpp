// Agents composed from parts (seedrl/net/actor_critic_agent.hpp): the small conv torso and a
// torso defined here, in float64 against central differences and independent loop references;
// a tanh MLP with no core against a plain-loop forward; inference against the unroll; and the
// errors for parts that do not fit together. Orthogonal initialisation against Gram-Schmidt on
// the same Gaussian draws, and through the parts with their gains.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "gradcheck.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/net/actor_critic_agent.hpp"
#include "seedrl/net/frame_stack.hpp"
#include "seedrl/net/impala_resnet.hpp"
#include "seedrl/net/impala_resnet_lstm_agent.hpp"
#include "seedrl/net/init_scheme.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"
#include "seedrl/net/nature_cnn.hpp"
#include "seedrl/net/nature_cnn_lstm_agent.hpp"
#include "seedrl/net/network.hpp"
#include "seedrl/net/parts/dense_torso.hpp"
#include "seedrl/net/parts/gaussian_head.hpp"
#include "seedrl/net/parts/linear_heads.hpp"
#include "seedrl/net/parts/lstm_core.hpp"
#include "seedrl/net/parts/mlp_torso.hpp"
#include "seedrl/net/parts/no_core.hpp"
#include "seedrl/net/parts/preprocess.hpp"
#include "seedrl/net/parts/small_conv.hpp"
#include "seedrl/net/parts/spec_policy_head.hpp"
#include "seedrl/net/small_conv_lstm_agent.hpp"

namespace {

using seedrl_test::dot;
using seedrl_test::gradcheck;
using seedrl_test::random_vector;
using seedrl_test::require_close;

// ---------------------------------------------------------------------------------------------
// A user's own torso: y = (x W^T + b)^2, elementwise. Nothing in the library knows it.

class square_torso {
 public:
  square_torso(std::ptrdiff_t in, std::ptrdiff_t out) : in_(in), out_(out) {}

  std::ptrdiff_t input_size() const { return in_; }
  std::ptrdiff_t output_size() const { return out_; }
  seedrl::feature_layout input_layout() const { return seedrl::feature_layout::vector; }
  std::size_t num_parameters() const { return static_cast<std::size_t>(out_ * (in_ + 1)); }
  void bind(double* p, double* g) {
    p_ = p;
    g_ = g;
  }
  void init(seedrl::random_generator& rng) {
    for (std::size_t i = 0; i < num_parameters(); ++i)
      p_[i] = rng.uniform(-0.5, 0.5);
  }
  void infer(seedrl::const_matrix_view<double> x, seedrl::matrix_view<double> y) {
    z_infer_.resize(static_cast<std::size_t>(x.rows() * out_));
    run(x, y, z_infer_);
  }
  void forward(seedrl::const_matrix_view<double> x, seedrl::matrix_view<double> y) {
    x_.assign(x.data(), x.data() + x.rows() * x.outerStride());
    stride_ = x.outerStride();
    rows_ = x.rows();
    z_.resize(static_cast<std::size_t>(x.rows() * out_));
    run(x, y, z_);
  }
  void backward(seedrl::matrix_view<double> dy) {
    for (std::ptrdiff_t r = 0; r < rows_; ++r)
      for (std::ptrdiff_t o = 0; o < out_; ++o) {
        const double dz = dy(r, o) * 2.0 * z_[static_cast<std::size_t>(r * out_ + o)];
        for (std::ptrdiff_t i = 0; i < in_; ++i)
          g_[o * in_ + i] += dz * x_[static_cast<std::size_t>(r * stride_ + i)];
        g_[out_ * in_ + o] += dz;
      }
  }

 private:
  void run(seedrl::const_matrix_view<double> x, seedrl::matrix_view<double> y,
           std::vector<double>& z) const {
    for (std::ptrdiff_t r = 0; r < x.rows(); ++r)
      for (std::ptrdiff_t o = 0; o < out_; ++o) {
        double s = p_[out_ * in_ + o];
        for (std::ptrdiff_t i = 0; i < in_; ++i)
          s += p_[o * in_ + i] * x(r, i);
        z[static_cast<std::size_t>(r * out_ + o)] = s;
        y(r, o) = s * s;
      }
  }

  std::ptrdiff_t in_, out_;
  double* p_ = nullptr;
  double* g_ = nullptr;
  std::vector<double> x_, z_, z_infer_;
  std::ptrdiff_t stride_ = 0, rows_ = 0;
};

static_assert(seedrl::Torso<square_torso, double>);

using user_agent =
    seedrl::actor_critic_agent<double, seedrl::vector_observations, square_torso,
                               seedrl::lstm_core<double>, seedrl::categorical_head<double>>;
using tanh_conv_torso = seedrl::small_conv_torso<double, seedrl::tanh_activation>;
using small_conv_agent =
    seedrl::actor_critic_agent<double, seedrl::image_observations, tanh_conv_torso,
                               seedrl::lstm_core<double>, seedrl::categorical_head<double>>;
using tanh_mlp_torso = seedrl::mlp_torso<double, seedrl::tanh_activation>;
using tanh_mlp_agent =
    seedrl::actor_critic_agent<double, seedrl::vector_observations, tanh_mlp_torso,
                               seedrl::no_core<double>, seedrl::categorical_head<double>>;

static_assert(seedrl::Network<user_agent>);
static_assert(seedrl::Network<small_conv_agent>);
static_assert(seedrl::Network<tanh_mlp_agent>);
static_assert(seedrl::Network<seedrl::frame_stacked<small_conv_agent>>);

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

/// Central differences of <g, outputs> over every parameter against backward_unroll.
template <class Net>
void check_gradients(Net& net, const unroll& d, seedrl::random_generator& rng) {
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
  // Most parameters must matter, or the check below would pass on dead paths (a few ReLU
  // units are dead on any input, their weights' gradients exactly 0).
  INFO("zero gradients: " << std::count(analytic.begin(), analytic.end(), 0.0) << " of "
                          << analytic.size());
  CHECK(std::count(analytic.begin(), analytic.end(), 0.0) < static_cast<long>(analytic.size() / 4));
  require_close(gradcheck(net.parameters(), analytic, loss));
}

/// Step-by-step inference from the unroll's start states must reproduce the unroll.
template <class Net>
void check_inference_matches_unroll(Net& net, const unroll& d) {
  const std::size_t B = d.B, P = static_cast<std::size_t>(net.policy_size()),
                    n = static_cast<std::size_t>(net.observation_size());
  std::vector<double> logits(d.T1 * B * P), values(d.T1 * B);
  seedrl::agent_unroll_output<double> out{logits, values};
  net.forward_unroll(d.input(), out);
  auto state = net.initial_state(B);
  std::copy(d.start.begin(), d.start.end(), state.data.begin());
  std::vector<double> step_logits(B * P), step_values(B);
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
    for (std::size_t i = 0; i < B * P; ++i)
      REQUIRE(step_logits[i] == Approx(logits[r * P + i]).margin(1e-12));
    for (std::size_t b = 0; b < B; ++b)
      REQUIRE(step_values[b] == Approx(values[r + b]).margin(1e-12));
  }
}

small_conv_agent make_small_conv_agent(std::ptrdiff_t padding, bool channels_last) {
  const std::ptrdiff_t H = 10, W = 10, C = 3;
  return small_conv_agent(
      {.num_actions = 4, .max_abs_input_reward = 1.0, .seed = 3},
      seedrl::image_observations{.height = H,
                                 .width = W,
                                 .channels = C,
                                 .channels_last = channels_last,
                                 .scale = 1.0 / 255.0},
      tanh_conv_torso(seedrl::small_conv<double>({.channels = {4, 3}, .padding = padding}, C, H, W),
                      {.size = 5}),
      {.hidden_size = 3, .num_layers = 1, .forget_bias = 1.0}, {.num_actions = 4});
}

/// Direct-loop 3x3 stride-1 convolutions + ReLU of one CHW image, from the parameters at p.
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

}  // namespace

TEST_CASE("small conv torso: features match direct loops, gradients central differences",
          "[parts][small_conv][gradcheck]") {
  for (const std::ptrdiff_t padding : {std::ptrdiff_t{0}, std::ptrdiff_t{1}}) {
    INFO("padding " << padding);
    // Default initialisation, and tanh after the dense layer: on noise images a ReLU there
    // would leave whole units dead, and their weights untested.
    auto net = make_small_conv_agent(padding, true);
    const std::ptrdiff_t C = 3, H = 10, W = 10;
    // Features of one channels-last image, through the torso's conv stack alone.
    seedrl::random_generator rng(5);
    std::vector<double> hwc(static_cast<std::size_t>(C * H * W)), chw(hwc.size());
    for (auto& v : hwc)
      v = static_cast<double>(rng.below(256));
    for (std::ptrdiff_t p = 0; p < H * W; ++p)
      for (std::ptrdiff_t c = 0; c < C; ++c)
        chw[static_cast<std::size_t>(c * H * W + p)] =
            hwc[static_cast<std::size_t>(p * C + c)] / 255.0;
    auto stack = net.torso().features();  // a copy: its parameters are bound to net's buffer
    const auto got = stack.infer(seedrl::cview(chw.data(), 1, C * H * W));
    const auto want = small_conv_reference(net.parameters().data(), chw, C, H, W, {4, 3}, padding);
    REQUIRE(got.cols() == static_cast<std::ptrdiff_t>(want.size()));
    CHECK(got.cols() == (padding == 0 ? 3 * 6 * 6 : 3 * 10 * 10));
    for (std::size_t i = 0; i < want.size(); ++i)
      REQUIRE(got(0, static_cast<std::ptrdiff_t>(i)) == Approx(want[i]).margin(1e-12));

    const auto d = make_unroll(net, 4, 2, true, rng);
    check_gradients(net, d, rng);
    // Each output channel of the first convolution gets gradient: no dead path hides one.
    for (std::ptrdiff_t o = 0; o < 4; ++o) {
      INFO("first convolution, output channel " << o);
      const auto kernel = net.gradients().subspan(static_cast<std::size_t>(o * C * 9), C * 9);
      CHECK(std::any_of(kernel.begin(), kernel.end(), [](double g) { return g != 0.0; }));
    }
    check_inference_matches_unroll(net, d);
  }
}

TEST_CASE("small conv torso accepts any channel count and refuses images too small",
          "[parts][small_conv]") {
  for (const std::ptrdiff_t C : {1, 7}) {
    const seedrl::small_conv<float> s({.channels = {16, 32}}, C, 10, 10);
    CHECK(s.input_size() == C * 100);
    CHECK(s.output_size() == 32 * 6 * 6);
  }
  CHECK_THROWS_AS(seedrl::small_conv<float>({.channels = {8, 8}}, 1, 3, 3), std::invalid_argument);
  CHECK_NOTHROW(seedrl::small_conv<float>({.channels = {8, 8}, .padding = 1}, 1, 3, 3));
}

TEST_CASE("conv feature stacks: strided views, copies that share nothing, clear refusals",
          "[parts][small_conv]") {
  const std::ptrdiff_t C = 2, H = 6, W = 5, N = 3, in = C * H * W, ld = in + 7;
  seedrl::small_conv<double> stack({.channels = {3, 2}, .padding = 1}, C, H, W);
  const auto F = stack.output_size();
  std::vector<double> params(stack.num_parameters()), grads(params.size(), 0.0);
  stack.bind(params.data(), grads.data());
  seedrl::random_generator rng(12);
  stack.init(rng);
  std::vector<double> x(static_cast<std::size_t>(N * ld)),
      dy(static_cast<std::size_t>(N * (F + 4)));
  for (auto& v : x)
    v = rng.uniform(-1.0, 1.0);
  for (auto& v : dy)
    v = rng.uniform(-1.0, 1.0);
  // Rows of the strided views copied out contiguous: the reference.
  std::vector<double> x_packed, dy_packed;
  for (std::ptrdiff_t r = 0; r < N; ++r) {
    x_packed.insert(x_packed.end(), x.begin() + r * ld, x.begin() + r * ld + in);
    dy_packed.insert(dy_packed.end(), dy.begin() + r * (F + 4), dy.begin() + r * (F + 4) + F);
  }
  auto copy = stack;  // bound to the same parameters, its own backends and buffers
  std::vector<double> copy_grads(grads.size(), 0.0);
  copy.bind(params.data(), copy_grads.data());
  const auto strided = stack.infer(seedrl::cview(x.data(), N, in, ld));
  const std::vector<double> strided_y(strided.data(), strided.data() + N * F);
  const auto packed = copy.infer(seedrl::cview(x_packed.data(), N, in));
  CHECK(std::equal(strided_y.begin(), strided_y.end(), packed.data()));
  // Training on the strided views gives the packed rows' gradients; the copy's forward did
  // not disturb the original's kept activations, nor its infer buffer.
  stack.forward(seedrl::cview(x.data(), N, in, ld));
  copy.forward(seedrl::cview(x_packed.data(), N, in));
  stack.backward(seedrl::view(dy.data(), N, F, F + 4));
  copy.backward(seedrl::view(dy_packed.data(), N, F));
  CHECK(grads == copy_grads);
  CHECK(std::any_of(grads.begin(), grads.end(), [](double g) { return g != 0.0; }));
  CHECK(std::equal(strided_y.begin(), strided_y.end(), strided.data()));

  seedrl::small_conv<double> fresh({.channels = {3}}, C, H, W);
  CHECK_THROWS_AS(fresh.backward(seedrl::view(dy.data(), N, F)), std::logic_error);
  CHECK_THROWS_WITH(stack.infer(seedrl::cview(x.data(), N, in - 1)),
                    Catch::Contains("seedrl::small_conv::infer") && Catch::Contains("C*H*W = 60"));
  CHECK_THROWS_WITH(stack.backward(seedrl::view(dy.data(), N - 1, F)),
                    Catch::Contains("the last forward wrote 3x"));
  CHECK_THROWS_WITH(seedrl::small_conv<float>({.channels = {3}}, 0, H, W),
                    Catch::Contains("seedrl::small_conv") && Catch::Contains("positive"));
  CHECK_THROWS_WITH(seedrl::nature_cnn<float>({}, 4, 35, 84), Catch::Contains("36x36"));
  CHECK_THROWS_WITH(
      seedrl::impala_resnet<float>({.channels = {}}, 4, 84, 84),
      Catch::Contains("seedrl::impala_resnet") && Catch::Contains("at least one stack"));
}

TEST_CASE("a user's own torso composes, infers and its gradients match central differences",
          "[parts][gradcheck]") {
  user_agent net({.num_actions = 3, .seed = 9}, seedrl::vector_observations{4}, square_torso(4, 5),
                 {.hidden_size = 4}, {.num_actions = 3});
  CHECK(net.state_size() == 2 * 4);
  CHECK(net.parameters().size() == 5 * 5 + 4 * 4 * (5 + 1 + 3 + 4 + 1) + 3 * (4 + 1) + (4 + 1));
  seedrl::random_generator rng(10);
  const auto d = make_unroll(net, 5, 3, false, rng);
  check_gradients(net, d, rng);
  check_inference_matches_unroll(net, d);
  // A copy is bound to its own buffers and computes the same.
  user_agent copy(net);
  CHECK(copy.parameters().data() != net.parameters().data());
  check_inference_matches_unroll(copy, d);
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

TEST_CASE("a tanh MLP with no core matches a plain-loop forward and central differences",
          "[parts][gradcheck]") {
  tanh_mlp_agent net({.num_actions = 2, .reward_and_action_inputs = false, .seed = 11},
                     seedrl::vector_observations{3},
                     tanh_mlp_torso({.input_size = 3, .widths = {5, 4}}), {}, {.num_actions = 2});
  CHECK(net.state_size() == 0);
  spread_parameters(net, 12);
  seedrl::random_generator rng(13);
  const auto d = make_unroll(net, 3, 2, false, rng);
  std::vector<double> logits(6 * 2), values(6);
  seedrl::agent_unroll_output<double> out{logits, values};
  net.forward_unroll(d.input(), out);
  // Layout: W1 [5,3] b1, W2 [4,5] b2, policy W [2,4] b, value W [1,4] b.
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
    net.forward_unroll(d.input(), out);
    net.zero_gradients();
    net.backward_unroll({g_logits, g_values});
    return std::vector<double>(net.gradients().begin(), net.gradients().end());
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

/// Logits and values of `forward_unroll` and of step-by-step `infer` (with the state after the
/// last step) over `d`: everything the agent computes from its inputs.
template <class Net>
std::vector<double> all_outputs(Net& net, const unroll& d) {
  const std::size_t B = d.B, P = static_cast<std::size_t>(net.policy_size()),
                    n = static_cast<std::size_t>(net.observation_size());
  std::vector<double> logits(d.T1 * B * P), values(d.T1 * B);
  seedrl::agent_unroll_output<double> out{logits, values};
  net.forward_unroll(d.input(), out);
  std::vector<double> all = logits;
  all.insert(all.end(), values.begin(), values.end());
  auto state = net.initial_state(B);
  std::copy(d.start.begin(), d.start.end(), state.data.begin());
  std::vector<double> step_logits(B * P), step_values(B);
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
  all.insert(all.end(), state.data.begin(), state.data.end());
  return all;
}

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

using gaussian_agent =
    seedrl::actor_critic_agent<double, seedrl::vector_observations, seedrl::mlp_torso<double>,
                               seedrl::lstm_core<double>, seedrl::gaussian_head<double>>;
static_assert(seedrl::Network<gaussian_agent>);

TEST_CASE(
    "a Gaussian head writes rows of means then log-stds and its gradients match central "
    "differences, with continuous previous actions as core inputs",
    "[parts][gaussian][gradcheck]") {
  const bool dependent = GENERATE(false, true);
  INFO("state-dependent log-std " << dependent);
  constexpr std::size_t D = 2, T1 = 4, B = 2;
  gaussian_agent net(
      {.num_actions = D, .seed = 5, .continuous_action_size = D}, seedrl::vector_observations{3},
      seedrl::mlp_torso<double>({.input_size = 3, .widths = {6}}), {.hidden_size = 4},
      {.action_size = D, .state_dependent_log_std = dependent, .initial_log_std = -0.5});
  REQUIRE(net.policy_size() == 2 * D);
  REQUIRE(net.num_actions() == D);
  seedrl::random_generator rng(7);
  auto d = make_unroll(net, T1, B, false, rng);
  d.prev_continuous = random_vector(T1 * B * D, rng, 2.0);
  std::vector<double> outputs(T1 * B * 2 * D), values(T1 * B);
  seedrl::agent_unroll_output<double> out{outputs, values};
  net.forward_unroll(d.input(), out);
  if (!dependent) {
    // The log-std vector ends the policy head's parameters (the value head's follow),
    // initialised as asked, and is in every row.
    const auto p = net.parameters();
    const std::size_t end = p.size() - net.value().num_parameters();
    for (std::size_t r = 0; r < T1 * B; ++r) {
      for (std::size_t i = 0; i < D; ++i) {
        CHECK(outputs[r * 2 * D + D + i] == -0.5);
        CHECK(p[end - D + i] == -0.5);
      }
    }
  }
  spread_parameters(net, 6);
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
    user_agent net({.num_actions = 3, .seed = 9}, seedrl::vector_observations{4},
                   square_torso(4, 5), {.hidden_size = 4}, {.num_actions = 3});
    spread_parameters(net, 22);
    check_episode_start_inputs(net, make_unroll(net, 5, 3, false, rng));
  }
  SECTION("a conv torso, clipped input reward, no core") {
    using conv_no_core =
        seedrl::actor_critic_agent<double, seedrl::image_observations, tanh_conv_torso,
                                   seedrl::no_core<double>, seedrl::categorical_head<double>>;
    conv_no_core net(
        {.num_actions = 4, .max_abs_input_reward = 1.0, .seed = 3},
        seedrl::image_observations{.height = 6, .width = 6, .channels = 2, .scale = 1.0 / 255.0},
        tanh_conv_torso(seedrl::small_conv<double>({.channels = {3}}, 2, 6, 6), {.size = 5}), {},
        {.num_actions = 4});
    spread_parameters(net, 23);
    check_episode_start_inputs(net, make_unroll(net, 4, 2, true, rng));
  }
}

TEST_CASE("parts that cannot work together are refused at construction, saying why",
          "[parts][errors]") {
  const seedrl::image_observations images{.height = 10, .width = 10, .channels = 3, .scale = 1.0};
  const auto mlp = seedrl::mlp_torso<float>({.input_size = 300, .widths = {8}});
  using image_mlp =
      seedrl::actor_critic_agent<float, seedrl::image_observations, seedrl::mlp_torso<float>,
                                 seedrl::no_core<float>, seedrl::categorical_head<float>>;
  // Images into an MLP without flattening.
  CHECK_THROWS_MATCHES(image_mlp({.num_actions = 3}, images, mlp, {}, {.num_actions = 3}),
                       std::invalid_argument,
                       Catch::Message("seedrl::actor_critic_agent: the torso reads flat feature "
                                      "vectors but the preprocessing gives it C x H x W images: "
                                      "flatten the images (image_observations{.flatten = true}) or "
                                      "use a conv torso"));
  auto flat = images;
  flat.flatten = true;
  CHECK_NOTHROW(image_mlp({.num_actions = 3}, flat, mlp, {}, {.num_actions = 3}));
  // Flat vectors into a conv torso.
  using vector_conv =
      seedrl::actor_critic_agent<float, seedrl::vector_observations,
                                 seedrl::small_conv_torso<float>, seedrl::no_core<float>,
                                 seedrl::categorical_head<float>>;
  const seedrl::small_conv_torso<float> conv(seedrl::small_conv<float>({}, 3, 10, 10), {.size = 8});
  CHECK_THROWS_WITH(
      vector_conv({.num_actions = 3}, seedrl::vector_observations{300}, conv, {},
                  {.num_actions = 3}),
      Catch::Contains("the torso reads C x H x W images but the preprocessing gives it flat "
                      "feature vectors"));
  // Sizes that disagree.
  CHECK_THROWS_WITH(image_mlp({.num_actions = 3}, flat,
                              seedrl::mlp_torso<float>({.input_size = 299, .widths = {8}}), {},
                              {.num_actions = 3}),
                    Catch::Contains("gives 300 scalars per observation but the torso reads 299"));
  // An action count the head does not have.
  CHECK_THROWS_WITH(
      image_mlp({.num_actions = 3, .name = "my_agent"}, flat, mlp, {}, {.num_actions = 4}),
      Catch::Contains("seedrl::my_agent: the policy head has 4 actions but the "
                      "agent's action count is 3"));
  CHECK_THROWS_AS(image_mlp({.num_actions = 0}, flat, mlp, {}, {.num_actions = 0}),
                  std::invalid_argument);
  // A previous action outside the action space, when the core reads it.
  using mlp_agent =
      seedrl::actor_critic_agent<float, seedrl::vector_observations, seedrl::mlp_torso<float>,
                                 seedrl::lstm_core<float>, seedrl::categorical_head<float>>;
  mlp_agent net({.num_actions = 2}, seedrl::vector_observations{2},
                seedrl::mlp_torso<float>({.input_size = 2, .widths = {4}}), {.hidden_size = 3},
                {.num_actions = 2});
  auto state = net.initial_state(1);
  std::vector<float> obs(2), rewards(1), logits(2), values(1);
  std::vector<std::uint8_t> dones(1);
  std::vector<std::int32_t> prev{2};
  seedrl::agent_step_output<float> o{logits, values};
  CHECK_THROWS_AS(net.infer({obs, rewards, dones, prev}, state, o), std::out_of_range);
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

TEST_CASE("orthogonal init through the parts: torso sqrt(2), policy 0.01, value 1, zero biases",
          "[parts][init]") {
  constexpr std::ptrdiff_t obs = 5, h1 = 32, h2 = 16, A = 3;
  seedrl::mlp_lstm_agent_config c;
  c.observation_size = obs;
  c.num_actions = A;
  c.hidden_sizes = {h1, h2};
  c.lstm_size = 0;  // the heads read the torso
  c.seed = 4;
  c.orthogonal_init = true;
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
  const double root2 = std::sqrt(2.0);
  CHECK(gram_error(take(h1, obs), h1, obs, root2) < 1e-12);  // tall: W^T W = 2 I
  CHECK(gram_error(take(h2, h1), h2, h1, root2) < 1e-12);    // wide: W W^T = 2 I
  // The core adds the reward and one-hot previous action to the torso's features.
  const std::ptrdiff_t core_out = h2 + 1 + A;
  CHECK(gram_error(take(A, core_out), A, core_out, 0.01) < 1e-12);
  CHECK(gram_error(take(1, core_out), 1, core_out, 1.0) < 1e-12);
  CHECK(at == p.size());
  // The default is unchanged: PyTorch's uniform draws, biases included.
  c.orthogonal_init = false;
  const seedrl::mlp_lstm_agent<double> plain(c);
  const auto bias0 = plain.parameters().subspan(static_cast<std::size_t>(h1 * obs), h1);
  CHECK(std::any_of(bias0.begin(), bias0.end(), [](double x) { return x != 0.0; }));
  const double bound = 1.0 / std::sqrt(static_cast<double>(obs));
  CHECK(std::all_of(bias0.begin(), bias0.end(), [&](double x) { return std::abs(x) <= bound; }));
  // A Gaussian head, orthogonal with the policy gain; its log-stds as before.
  seedrl::gaussian_head<double> g(
      {.action_size = 2, .initial_log_std = -0.5, .init = seedrl::init_scheme::orthogonal}, 8);
  std::vector<double> gp(g.num_parameters()), gg(g.num_parameters());
  g.bind(gp.data(), gg.data());
  seedrl::random_generator rng(3);
  g.init(rng);
  CHECK(gram_error(std::span<const double>(gp).first(16), 2, 8, 0.01) < 1e-12);
  CHECK(gp[16] == 0.0);
  CHECK(gp[17] == 0.0);
  CHECK(gp[18] == -0.5);
  CHECK(gp[19] == -0.5);
}

TEST_CASE("a state-independent log-std pushed past the clamp comes back", "[parts][gaussian]") {
  // The distribution clamps log-stds into [-20, 2] and gives no gradient beyond. The head writes
  // the vector clamped into its rows and passes the rows' gradient through, so a vector that
  // an update pushed past 2 still moves when the loss asks for less noise.
  constexpr std::ptrdiff_t D = 2, N = 3, in = 4;
  seedrl::gaussian_head<double> g({.action_size = D, .initial_log_std = 0.0}, in);
  std::vector<double> p(g.num_parameters()), grad(g.num_parameters(), 0.0);
  g.bind(p.data(), grad.data());
  seedrl::random_generator rng(4);
  g.init(rng);
  const std::size_t first_log_std = p.size() - D;
  p[first_log_std] = 3.5;        // past the upper end
  p[first_log_std + 1] = -25.0;  // past the lower end
  const std::vector<double> x(N * in, 0.5);
  std::vector<double> y(N * 2 * D), dx(N * in);
  const auto forward = [&] {
    g.forward(seedrl::cview(x.data(), N, in, in), seedrl::view(y.data(), N, 2 * D, 2 * D));
  };
  forward();
  for (std::ptrdiff_t r = 0; r < N; ++r) {
    CHECK(y[r * 2 * D + D] == seedrl::diag_gaussian_log_std_max);
    CHECK(y[r * 2 * D + D + 1] == seedrl::diag_gaussian_log_std_min);
  }
  // The loss wants a smaller first std and a larger second one (d loss / d row log-std = +1
  // and -1 in every row): the vector gets the rows' sum, not the clamp's zero.
  std::vector<double> dy(N * 2 * D, 0.0);
  for (std::ptrdiff_t r = 0; r < N; ++r) {
    dy[r * 2 * D + D] = 1.0;
    dy[r * 2 * D + D + 1] = -1.0;
  }
  g.backward(seedrl::cview(x.data(), N, in, in), seedrl::cview(dy.data(), N, 2 * D, 2 * D),
             seedrl::view(dx.data(), N, in, in), false);
  CHECK(grad[first_log_std] == N);
  CHECK(grad[first_log_std + 1] == -N);
  // Plain gradient steps bring both back inside, where the rows follow them again.
  for (int step = 0; step < 4; ++step) {
    p[first_log_std] -= 0.25 * grad[first_log_std];
    p[first_log_std + 1] -= 1.0 * grad[first_log_std + 1];
  }
  forward();
  CHECK(y[D] == Approx(0.5));
  CHECK(y[D + 1] == Approx(-13.0));
  // Beyond an end, a gradient that would push the vector further out does not pass (else an
  // entropy bonus drives it out for good, and the way back is as long as the way out), while
  // inside the range every gradient does.
  p[first_log_std] = 2.5;
  p[first_log_std + 1] = -21.0;
  std::fill(grad.begin(), grad.end(), 0.0);
  for (std::ptrdiff_t r = 0; r < N; ++r) {
    dy[r * 2 * D + D] = -1.0;     // descent would raise the first further
    dy[r * 2 * D + D + 1] = 1.0;  // and lower the second further
  }
  g.backward(seedrl::cview(x.data(), N, in, in), seedrl::cview(dy.data(), N, 2 * D, 2 * D),
             seedrl::view(dx.data(), N, in, in), false);
  CHECK(grad[first_log_std] == 0.0);
  CHECK(grad[first_log_std + 1] == 0.0);
  p[first_log_std] = 1.5;
  g.backward(seedrl::cview(x.data(), N, in, in), seedrl::cview(dy.data(), N, 2 * D, 2 * D),
             seedrl::view(dx.data(), N, in, in), false);
  CHECK(grad[first_log_std] == -N);
}

/// The composition of CPU parts `mlp_lstm_agent<S>` starts and computes as (its file comment).
template <class S>
using mlp_parts_composition =
    seedrl::actor_critic_agent<S, seedrl::vector_observations, seedrl::mlp_torso<S>,
                               seedrl::lstm_core<S>, seedrl::spec_policy_head<S>,
                               seedrl::value_head<S>>;

template <class S>
mlp_parts_composition<S> mlp_parts_for(const seedrl::mlp_lstm_agent_config& c) {
  const auto scheme =
      c.orthogonal_init ? seedrl::init_scheme::orthogonal : seedrl::init_scheme::pytorch_default;
  return mlp_parts_composition<S>(
      {.num_actions = c.num_actions,
       .reward_and_action_inputs = c.reward_and_action_inputs,
       .max_abs_input_reward = c.max_abs_input_reward,
       .seed = c.seed,
       .continuous_action_size = c.continuous_action_size,
       .value_features = c.separate_value_network ? c.hidden_sizes.back() : std::ptrdiff_t{0}},
      seedrl::vector_observations{c.observation_size},
      seedrl::mlp_torso<S>({.input_size = c.observation_size,
                            .widths = c.hidden_sizes,
                            .init = scheme,
                            .towers = c.separate_value_network ? 2 : 1}),
      {.hidden_size = c.lstm_size, .num_layers = c.lstm_layers, .forget_bias = c.forget_bias},
      {.num_outputs = c.num_actions,
       .independent_log_std_size = c.log_std_init ? c.continuous_action_size : 0,
       .initial_log_std = c.log_std_init.value_or(0.0),
       .init = scheme},
      {.init = scheme});
}

/// A backend agent against the composition of CPU parts it replaces: equal initial
/// parameters, then (parameters widened) equal outputs and gradients over an unroll and
/// step-by-step inference equal to it. Returns the unroll.
template <class Agent, class Reference>
unroll check_same_agent(Agent& net, Reference& ref, bool pixels, std::size_t continuous,
                        std::uint64_t seed) {
  REQUIRE(net.state_size() == ref.state_size());
  REQUIRE(net.policy_size() == ref.policy_size());
  REQUIRE(net.observation_size() == ref.observation_size());
  const auto p = net.parameters(), q = ref.parameters();
  REQUIRE(std::vector<double>(p.begin(), p.end()) == std::vector<double>(q.begin(), q.end()));
  seedrl::random_generator rng(seed);
  for (std::size_t i = 0; i < p.size(); ++i)  // wider than the draws, so every path matters
    p[i] = q[i] = p[i] * 3.0 + rng.uniform(-0.05, 0.05);
  auto d = make_unroll(net, 3, 2, pixels, rng);
  if (continuous > 0)
    d.prev_continuous = random_vector(d.T1 * d.B * continuous, rng, 1.0);
  const std::size_t N = d.T1 * d.B, P = static_cast<std::size_t>(net.policy_size());
  std::vector<double> a_out(N * P), a_val(N), b_out(N * P), b_val(N);
  seedrl::agent_unroll_output<double> a{a_out, a_val}, b{b_out, b_val};
  net.forward_unroll(d.input(), a);
  ref.forward_unroll(d.input(), b);
  for (std::size_t i = 0; i < N * P; ++i)
    REQUIRE(a_out[i] == Approx(b_out[i]).margin(1e-12));
  for (std::size_t i = 0; i < N; ++i)
    REQUIRE(a_val[i] == Approx(b_val[i]).margin(1e-12));
  const auto g_out = random_vector(N * P, rng), g_val = random_vector(N, rng);
  net.zero_gradients();
  ref.zero_gradients();
  net.backward_unroll({g_out, g_val});
  ref.backward_unroll({g_out, g_val});
  std::size_t nonzero = 0;
  for (std::size_t i = 0; i < p.size(); ++i) {
    REQUIRE(net.gradients()[i] == Approx(ref.gradients()[i]).margin(1e-10));
    nonzero += net.gradients()[i] != 0.0;
  }
  CHECK(nonzero > p.size() / 2);
  check_inference_matches_unroll(net, d);
  return d;
}

TEST_CASE(
    "mlp_lstm_agent, the backend agent on the host, starts with the parameters of its "
    "composition of CPU parts and computes what it computes",
    "[parts][backend_agent]") {
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
  auto parts = mlp_parts_for<double>(c);
  // In float, as its float composition does.
  const seedrl::mlp_lstm_agent<float> single(c);
  const auto single_parts = mlp_parts_for<float>(c);
  REQUIRE(std::equal(single.parameters().begin(), single.parameters().end(),
                     single_parts.parameters().begin(), single_parts.parameters().end()));
  const auto d =
      check_same_agent(net, parts, false, static_cast<std::size_t>(c.continuous_action_size), 32);
  seedrl::random_generator rng(33);
  if (!c.separate_value_network)  // tiny towers leave dead ReLUs: the test above checks that
    check_gradients(net, d, rng);
  // A copy has the parameters.
  const seedrl::mlp_lstm_agent<double> copy(net);
  REQUIRE(std::equal(net.parameters().begin(), net.parameters().end(), copy.parameters().begin()));
}

TEST_CASE(
    "the pixel agents over the library's stacks are backend agents that start with the "
    "parameters of their composition of CPU parts and compute what it computes",
    "[parts][backend_agent][pixels]") {
  const bool channels_last = GENERATE(false, true);
  INFO("channels_last " << channels_last);
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
    seedrl::detail::pixel_parts_agent<double, seedrl::nature_cnn<double>> parts(c);
    check_same_agent(net, parts, true, 0, 42);
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
    seedrl::detail::pixel_parts_agent<double, seedrl::impala_resnet<double>> parts(c);
    check_same_agent(net, parts, true, 0, 44);
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
    seedrl::detail::pixel_parts_agent<double, seedrl::small_conv_pixel_torso<double>> parts(c);
    check_same_agent(net, parts, false, 0, 46);
  }
}
