// Pixel agents (Nature CNN + LSTM, IMPALA ResNet + LSTM) and learner-side frame stacking:
// forward against an independent float64 reference written from the papers' definitions
// (plain loops over the documented parameter layout), float64 central differences of
// backward_unroll, one-step inference against the unroll, resets, descriptions, and the
// frame stack's order, zeroing and unroll reconstruction checked on a probe network that
// echoes the stacks it is fed; and the real learner training a frame-stacked agent on single
// uint8 frames.
#include <algorithm>
#include <array>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "gradcheck.hpp"
#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/backend/detail/host_primitives.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/net/frame_stack.hpp"
#include "seedrl/net/impala_resnet_lstm_agent.hpp"
#include "seedrl/net/nature_cnn_lstm_agent.hpp"
#include "seedrl/net/network.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/runtime/actor.hpp"
#include "seedrl/runtime/learner.hpp"
#include "seedrl/train/backend_trainer.hpp"
#include "seedrl/train/pixel_lstm_recipe.hpp"
#include "seedrl/transport/in_process.hpp"
#include "tiny_conv_stack.hpp"

namespace {

using seedrl_test::dot;
using seedrl_test::gradcheck;
using seedrl_test::random_vector;
using seedrl_test::require_close;

// ---------------------------------------------------------------------------------------------
// A probe network for frame stacking: its logits are the stack it was fed, its value counts the
// steps since its own state was last reset, so the tests read both stacking and state handling.

struct probe_net {
  using scalar_type = double;
  using state_type = seedrl::recurrent_state<double>;
  using inference_input = seedrl::agent_step_input<double>;
  using inference_output = seedrl::agent_step_output<double>;
  using unroll_input = seedrl::agent_unroll_input<double>;
  using unroll_output = seedrl::agent_unroll_output<double>;
  using output_gradient = seedrl::agent_output_gradient<double>;

  std::ptrdiff_t obs = 0;  // stacked observation size = "number of actions"
  std::vector<double> params{0.0}, grads{0.0};

  explicit probe_net(std::ptrdiff_t observation_size) : obs(observation_size) {}
  std::ptrdiff_t state_size() const { return 1; }
  std::ptrdiff_t observation_size() const { return obs; }
  state_type initial_state(std::size_t b) const {
    return state_type(static_cast<std::ptrdiff_t>(b), 1);
  }
  std::span<double> parameters() { return params; }
  std::span<double> gradients() { return grads; }

  void infer(const inference_input& in, state_type& state, inference_output& out) {
    const std::size_t B = in.rewards.size(), n = static_cast<std::size_t>(obs);
    for (std::size_t b = 0; b < B; ++b) {
      double& s = state.data[b];
      s = (in.dones[b] ? 0.0 : s) + 1.0;
      out.values[b] = s;
      std::copy_n(in.observations.begin() + static_cast<std::ptrdiff_t>(b * n), n,
                  out.logits.begin() + static_cast<std::ptrdiff_t>(b * n));
    }
  }
  void forward_unroll(const unroll_input& in, unroll_output& out) {
    const std::size_t n = static_cast<std::size_t>(obs);
    std::copy_n(in.observations.begin(), in.steps * in.batch * n, out.logits.begin());
    for (std::size_t b = 0; b < in.batch; ++b) {
      double s = in.start_state[b];
      for (std::size_t t = 0; t < in.steps; ++t) {
        const std::size_t r = t * in.batch + b;
        s = (in.dones[r] ? 0.0 : s) + 1.0;
        out.values[r] = s;
      }
    }
  }
  void backward_unroll(const output_gradient&) {}
};

static_assert(seedrl::Network<seedrl::frame_stacked<probe_net>>);

/// Frame of env b at step t: element i is 1000*b + 10*t + i + 1 (never 0, so zeros are padding).
std::vector<double> frames_at(std::size_t t, std::size_t B, std::size_t F) {
  std::vector<double> v(B * F);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t i = 0; i < F; ++i)
      v[b * F + i] = 1000.0 * static_cast<double>(b) + 10.0 * static_cast<double>(t) +
                     static_cast<double>(i) + 1.0;
  return v;
}

}  // namespace

TEST_CASE("frame_stacked stacks oldest first, zeroes history at dones, sizes its state",
          "[pixel][frame_stack]") {
  const std::size_t F = 2, D = 4, B = 2;
  seedrl::frame_stacked<probe_net> net(
      seedrl::frame_stack_config{.height = 1, .width = 2, .channels = 1, .depth = 4},
      static_cast<std::ptrdiff_t>(D * F));
  CHECK(net.state_size() == 3 * 2 + 1);
  CHECK(net.observation_size() == 2);
  auto state = net.initial_state(B);
  CHECK(state.width == 7);
  std::vector<double> logits(B * D * F), values(B), rewards(B, 0.0);
  std::vector<std::int32_t> prev(B, 0);
  for (std::size_t t = 0; t < 7; ++t) {
    const auto obs = frames_at(t, B, F);
    // Both start at t = 0; env 0 starts a new episode at t = 5.
    const std::vector<std::uint8_t> dones{static_cast<std::uint8_t>(t == 0 || t == 5),
                                          static_cast<std::uint8_t>(t == 0)};
    seedrl::agent_step_output<double> out{logits, values};
    net.infer({obs, rewards, dones, prev}, state, out);
    for (std::size_t b = 0; b < B; ++b) {
      const std::size_t since = b == 0 && t >= 5 ? t - 5 : t;  // steps since the episode began
      for (std::size_t k = 0; k < D; ++k) {
        // Slot k holds frame t - (D-1-k), or zeros before the episode's first frame.
        const std::size_t back = D - 1 - k;
        const auto expected =
            back <= since ? frames_at(t - back, B, F) : std::vector<double>(B * F);
        for (std::size_t i = 0; i < F; ++i) {
          INFO("t " << t << " env " << b << " slot " << k);
          CHECK(logits[(b * D + k) * F + i] == expected[b * F + i]);
        }
      }
      CHECK(values[b] == static_cast<double>(since + 1));  // inner state reset with the frames
    }
  }
}

TEST_CASE("frame_stacked interleaves channels-last frames on the channel axis",
          "[pixel][frame_stack]") {
  // 1x2 pixels, 2 channels, 3 frames: the stack is H x W x (3*2), channel k*C + c of frame k.
  const std::size_t F = 4, D = 3;
  seedrl::frame_stacked<probe_net> net(
      seedrl::frame_stack_config{
          .height = 1, .width = 2, .channels = 2, .depth = 3, .channels_last = true},
      static_cast<std::ptrdiff_t>(D * F));
  auto state = net.initial_state(1);
  std::vector<double> logits(D * F), values(1), rewards(1, 0.0);
  std::vector<std::int32_t> prev(1, 0);
  std::vector<std::vector<double>> seen;
  for (std::size_t t = 0; t < 3; ++t) {
    const auto obs = frames_at(t, 1, F);  // frame t: [p0c0, p0c1, p1c0, p1c1]
    const std::vector<std::uint8_t> dones{static_cast<std::uint8_t>(t == 0)};
    seedrl::agent_step_output<double> out{logits, values};
    net.infer({obs, rewards, dones, prev}, state, out);
    seen.push_back(logits);
  }
  for (std::size_t p = 0; p < 2; ++p)
    for (std::size_t k = 0; k < D; ++k)
      for (std::size_t c = 0; c < 2; ++c)
        CHECK(seen[2][p * D * 2 + k * 2 + c] == frames_at(k, 1, F)[p * 2 + c]);
  // One step earlier the oldest frame slot was still zero.
  CHECK(seen[1][0] == 0.0);
  CHECK(seen[1][2] == frames_at(0, 1, F)[0]);
}

TEST_CASE("the frame stacking kernels' host row copies match their element bodies",
          "[pixel][frame_stack]") {
  // The host copies whole frames; a GPU runs the element bodies. Every layout (stacks on the
  // channel axis or not, the agent's HWC to CHW transpose), depth 1 to 4, a scale, episode starts
  // in the start state's window and in the unroll.
  const seedrl::detail::host_primitives host;
  seedrl::random_generator rng(11);
  for (const std::size_t D : {1, 2, 4})
    for (const std::size_t C : {1, 3})
      for (const bool stack_last : {false, true})
        for (const bool agent_last : {false, true}) {
          INFO("depth " << D << ", channels " << C << ", stack channels_last " << stack_last
                        << ", agent channels_last " << agent_last);
          const std::size_t P = 6, F = P * C, T1 = 5, B = 3, W = (D - 1) * F + 2;
          const auto obs = random_vector(static_cast<std::ptrdiff_t>(T1 * B * F), rng);
          const auto start = random_vector(static_cast<std::ptrdiff_t>(B * W), rng);
          std::vector<std::uint8_t> dones(T1 * B, 0);
          dones[1] = dones[2 * B + 2] = dones[3 * B] = 1;
          const double scale = 0.5;
          std::vector<double> fast(T1 * B * D * F, -1.0), slow(fast.size(), -2.0);
          const seedrl::detail::frame_stack_input_kernel<double> k{
              fast.data(), obs.data(), start.data(), W, dones.data(), B,    D, C,
              P,           stack_last, D * C,        P, agent_last,   scale};
          host.for_each(fast.size(), k);
          auto slow_k = k;
          slow_k.x = slow.data();
          for (std::size_t i = 0; i < slow.size(); ++i)
            slow_k(i);
          CHECK(fast == slow);
          if (D == 1)
            continue;
          // The history's shift for one step, apart and in place.
          std::vector<double> next(B * W, -1.0), in_place = start, element(B * W, -1.0);
          const seedrl::detail::frame_history_step_kernel<double> h{
              start.data(), W, dones.data() + B, obs.data(), F, D - 1, next.data(), W};
          host.for_each(B * (D - 1) * F, h);
          auto h_slow = h;
          h_slow.next = element.data();
          for (std::size_t i = 0; i < B * (D - 1) * F; ++i)
            h_slow(i);
          CHECK(next == element);
          auto h_place = h;
          h_place.before = in_place.data();
          h_place.next = in_place.data();
          host.for_each(B * (D - 1) * F, h_place);
          for (std::size_t b = 0; b < B; ++b)
            for (std::size_t e = 0; e < (D - 1) * F; ++e)
              CHECK(in_place[b * W + e] == element[b * W + e]);
        }
}

TEST_CASE("frame_stacked rebuilds the stacks of an unroll from single frames",
          "[pixel][frame_stack]") {
  // Run infer step by step, remember the state before each step, then replay windows of the
  // same steps as unrolls from those start states: every output must match, across dones.
  for (const bool channels_last : {false, true}) {
    INFO("channels_last " << channels_last);
    const std::size_t D = 4, B = 3, steps = 12, T1 = 5;
    const seedrl::frame_stack_config fc{
        .height = 2, .width = 1, .channels = 2, .depth = 4, .channels_last = channels_last};
    const std::size_t F = 4;
    seedrl::frame_stacked<probe_net> net(fc, static_cast<std::ptrdiff_t>(D * F));
    seedrl::random_generator rng(3);
    std::vector<double> all_obs, rewards(steps * B, 0.0), logits(steps * B * D * F),
        values(steps * B), starts;
    std::vector<std::uint8_t> dones(steps * B);
    std::vector<std::int32_t> prev(steps * B, 0);
    for (std::size_t t = 0; t < steps; ++t) {
      const auto f = frames_at(t, B, F);
      all_obs.insert(all_obs.end(), f.begin(), f.end());
      for (std::size_t b = 0; b < B; ++b)
        dones[t * B + b] = t == 0 || rng.below(4) == 0;
    }
    auto state = net.initial_state(B);
    for (std::size_t t = 0; t < steps; ++t) {
      starts.insert(starts.end(), state.data.begin(), state.data.end());
      seedrl::agent_step_output<double> out{std::span(logits).subspan(t * B * D * F, B * D * F),
                                            std::span(values).subspan(t * B, B)};
      net.infer({std::span<const double>(all_obs).subspan(t * B * F, B * F),
                 std::span<const double>(rewards).subspan(t * B, B),
                 std::span<const std::uint8_t>(dones).subspan(t * B, B),
                 std::span<const std::int32_t>(prev).subspan(t * B, B)},
                state, out);
    }
    const std::size_t W = static_cast<std::size_t>(net.state_size());
    for (std::size_t t0 = 0; t0 + T1 <= steps; t0 += 2) {
      std::vector<double> u_logits(T1 * B * D * F), u_values(T1 * B);
      seedrl::agent_unroll_output<double> out{u_logits, u_values};
      net.forward_unroll({T1, B, std::span<const double>(all_obs).subspan(t0 * B * F, T1 * B * F),
                          std::span<const double>(rewards).subspan(t0 * B, T1 * B),
                          std::span<const std::uint8_t>(dones).subspan(t0 * B, T1 * B),
                          std::span<const std::int32_t>(prev).subspan(t0 * B, T1 * B),
                          std::span<const double>(starts).subspan(t0 * B * W, B * W)},
                         out);
      INFO("unroll from step " << t0);
      CHECK(std::equal(u_logits.begin(), u_logits.end(),
                       logits.begin() + static_cast<std::ptrdiff_t>(t0 * B * D * F)));
      CHECK(std::equal(u_values.begin(), u_values.end(),
                       values.begin() + static_cast<std::ptrdiff_t>(t0 * B)));
    }
  }
}

TEST_CASE("frame_stacked refuses a mismatched inner network and a wrong state",
          "[pixel][frame_stack]") {
  CHECK_THROWS_AS(seedrl::frame_stacked<probe_net>(
                      seedrl::frame_stack_config{.height = 2, .width = 2, .depth = 4}, 12),
                  std::invalid_argument);
  seedrl::frame_stacked<probe_net> net(seedrl::frame_stack_config{.height = 1, .width = 1}, 4);
  auto state = net.initial_state(1);
  state.width = 2;
  std::vector<double> obs(1), logits(4), values(1), rewards(1);
  std::vector<std::uint8_t> dones(1);
  std::vector<std::int32_t> prev(1);
  seedrl::agent_step_output<double> out{logits, values};
  CHECK_THROWS_AS(net.infer({obs, rewards, dones, prev}, state, out), std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// An independent float64 reference of the pixel agents' forward pass, written from the
// definitions (Nature DQN, IMPALA, PyTorch's LSTM gate order) over the documented parameter
// layout: torso, dense, LSTM [W_ih | W_hh] then b, policy, value.

namespace ref {

struct image {
  std::ptrdiff_t c = 0, h = 0, w = 0;
  std::vector<double> v;
  double& at(std::ptrdiff_t ch, std::ptrdiff_t y, std::ptrdiff_t x) {
    return v[static_cast<std::size_t>((ch * h + y) * w + x)];
  }
  double at(std::ptrdiff_t ch, std::ptrdiff_t y, std::ptrdiff_t x) const {
    return v[static_cast<std::size_t>((ch * h + y) * w + x)];
  }
};

/// Reads consecutive parameters.
struct reader {
  const double* p;
  double next() { return *p++; }
};

image conv(const image& in, std::ptrdiff_t out_c, std::ptrdiff_t k, std::ptrdiff_t stride,
           std::ptrdiff_t pad, reader& r) {
  std::vector<double> w(static_cast<std::size_t>(out_c * in.c * k * k)),
      b(static_cast<std::size_t>(out_c));
  for (auto& x : w)
    x = r.next();
  for (auto& x : b)
    x = r.next();
  image o{out_c, (in.h + 2 * pad - k) / stride + 1, (in.w + 2 * pad - k) / stride + 1, {}};
  o.v.assign(static_cast<std::size_t>(o.c * o.h * o.w), 0.0);
  for (std::ptrdiff_t oc = 0; oc < o.c; ++oc)
    for (std::ptrdiff_t y = 0; y < o.h; ++y)
      for (std::ptrdiff_t x = 0; x < o.w; ++x) {
        double s = b[static_cast<std::size_t>(oc)];
        for (std::ptrdiff_t ic = 0; ic < in.c; ++ic)
          for (std::ptrdiff_t ky = 0; ky < k; ++ky)
            for (std::ptrdiff_t kx = 0; kx < k; ++kx) {
              const std::ptrdiff_t iy = y * stride - pad + ky, ix = x * stride - pad + kx;
              if (iy >= 0 && iy < in.h && ix >= 0 && ix < in.w)
                s += w[static_cast<std::size_t>(((oc * in.c + ic) * k + ky) * k + kx)] *
                     in.at(ic, iy, ix);
            }
        o.at(oc, y, x) = s;
      }
  return o;
}

image max_pool_3x3_s2_p1(const image& in) {
  image o{in.c, (in.h + 2 - 3) / 2 + 1, (in.w + 2 - 3) / 2 + 1, {}};
  o.v.assign(static_cast<std::size_t>(o.c * o.h * o.w), 0.0);
  for (std::ptrdiff_t c = 0; c < o.c; ++c)
    for (std::ptrdiff_t y = 0; y < o.h; ++y)
      for (std::ptrdiff_t x = 0; x < o.w; ++x) {
        double m = -std::numeric_limits<double>::infinity();
        for (std::ptrdiff_t iy = 2 * y - 1; iy <= 2 * y + 1; ++iy)
          for (std::ptrdiff_t ix = 2 * x - 1; ix <= 2 * x + 1; ++ix)
            if (iy >= 0 && iy < in.h && ix >= 0 && ix < in.w)
              m = std::max(m, in.at(c, iy, ix));
        o.at(c, y, x) = m;
      }
  return o;
}

void relu(image& a) {
  for (auto& x : a.v)
    x = std::max(x, 0.0);
}

std::vector<double> dense(const std::vector<double>& x, std::size_t out, reader& r) {
  std::vector<double> w(out * x.size()), y(out);
  for (auto& v : w)
    v = r.next();
  for (std::size_t o = 0; o < out; ++o) {
    double s = 0.0;
    for (std::size_t i = 0; i < x.size(); ++i)
      s += w[o * x.size() + i] * x[i];
    y[o] = s;
  }
  for (auto& v : y)
    v += r.next();
  return y;
}

double sigmoid(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}

/// The agent's whole forward over an unroll, from pixels (0..255, CHW) to logits and values.
template <class Torso>
void agent_forward(const double* params, const Torso& torso, std::ptrdiff_t C, std::ptrdiff_t H,
                   std::ptrdiff_t W, std::size_t dense_size, std::size_t lstm_size, std::size_t A,
                   double clip, std::size_t T1, std::size_t B, const std::vector<double>& obs,
                   const std::vector<double>& rewards, const std::vector<std::uint8_t>& dones,
                   const std::vector<std::int32_t>& prev, const std::vector<double>& start,
                   std::vector<double>& logits, std::vector<double>& values) {
  const std::size_t n = static_cast<std::size_t>(C * H * W), L = lstm_size;
  std::vector<double> h(B * L), c(B * L);
  for (std::size_t b = 0; b < B; ++b)
    for (std::size_t j = 0; j < L; ++j) {
      h[b * L + j] = start[b * 2 * L + j];
      c[b * L + j] = start[b * 2 * L + L + j];
    }
  logits.assign(T1 * B * A, 0.0);
  values.assign(T1 * B, 0.0);
  for (std::size_t t = 0; t < T1; ++t) {
    for (std::size_t b = 0; b < B; ++b) {
      const std::size_t row = t * B + b;
      reader r{params};
      image x{C, H, W,
              std::vector<double>(obs.begin() + static_cast<std::ptrdiff_t>(row * n),
                                  obs.begin() + static_cast<std::ptrdiff_t>((row + 1) * n))};
      for (auto& v : x.v)
        v /= 255.0;
      const image features = torso(x, r);
      auto d = dense(features.v, dense_size, r);
      for (auto& v : d)
        v = std::max(v, 0.0);
      // An episode start reads reward 0 and no previous action.
      d.push_back(dones[row] ? 0.0 : std::clamp(rewards[row], -clip, clip));
      for (std::size_t a = 0; a < A; ++a)
        d.push_back(!dones[row] && prev[row] == static_cast<std::int32_t>(a) ? 1.0 : 0.0);
      if (dones[row]) {
        std::fill_n(h.begin() + static_cast<std::ptrdiff_t>(b * L), L, 0.0);
        std::fill_n(c.begin() + static_cast<std::ptrdiff_t>(b * L), L, 0.0);
      }
      // LSTM: z = W [x, h] + b, gates i, f, g, o.
      std::vector<double> xh = d;
      xh.insert(xh.end(), h.begin() + static_cast<std::ptrdiff_t>(b * L),
                h.begin() + static_cast<std::ptrdiff_t>((b + 1) * L));
      const auto z = dense(xh, 4 * L, r);
      for (std::size_t j = 0; j < L; ++j) {
        const double i = sigmoid(z[j]), f = sigmoid(z[L + j]), g = std::tanh(z[2 * L + j]),
                     o = sigmoid(z[3 * L + j]);
        c[b * L + j] = f * c[b * L + j] + i * g;
        h[b * L + j] = o * std::tanh(c[b * L + j]);
      }
      const std::vector<double> hb(h.begin() + static_cast<std::ptrdiff_t>(b * L),
                                   h.begin() + static_cast<std::ptrdiff_t>((b + 1) * L));
      const auto lg = dense(hb, A, r);
      std::copy(lg.begin(), lg.end(), logits.begin() + static_cast<std::ptrdiff_t>(row * A));
      values[row] = dense(hb, 1, r)[0];
    }
  }
}

struct nature_torso {
  std::array<std::ptrdiff_t, 3> ch;
  image operator()(const image& x, reader& r) const {
    image a = conv(x, ch[0], 8, 4, 0, r);
    relu(a);
    image b = conv(a, ch[1], 4, 2, 0, r);
    relu(b);
    image c = conv(b, ch[2], 3, 1, 0, r);
    relu(c);
    return c;
  }
};

struct impala_torso {
  std::vector<std::ptrdiff_t> ch;
  std::ptrdiff_t blocks;
  image operator()(const image& x, reader& r) const {
    image z = x;
    for (std::ptrdiff_t out : ch) {
      z = max_pool_3x3_s2_p1(conv(z, out, 3, 1, 1, r));
      for (std::ptrdiff_t k = 0; k < blocks; ++k) {
        image a = z;
        relu(a);
        image u = conv(a, out, 3, 1, 1, r);
        relu(u);
        const image v = conv(u, out, 3, 1, 1, r);
        for (std::size_t i = 0; i < z.v.size(); ++i)
          z.v[i] += v.v[i];
      }
    }
    relu(z);
    return z;
  }
};

}  // namespace ref

namespace {

struct pixel_unroll {
  std::size_t T1, B;
  std::vector<double> obs, rewards, start;
  std::vector<std::uint8_t> dones;
  std::vector<std::int32_t> prev;
  seedrl::agent_unroll_input<double> input() const {
    return {T1, B, obs, rewards, dones, prev, start};
  }
};

/// Integer pixels 0..255, rewards beyond the clip, dones about one step in three.
template <class Net>
pixel_unroll make_pixel_unroll(const Net& net, std::size_t T1, std::size_t B,
                               seedrl::random_generator& rng) {
  pixel_unroll d{T1, B, {}, {}, {}, {}, {}};
  d.obs.resize(T1 * B * static_cast<std::size_t>(net.observation_size()));
  for (auto& x : d.obs)
    x = static_cast<double>(rng.below(256));
  d.rewards = random_vector(T1 * B, rng, 3.0);
  d.start = random_vector(B * static_cast<std::size_t>(net.state_size()), rng, 0.5);
  for (std::size_t i = 0; i < T1 * B; ++i) {
    d.dones.push_back(i >= B && rng.below(3) == 0);
    d.prev.push_back(static_cast<std::int32_t>(rng.below(net.num_actions())));
  }
  return d;
}

seedrl::nature_cnn_lstm_agent_config tiny_nature() {
  seedrl::nature_cnn_lstm_agent_config c;
  c.height = 36;  // the smallest image the three convolutions fit: 36 -> 8 -> 3 -> 1
  c.width = 40;
  c.channels = 2;
  c.num_actions = 3;
  c.torso.channels = {2, 3, 2};
  c.dense_size = 4;
  c.lstm_size = 3;
  c.max_abs_input_reward = 1.0;
  c.seed = 5;
  return c;
}

seedrl::impala_resnet_lstm_agent_config tiny_impala() {
  auto c = seedrl::impala_resnet_lstm_agent_defaults();
  c.height = 9;
  c.width = 8;
  c.channels = 2;
  c.num_actions = 3;
  c.torso.channels = {2, 3};
  c.torso.blocks_per_stack = 1;
  c.dense_size = 4;
  c.lstm_size = 3;
  c.max_abs_input_reward = 1.0;
  c.seed = 6;
  return c;
}

/// Reference forward for either agent.
void reference_forward(seedrl::nature_cnn_lstm_agent<double>& net, const pixel_unroll& d,
                       std::vector<double>& logits, std::vector<double>& values) {
  const auto& c = net.config();
  ref::agent_forward(net.parameters().data(), ref::nature_torso{c.torso.channels}, c.channels,
                     c.height, c.width, static_cast<std::size_t>(c.dense_size),
                     static_cast<std::size_t>(c.lstm_size), static_cast<std::size_t>(c.num_actions),
                     *c.max_abs_input_reward, d.T1, d.B, d.obs, d.rewards, d.dones, d.prev, d.start,
                     logits, values);
}
void reference_forward(seedrl::impala_resnet_lstm_agent<double>& net, const pixel_unroll& d,
                       std::vector<double>& logits, std::vector<double>& values) {
  const auto& c = net.config();
  ref::agent_forward(net.parameters().data(),
                     ref::impala_torso{c.torso.channels, c.torso.blocks_per_stack}, c.channels,
                     c.height, c.width, static_cast<std::size_t>(c.dense_size),
                     static_cast<std::size_t>(c.lstm_size), static_cast<std::size_t>(c.num_actions),
                     *c.max_abs_input_reward, d.T1, d.B, d.obs, d.rewards, d.dones, d.prev, d.start,
                     logits, values);
}

/// Larger-than-default parameters so that ReLUs and the LSTM see non-trivial inputs.
template <class Net>
void spread_parameters(Net& net, std::uint64_t seed) {
  seedrl::random_generator rng(seed);
  for (auto& p : net.parameters())
    p = rng.uniform(-0.5, 0.5);
}

/// The gradients of a random linear function of the unroll's outputs, checked against central
/// differences; returned for further checks.
template <class Net>
std::vector<double> check_unroll_gradients(Net& net, const pixel_unroll& d,
                                           seedrl::random_generator& rng) {
  const std::size_t N = d.T1 * d.B, A = static_cast<std::size_t>(net.policy_size());
  std::vector<double> logits(N * A), values(N);
  seedrl::agent_unroll_output<double> out{logits, values};
  const auto g_logits = random_vector(N * A, rng);
  const auto g_values = random_vector(N, rng);
  auto loss = [&] {
    net.forward_unroll(d.input(), out);
    return dot(logits, g_logits) + dot(values, g_values);
  };
  loss();
  net.zero_gradients();
  net.backward_unroll({g_logits, g_values});
  const std::vector<double> analytic(net.gradients().begin(), net.gradients().end());
  require_close(gradcheck(net.parameters(), analytic, loss));
  return analytic;
}

/// Step-by-step inference from the unroll's start states reproduces the unroll.
template <class Net>
void check_steps_match_unroll(Net& net, const pixel_unroll& d) {
  const std::size_t T1 = d.T1, B = d.B, A = static_cast<std::size_t>(net.policy_size()),
                    n = static_cast<std::size_t>(net.observation_size());
  std::vector<double> logits(T1 * B * A), values(T1 * B);
  seedrl::agent_unroll_output<double> out{logits, values};
  net.forward_unroll(d.input(), out);
  auto state = net.initial_state(B);
  std::copy(d.start.begin(), d.start.end(), state.data.begin());
  std::vector<double> step_logits(B * A), step_values(B);
  for (std::size_t t = 0; t < T1; ++t) {
    const std::size_t r = t * B;
    seedrl::agent_step_output<double> step_out{step_logits, step_values};
    net.infer({std::span<const double>(d.obs).subspan(r * n, B * n),
               std::span<const double>(d.rewards).subspan(r, B),
               std::span<const std::uint8_t>(d.dones).subspan(r, B),
               std::span<const std::int32_t>(d.prev).subspan(r, B)},
              state, step_out);
    for (std::size_t i = 0; i < B * A; ++i)
      REQUIRE(step_logits[i] == Approx(logits[r * A + i]).margin(1e-12));
    for (std::size_t b = 0; b < B; ++b)
      REQUIRE(step_values[b] == Approx(values[r + b]).margin(1e-12));
  }
}

}  // namespace

TEMPLATE_TEST_CASE("pixel agents match an independent float64 forward and central differences",
                   "[pixel][gradcheck]", seedrl::nature_cnn_lstm_agent<double>,
                   seedrl::impala_resnet_lstm_agent<double>) {
  const auto config = [] {
    if constexpr (std::is_same_v<TestType, seedrl::nature_cnn_lstm_agent<double>>)
      return tiny_nature();
    else
      return tiny_impala();
  }();
  TestType net(config);
  spread_parameters(net, 9);
  seedrl::random_generator rng(10);
  const std::size_t T1 = 4, B = 2, A = 3, N = T1 * B;
  const auto d = make_pixel_unroll(net, T1, B, rng);
  std::vector<double> logits(N * A), values(N), ref_logits, ref_values;
  seedrl::agent_unroll_output<double> out{logits, values};
  net.forward_unroll(d.input(), out);
  reference_forward(net, d, ref_logits, ref_values);
  for (std::size_t i = 0; i < N * A; ++i)
    REQUIRE(logits[i] == Approx(ref_logits[i]).margin(1e-12));
  for (std::size_t i = 0; i < N; ++i)
    REQUIRE(values[i] == Approx(ref_values[i]).margin(1e-12));

  const auto analytic = check_unroll_gradients(net, d, rng);
  // No dead unit hides a path: each output channel of the first convolution gets gradient.
  const std::ptrdiff_t kernel = std::is_same_v<TestType, seedrl::nature_cnn_lstm_agent<double>>
                                    ? config.channels * 8 * 8
                                    : config.channels * 3 * 3;
  for (std::ptrdiff_t o = 0; o < config.torso.channels[0]; ++o) {
    INFO("first convolution, output channel " << o);
    CHECK(std::any_of(analytic.begin() + o * kernel, analytic.begin() + (o + 1) * kernel,
                      [](double g) { return g != 0.0; }));
  }
}

TEMPLATE_TEST_CASE("pixel agents: one-step inference reproduces the unroll, resets at done",
                   "[pixel]", seedrl::nature_cnn_lstm_agent<double>,
                   seedrl::impala_resnet_lstm_agent<double>) {
  const auto config = [] {
    if constexpr (std::is_same_v<TestType, seedrl::nature_cnn_lstm_agent<double>>)
      return tiny_nature();
    else
      return tiny_impala();
  }();
  TestType net(config);
  spread_parameters(net, 11);
  seedrl::random_generator rng(12);
  const std::size_t A = 3, n = static_cast<std::size_t>(net.observation_size());
  const auto d = make_pixel_unroll(net, 6, 3, rng);
  check_steps_match_unroll(net, d);
  // At done, whatever state came in is replaced by zeros.
  auto zero = net.initial_state(1), junk = net.initial_state(1);
  for (auto& x : junk.data)
    x = rng.uniform(-1.0, 1.0);
  std::vector<double> l0(A), v0(A), l1(A), v1(A);
  const std::vector<std::uint8_t> done{1};
  const std::span<const double> obs0 = std::span<const double>(d.obs).first(n);
  const std::span<const double> rew0 = std::span<const double>(d.rewards).first(1);
  const std::span<const std::int32_t> prev0 = std::span<const std::int32_t>(d.prev).first(1);
  seedrl::agent_step_output<double> o0{l0, std::span(v0).first(1)}, o1{l1, std::span(v1).first(1)};
  net.infer({obs0, rew0, done, prev0}, zero, o0);
  net.infer({obs0, rew0, done, prev0}, junk, o1);
  CHECK(l0 == l1);
  CHECK(v0[0] == v1[0]);
  CHECK(zero.data == junk.data);
}

TEST_CASE("pixel agent reads channels-last pixels as their channels-first transpose", "[pixel]") {
  auto c = tiny_nature();
  seedrl::nature_cnn_lstm_agent<double> chw(c);
  c.channels_last = true;
  seedrl::nature_cnn_lstm_agent<double> hwc(c);
  seedrl::random_generator rng(13);
  const auto d = make_pixel_unroll(chw, 2, 2, rng);
  auto d_hwc = d;
  const std::ptrdiff_t C = c.channels, P = c.height * c.width;
  for (std::size_t r = 0; r < 4; ++r)
    for (std::ptrdiff_t ch = 0; ch < C; ++ch)
      for (std::ptrdiff_t p = 0; p < P; ++p)
        d_hwc.obs[r * static_cast<std::size_t>(C * P) + static_cast<std::size_t>(p * C + ch)] =
            d.obs[r * static_cast<std::size_t>(C * P) + static_cast<std::size_t>(ch * P + p)];
  std::vector<double> l1(12), v1(4), l2(12), v2(4);
  seedrl::agent_unroll_output<double> o1{l1, v1}, o2{l2, v2};
  chw.forward_unroll(d.input(), o1);
  hwc.forward_unroll(d_hwc.input(), o2);
  for (std::size_t i = 0; i < 12; ++i)
    CHECK(l1[i] == Approx(l2[i]).margin(1e-13));
}

TEST_CASE(
    "a user's own conv stack (backend_conv_stack) is a pixel agent: gradients, inference, "
    "description, and the recipe trainer trains it as host_trainer does",
    "[pixel][gradcheck]") {
  // test/tiny_conv_stack.hpp: one 3x3 convolution with tanh, written over the backend and
  // named to the library only through backend_conv_stack.
  using agent_t = seedrl::pixel_lstm_agent<double, seedrl_test::tiny_conv<double>>;
  seedrl::pixel_lstm_agent_config<seedrl_test::tiny_conv_config> c;
  c.height = 6;
  c.width = 5;
  c.channels = 2;
  c.num_actions = 3;
  c.torso.out_channels = 2;
  c.dense_size = 4;
  c.lstm_size = 3;
  c.seed = 5;
  for (const bool channels_last : {false, true}) {
    CAPTURE(channels_last);
    c.channels_last = channels_last;
    agent_t net(c);
    // Layout: the stack's W [2, 2, 3, 3] and b, the dense layer over 2 x 4 x 3 features, the
    // LSTM, the heads.
    CHECK(net.parameters().size() ==
          (2 * 2 * 9 + 2) + (4 * 24 + 4) + 4 * 3 * (4 + 1 + 3 + 3 + 1) + (3 * 3 + 3) + (3 + 1));
    spread_parameters(net, 21);
    seedrl::random_generator rng(22);
    const auto d = make_pixel_unroll(net, 3, 2, rng);
    const auto analytic = check_unroll_gradients(net, d, rng);
    // Every parameter of the stack (W [2, 2, 3, 3] and b) gets gradient through the tanh.
    CHECK(std::all_of(analytic.begin(), analytic.begin() + 38, [](double g) { return g != 0.0; }));
    check_steps_match_unroll(net, d);
  }
  // Its description names it and reads back.
  const std::string text = seedrl::describe(c);
  CHECK(text.rfind("tiny_conv_lstm_agent height=6 width=5 channels=2 channels_last=1 actions=3 "
                   "tiny_out=2 ",
                   0) == 0);
  const auto back = seedrl::parse_pixel_lstm_agent_description<seedrl_test::tiny_conv_config>(
      text, seedrl_test::set_tiny_conv_field);
  CHECK(seedrl::describe(back) == text);
  // A shape the stack refuses, with the agent's name.
  auto small = c;
  small.height = 2;
  CHECK_THROWS_WITH(agent_t(small), Catch::Contains("tiny conv stack needs"));

  // Frame-stacked and trained through the recipe trainer (what a GPU runs) and by host_trainer.
  using stacked_t = seedrl::frame_stacked<agent_t>;
  const seedrl::frame_stack_config stack{.height = 6, .width = 5, .channels = 1, .depth = 2};
  c.channels_last = false;
  stacked_t ref(stack, c), net(ref);
  seedrl::host_trainer host;
  seedrl::backend_trainer<double, seedrl::pixel_lstm_recipe<seedrl_test::tiny_conv_config>> recipe;
  seedrl::adam_config a;
  a.learning_rate = 3e-3;
  seedrl::adam<double> opt_a(a), opt_b(a);
  const seedrl::impala_loss<double> impala{seedrl::impala_loss_config<double>{}};
  seedrl::random_generator rng(23);
  const std::size_t T = 3, B = 2, rows = (T + 1) * B,
                    W = static_cast<std::size_t>(net.state_size());
  for (int step = 0; step < 3; ++step) {
    CAPTURE(step);
    std::vector<double> obs(rows * 30), rewards = random_vector(rows, rng, 2.0), behaviour(rows),
                                        start = random_vector(B * W, rng, 0.5);
    for (auto& x : obs)
      x = static_cast<double>(rng.below(256));
    for (auto& x : behaviour)
      x = rng.uniform(-2.0, -0.1);
    std::vector<std::uint8_t> dones(rows), truncated(rows, 0);
    std::vector<std::int32_t> prev(rows), actions(rows);
    for (std::size_t i = 0; i < rows; ++i) {
      dones[i] = rng.below(4) == 0;
      prev[i] = static_cast<std::int32_t>(rng.below(3));
      actions[i] = static_cast<std::int32_t>(rng.below(3));
    }
    const seedrl::training_batch<double> batch{T,         B,    3,       obs,       rewards, dones,
                                               truncated, prev, actions, behaviour, start};
    const auto want = host.train_step(batch, ref, opt_a, impala, 40.0);
    const auto got = recipe.train_step(batch, net, opt_b, impala, 40.0);
    CHECK(got.grad_norm == Approx(want.grad_norm).epsilon(1e-9));
    for (std::size_t i = 0; i < net.parameters().size(); ++i)
      REQUIRE(net.parameters()[i] == Approx(ref.parameters()[i]).margin(1e-9));
  }
}

TEST_CASE("frame_stacked Nature agent: gradients, and inference against the unroll",
          "[pixel][frame_stack][gradcheck]") {
  auto c = tiny_nature();
  c.channels = 4;  // 4 single-channel frames
  c.torso.channels = {2, 2, 2};
  using net_t = seedrl::frame_stacked<seedrl::nature_cnn_lstm_agent<double>>;
  net_t net(seedrl::frame_stack_config{.height = 36, .width = 40, .channels = 1, .depth = 4}, c);
  spread_parameters(net, 14);
  CHECK(net.state_size() == 3 * 36 * 40 + 2 * 3);
  seedrl::random_generator rng(15);
  const std::size_t B = 2, steps = 7, T1 = 4, A = 3, F = 36 * 40;
  std::vector<double> obs(steps * B * F), rewards = random_vector(steps * B, rng), starts,
                                          logits(steps * B * A), values(steps * B);
  for (auto& x : obs)
    x = static_cast<double>(rng.below(256));
  std::vector<std::uint8_t> dones(steps * B);
  std::vector<std::int32_t> prev(steps * B);
  for (std::size_t i = 0; i < steps * B; ++i) {
    dones[i] = i < B || rng.below(4) == 0;
    prev[i] = static_cast<std::int32_t>(rng.below(A));
  }
  auto state = net.initial_state(B);
  for (std::size_t t = 0; t < steps; ++t) {
    starts.insert(starts.end(), state.data.begin(), state.data.end());
    seedrl::agent_step_output<double> out{std::span(logits).subspan(t * B * A, B * A),
                                          std::span(values).subspan(t * B, B)};
    net.infer({std::span<const double>(obs).subspan(t * B * F, B * F),
               std::span<const double>(rewards).subspan(t * B, B),
               std::span<const std::uint8_t>(dones).subspan(t * B, B),
               std::span<const std::int32_t>(prev).subspan(t * B, B)},
              state, out);
  }
  const std::size_t W = static_cast<std::size_t>(net.state_size()), t0 = 3;
  const seedrl::agent_unroll_input<double> in{
      T1,
      B,
      std::span<const double>(obs).subspan(t0 * B * F, T1 * B * F),
      std::span<const double>(rewards).subspan(t0 * B, T1 * B),
      std::span<const std::uint8_t>(dones).subspan(t0 * B, T1 * B),
      std::span<const std::int32_t>(prev).subspan(t0 * B, T1 * B),
      std::span<const double>(starts).subspan(t0 * B * W, B * W)};
  std::vector<double> u_logits(T1 * B * A), u_values(T1 * B);
  seedrl::agent_unroll_output<double> out{u_logits, u_values};
  net.forward_unroll(in, out);
  for (std::size_t i = 0; i < T1 * B * A; ++i)
    REQUIRE(u_logits[i] == Approx(logits[t0 * B * A + i]).margin(1e-12));
  for (std::size_t i = 0; i < T1 * B; ++i)
    REQUIRE(u_values[i] == Approx(values[t0 * B + i]).margin(1e-12));

  const auto g_logits = random_vector(T1 * B * A, rng);
  const auto g_values = random_vector(T1 * B, rng);
  auto loss = [&] {
    net.forward_unroll(in, out);
    return dot(u_logits, g_logits) + dot(u_values, g_values);
  };
  loss();
  net.zero_gradients();
  net.backward_unroll({g_logits, g_values});
  const std::vector<double> analytic(net.gradients().begin(), net.gradients().end());
  // The stacks reach the network only through the first convolution, whose gradient depends on
  // them: check half its first kernel (frames 0 and 1), and the last parameters (LSTM and
  // heads). The unstacked agent's test checks every parameter; this one stays fast at -O0.
  const std::size_t head = 128, tail = 60;
  require_close(gradcheck(net.parameters().first(head), std::span(analytic).first(head), loss));
  require_close(gradcheck(net.parameters().last(tail), std::span(analytic).last(tail), loss));
}

TEST_CASE("pixel agent descriptions round trip and bad ones are refused", "[pixel]") {
  auto n = tiny_nature();
  n.channels_last = true;
  n.max_abs_input_reward.reset();
  const auto n_back = seedrl::parse_nature_cnn_lstm_agent_description(seedrl::describe(n));
  CHECK(seedrl::describe(n_back) == seedrl::describe(n));
  CHECK(n_back.torso.channels == n.torso.channels);
  CHECK(n_back.channels_last);
  CHECK(!n_back.max_abs_input_reward);
  CHECK(n_back.observation_scale == n.observation_scale);  // exact: shortest round-trip form
  const seedrl::nature_cnn_lstm_agent_config defaults;
  CHECK(seedrl::describe(defaults) ==
        "nature_cnn_lstm_agent height=84 width=84 channels=4 channels_last=0 actions=6 "
        "convs=32,64,64 dense=512 lstm=512 max_abs_input_reward=1 scale=0.00392156862745098");

  const auto i = tiny_impala();
  const auto i_back = seedrl::parse_impala_resnet_lstm_agent_description(seedrl::describe(i));
  CHECK(seedrl::describe(i_back) == seedrl::describe(i));
  CHECK(i_back.torso.channels == i.torso.channels);
  CHECK(i_back.torso.blocks_per_stack == 1);
  CHECK(i_back.max_abs_input_reward == 1.0);
  CHECK(seedrl::describe(seedrl::impala_resnet_lstm_agent_defaults())
            .find("stacks=16,32,32 blocks=2 dense=256 lstm=256") != std::string::npos);

  const std::string good = seedrl::describe(defaults);
  for (const std::string& bad :
       {std::string("mlp_lstm_agent obs=4"), good + " extra=1", good.substr(0, good.size() - 30),
        std::string("nature_cnn_lstm_agentx height=84"),
        std::string("nature_cnn_lstm_agent height=84 height=84"),
        seedrl::describe(seedrl::impala_resnet_lstm_agent_defaults())}) {
    INFO(bad);
    CHECK_THROWS_AS(seedrl::parse_nature_cnn_lstm_agent_description(bad), std::invalid_argument);
  }
  std::string bad_convs = good;
  bad_convs.replace(bad_convs.find("convs=32,64,64"), 14, "convs=32,64");
  CHECK_THROWS_AS(seedrl::parse_nature_cnn_lstm_agent_description(bad_convs),
                  std::invalid_argument);
}

TEST_CASE("pixel agents refuse images too small and bad inputs", "[pixel]") {
  auto c = tiny_nature();
  c.height = 35;
  CHECK_THROWS_AS(seedrl::nature_cnn_lstm_agent<float>(c), std::invalid_argument);
  seedrl::nature_cnn_lstm_agent<float> net(tiny_nature());
  auto state = net.initial_state(1);
  std::vector<float> obs(static_cast<std::size_t>(net.observation_size())), logits(3), values(1),
      rewards(1);
  std::vector<std::uint8_t> dones(1);
  std::vector<std::int32_t> prev{3};
  seedrl::agent_step_output<float> out{logits, values};
  CHECK_THROWS_AS(net.infer({obs, rewards, dones, prev}, state, out), std::out_of_range);
  prev[0] = 0;
  obs.pop_back();
  CHECK_THROWS_AS(net.infer({obs, rewards, dones, prev}, state, out), std::invalid_argument);
}

namespace {

/// 36x40 uint8 frames with one bright column that moves each step; reward 1 when the action
/// is the column's position mod 3. Episodes last 8 steps. Enough to drive the learner's pixel
/// path (uint8 frames, frame history in the state, unrolls over episode ends).
class column_env {
 public:
  using observation_type = std::uint8_t;
  using action_type = std::int32_t;
  static seedrl::observation_spec observation_spec() { return {seedrl::dtype::uint8, {36, 40}}; }
  static seedrl::action_spec action_spec() { return seedrl::action_spec::discrete(3); }
  void seed(std::uint64_t s) noexcept { rng_.seed(s); }
  void reset(std::span<std::uint8_t> obs) {
    t_ = 0;
    column_ = static_cast<std::ptrdiff_t>(rng_.below(40));
    draw(obs);
  }
  seedrl::step_result step(std::int32_t action, std::span<std::uint8_t> obs) {
    const double reward = action == column_ % 3 ? 1.0 : 0.0;
    column_ = (column_ + 1) % 40;
    ++t_;
    draw(obs);
    return {reward, false, t_ >= 8};
  }

 private:
  void draw(std::span<std::uint8_t> obs) const {
    std::fill(obs.begin(), obs.end(), std::uint8_t{10});
    for (std::ptrdiff_t y = 0; y < 36; ++y)
      obs[static_cast<std::size_t>(y * 40 + column_)] = 250;
  }
  seedrl::random_generator rng_{0};
  std::ptrdiff_t column_ = 0;
  int t_ = 0;
};

}  // namespace

TEST_CASE("learner trains a frame_stacked Nature agent from single uint8 frames",
          "[pixel][learner]") {
  using namespace std::chrono_literals;
  using net_t = seedrl::frame_stacked<seedrl::nature_cnn_lstm_agent<float>>;
  using learner_t = seedrl::learner<net_t, seedrl::adam<float>, seedrl::in_process_transport>;
  auto c = tiny_nature();
  c.channels = 4;
  c.torso.channels = {2, 2, 2};
  const net_t net(seedrl::frame_stack_config{.height = 36, .width = 40, .channels = 1, .depth = 4},
                  c);
  seedrl::learner_config lc;
  lc.unroll_length = 4;
  lc.batch_size = 2;
  lc.batching.max_batch = 4;
  lc.batching.deadline = 1ms;
  lc.batching.max_request_rows = 8;
  seedrl::in_process_transport transport;
  const seedrl::in_process_endpoint endpoint{"pixel-learner"};
  learner_t learner(lc, net, seedrl::adam<float>(), seedrl::impala_loss<float>(),
                    column_env::observation_spec(), column_env::action_spec());
  learner.start();
  learner.serve(transport.listen(endpoint));
  std::atomic<bool> stop{false};
  std::thread actor([&] {
    seedrl::actor_config ac;
    ac.num_envs = 2;
    seedrl::actor<column_env, std::function<seedrl::in_process_connection()>> a(
        ac, [](std::size_t) { return column_env{}; }, [&] { return transport.connect(endpoint); });
    a.run(stop);
  });
  const auto until = std::chrono::steady_clock::now() + 30s;
  while (learner.stats().train_steps < 3 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(5ms);
  stop = true;
  actor.join();
  learner.stop();
  const auto stats = learner.stats();
  CHECK(stats.train_steps >= 3);
  CHECK(stats.frames >= 3 * 2 * 4);
  CHECK(stats.episodes > 0);
}
