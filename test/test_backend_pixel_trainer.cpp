// backend_pixel_lstm_trainer on host_backend against the reference training step:
// frame_stacked<nature_cnn_lstm_agent>, <impala_resnet_lstm_agent> or <small_conv_lstm_agent>
// + host_trainer
// (impala_loss, clip_by_global_norm) + adam / rmsprop, on small non-square frames with narrow
// convolutions, random batches with episode resets at t = 0 and mid-unroll and random start
// states (frame history and LSTM state).
#include <algorithm>
#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "backend_trainer_support.hpp"
#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/algo/loss_choice.hpp"
#include "seedrl/algo/ppo_loss.hpp"
#include "seedrl/backend/host_backend.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/net/frame_stack.hpp"
#include "seedrl/net/impala_resnet_lstm_agent.hpp"
#include "seedrl/net/nature_cnn_lstm_agent.hpp"
#include "seedrl/net/small_conv_lstm_agent.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/optim/rmsprop.hpp"
#include "seedrl/runtime/trainer.hpp"
#include "seedrl/train/backend_trainer.hpp"
#include "seedrl/train/pixel_lstm_recipe.hpp"
#include "seedrl/train/pixel_lstm_trainer.hpp"

namespace {

using seedrl_test::adam_lr;
using seedrl_test::append_uniform;
using seedrl_test::cpu_state;
using seedrl_test::gradients_of;
using seedrl_test::loss_config;
using seedrl_test::max_difference;
using seedrl_test::param_block;
using seedrl_test::parameters_of;
using seedrl_test::random_batch;
using seedrl_test::relative;

using nature = seedrl::nature_cnn_config;
using resnet = seedrl::impala_resnet_config;
using small = seedrl::small_conv_torso_config;

template <class S, class TorsoConfig = nature>
using pixel_trainer_t = seedrl::backend_pixel_lstm_trainer<seedrl::host_backend, S, TorsoConfig>;
/// The CPU agent over the torso TorsoConfig configures.
template <class S, class TorsoConfig>
using agent_t = std::conditional_t<
    std::is_same_v<TorsoConfig, resnet>, seedrl::impala_resnet_lstm_agent<S>,
    std::conditional_t<std::is_same_v<TorsoConfig, small>, seedrl::small_conv_lstm_agent<S>,
                       seedrl::nature_cnn_lstm_agent<S>>>;
template <class S, class TorsoConfig = nature>
using net_t = seedrl::frame_stacked<agent_t<S, TorsoConfig>>;

/// The network's shape: frames and stacking, and the agent over the stacks.
template <class TorsoConfig>
struct basic_shape {
  seedrl::frame_stack_config stack;
  seedrl::pixel_lstm_agent_config<TorsoConfig> agent;
};
using shape = basic_shape<nature>;
using resnet_shape = basic_shape<resnet>;
using small_shape_t = basic_shape<small>;

/// 44x52 frames (every convolution's output non-square: 10x12, 4x5, 2x3) of `channels`
/// channels, stacks of 3, convolutions of 4, 5 and 3 channels, dense 7, LSTM 6, 4 actions.
shape small_shape(std::ptrdiff_t channels = 1, bool stack_last = false, bool agent_last = false) {
  shape s;
  s.stack = {
      .height = 44, .width = 52, .channels = channels, .depth = 3, .channels_last = stack_last};
  s.agent.height = 44;
  s.agent.width = 52;
  s.agent.channels = 3 * channels;
  s.agent.channels_last = agent_last;
  s.agent.num_actions = 4;
  s.agent.torso.channels = {4, 5, 3};
  s.agent.dense_size = 7;
  s.agent.lstm_size = 6;
  s.agent.seed = 3;
  return s;
}

/// A small ResNet agent's geometry: frames, stacking, the ResNet's stacks and blocks.
struct resnet_geometry {
  std::ptrdiff_t height = 12, width = 10, channels = 1, depth = 3;
  std::vector<std::ptrdiff_t> stacks{4, 6};
  std::ptrdiff_t blocks = 1;
  bool stack_last = false, agent_last = false;
};

/// `g`'s frames and stacks, the ResNet over them, dense 7, LSTM 6, 4 actions (as small_shape).
resnet_shape resnet_small(const resnet_geometry& g) {
  resnet_shape s;
  s.stack = {.height = g.height,
             .width = g.width,
             .channels = g.channels,
             .depth = g.depth,
             .channels_last = g.stack_last};
  s.agent.height = g.height;
  s.agent.width = g.width;
  s.agent.channels = g.depth * g.channels;
  s.agent.channels_last = g.agent_last;
  s.agent.num_actions = 4;
  s.agent.torso.channels = g.stacks;
  s.agent.torso.blocks_per_stack = g.blocks;
  s.agent.dense_size = 7;
  s.agent.lstm_size = 6;
  s.agent.seed = 4;
  return s;
}

/// 10x10 frames (MinAtar's size) of `channels` channels, stacks of `depth`, the small conv stack
/// with convolutions of `convs` channels and `padding`, dense 7, LSTM 6, 4 actions (as
/// small_shape).
small_shape_t small_conv_small(std::ptrdiff_t channels, std::ptrdiff_t depth,
                               std::ptrdiff_t padding, bool stack_last = false,
                               bool agent_last = false,
                               std::vector<std::ptrdiff_t> convs = {4, 5, 3}) {
  small_shape_t s;
  s.stack = {
      .height = 10, .width = 10, .channels = channels, .depth = depth, .channels_last = stack_last};
  s.agent.height = 10;
  s.agent.width = 10;
  s.agent.channels = depth * channels;
  s.agent.channels_last = agent_last;
  s.agent.num_actions = 4;
  s.agent.torso.channels = std::move(convs);
  s.agent.torso.padding = padding;
  s.agent.dense_size = 7;
  s.agent.lstm_size = 6;
  s.agent.seed = 5;
  return s;
}

/// Random pixels in [0, 255] (frames and the start state's history), LSTM state in
/// [-0.5, 0.5], rewards in [-2, 2] (so the input-reward clip of 1 bites), then draw_steps'
/// resets, actions and log mu.
template <class S, class TC>
random_batch<S> make_pixel_batch(const basic_shape<TC>& sh, std::size_t T, std::size_t B,
                                 seedrl::random_generator& rng) {
  random_batch<S> d;
  d.T = T;
  d.B = B;
  d.A = static_cast<std::size_t>(sh.agent.num_actions);
  const auto frame = static_cast<std::size_t>(sh.stack.height * sh.stack.width * sh.stack.channels);
  const std::size_t history = static_cast<std::size_t>(sh.stack.depth - 1) * frame;
  const std::size_t state = history + 2 * static_cast<std::size_t>(sh.agent.lstm_size);
  const std::size_t rows = (T + 1) * B;
  append_uniform(d.obs, rows * frame, 0.0, 255.0, rng);
  append_uniform(d.rewards, rows, -2.0, 2.0, rng);
  for (std::size_t b = 0; b < B; ++b) {
    append_uniform(d.start, history, 0.0, 255.0, rng);
    append_uniform(d.start, state - history, -0.5, 0.5, rng);
  }
  seedrl_test::draw_steps(d, rng);
  return d;
}

/// Frames with large constant regions: every pixel of every frame of the unroll and of the start
/// states' histories 96, except up to `distinct` per frame set to 0, 160 or 255 (so some frames
/// are all 96). The convolutions repeat their outputs exactly over the flat areas, so max-pool
/// windows hold exact ties (which matter to the gradients only where the tied positions'
/// neighbourhoods differ: see keep_centre_taps); a frame history zeroed by a reset is flat too.
template <class S, class TC>
void flatten_frames(random_batch<S>& d, const basic_shape<TC>& sh, std::size_t distinct,
                    seedrl::random_generator& rng) {
  const auto frame = static_cast<std::size_t>(sh.stack.height * sh.stack.width * sh.stack.channels);
  const auto history = static_cast<std::size_t>(sh.stack.depth - 1) * frame;
  const std::size_t state = history + 2 * static_cast<std::size_t>(sh.agent.lstm_size);
  const S levels[] = {S(0), S(160), S(255)};
  const auto flatten = [&](S* f) {
    std::fill(f, f + frame, S(96));
    for (std::uint64_t k = rng.below(distinct + 1); k > 0; --k)
      f[rng.below(frame)] = levels[rng.below(3)];
  };
  for (std::size_t i = 0; i < d.obs.size(); i += frame)
    flatten(d.obs.data() + i);
  for (std::size_t b = 0; b < d.B; ++b) {
    for (std::size_t at = 0; at < history; at += frame)
      flatten(d.start.data() + b * state + at);
  }
}

/// A convolution's blocks: weights [out, in * k * k], then biases.
void add_conv(std::vector<param_block>& blocks, const std::string& name, std::size_t in,
              std::size_t out, std::size_t k) {
  blocks.push_back({name + " W", out * in * k * k, in * k * k, 0, in * k * k});
  blocks.push_back({name + " b", out, out, 0, out});
}

/// The Nature CNN's blocks in the CPU network's order, and its output width: convolutions
/// 8x8 stride 4, 4x4 stride 2 and 3x3 stride 1 without padding.
std::pair<std::vector<param_block>, std::size_t> torso_blocks(const shape& sh) {
  std::vector<param_block> blocks;
  auto c = static_cast<std::size_t>(sh.agent.channels);
  auto h = static_cast<std::size_t>(sh.agent.height), w = static_cast<std::size_t>(sh.agent.width);
  const std::size_t kernel[] = {8, 4, 3}, stride[] = {4, 2, 1};
  for (std::size_t i = 0; i < 3; ++i) {
    const auto out = static_cast<std::size_t>(sh.agent.torso.channels[i]);
    add_conv(blocks, "conv " + std::to_string(i), c, out, kernel[i]);
    c = out;
    h = (h - kernel[i]) / stride[i] + 1;
    w = (w - kernel[i]) / stride[i] + 1;
  }
  return {blocks, c * h * w};
}

/// The IMPALA ResNet's blocks in the CPU network's order (per stack its convolution, then the
/// two of each residual block, all 3x3), and its output width: each stack's max pool 3x3
/// stride 2 padding 1 takes H to (H - 1) / 2 + 1.
std::pair<std::vector<param_block>, std::size_t> torso_blocks(const resnet_shape& sh) {
  std::vector<param_block> blocks;
  auto c = static_cast<std::size_t>(sh.agent.channels);
  auto h = static_cast<std::size_t>(sh.agent.height), w = static_cast<std::size_t>(sh.agent.width);
  for (std::size_t si = 0; si < sh.agent.torso.channels.size(); ++si) {
    const auto out = static_cast<std::size_t>(sh.agent.torso.channels[si]);
    const std::string stack = "stack " + std::to_string(si);
    add_conv(blocks, stack + " conv", c, out, 3);
    for (std::ptrdiff_t j = 0; j < sh.agent.torso.blocks_per_stack; ++j) {
      const std::string res = stack + " block " + std::to_string(j);
      add_conv(blocks, res + " conv a", out, out, 3);
      add_conv(blocks, res + " conv b", out, out, 3);
    }
    c = out;
    h = (h - 1) / 2 + 1;
    w = (w - 1) / 2 + 1;
  }
  return {blocks, c * h * w};
}

/// The small conv stack's blocks in the CPU network's order (3x3 convolutions, stride 1), and
/// its output width: each convolution takes H to H + 2 padding - 2.
std::pair<std::vector<param_block>, std::size_t> torso_blocks(const small_shape_t& sh) {
  std::vector<param_block> blocks;
  auto c = static_cast<std::size_t>(sh.agent.channels);
  auto h = static_cast<std::size_t>(sh.agent.height), w = static_cast<std::size_t>(sh.agent.width);
  const auto pad = static_cast<std::size_t>(sh.agent.torso.padding);
  for (std::size_t i = 0; i < sh.agent.torso.channels.size(); ++i) {
    const auto out = static_cast<std::size_t>(sh.agent.torso.channels[i]);
    add_conv(blocks, "conv " + std::to_string(i), c, out, 3);
    c = out;
    h = h + 2 * pad - 2;
    w = w + 2 * pad - 2;
  }
  return {blocks, c * h * w};
}

/// Zeroes every weight of each ResNet stack's own convolution but the centre taps, so that its
/// output at a pixel depends on that pixel alone. With flatten_frames, max-pool windows then tie
/// between positions of different neighbourhoods, and which one wins changes the gradient of
/// the other taps (and what flows back further); with full kernels, ties come only from equal
/// neighbourhoods, where any choice gives the same parameter gradients.
template <class S>
void keep_centre_taps(const resnet_shape& sh, std::span<S> params) {
  std::size_t at = 0;
  for (const param_block& b : torso_blocks(sh).first) {
    if (b.name.find("block") == std::string::npos && b.name.ends_with("conv W")) {
      for (std::size_t i = 0; i < b.size; ++i) {
        if (i % 9 != 4)  // W [O, C, 3, 3]: tap (1, 1) is the fifth of each 3x3 kernel
          params[at + i] = S(0);
      }
    }
    at += b.size;
  }
}

/// The shared options, and the frames and parameters to start from.
struct pixel_run_options : seedrl_test::run_options {
  std::size_t flat_frames = 0;  ///< > 0: flatten_frames with at most this many distinct pixels
  bool centre_taps = false;     ///< ResNet: start from keep_centre_taps' parameters
};

/// Trains the reference and the backend trainer side by side (train_side_by_side) from the
/// agent's initial parameters, or keep_centre_taps' with o.centre_taps; returns the reference's
/// gradient norms.
template <class S, class Opt, class TC>
std::vector<double> compare_pixel_with_reference(const basic_shape<TC>& sh,
                                                 const typename Opt::config_type& opt_config,
                                                 const seedrl::impala_loss_config<S>& loss_config,
                                                 const pixel_run_options& o) {
  net_t<S, TC> net(sh.stack, sh.agent);
  Opt opt(opt_config);
  seedrl::host_backend backend;
  pixel_trainer_t<S, TC> trainer(backend, sh.stack, sh.agent);
  if constexpr (std::is_same_v<TC, resnet>) {
    if (o.centre_taps)
      keep_centre_taps(sh, net.parameters());
  }
  REQUIRE(trainer.num_parameters() == net.parameters().size());
  REQUIRE(trainer.state_size() == static_cast<std::size_t>(net.state_size()));
  REQUIRE(trainer.observation_size() == static_cast<std::size_t>(net.observation_size()));
  trainer.set_parameters(net.parameters());
  trainer.set_optimizer(opt_config, 0);
  return seedrl_test::train_side_by_side(
      net, opt, trainer, loss_config, o,
      [&](std::size_t T, std::size_t B, seedrl::random_generator& rng) {
        auto batch = make_pixel_batch<S>(sh, T, B, rng);
        if (o.flat_frames > 0)
          flatten_frames(batch, sh, o.flat_frames, rng);
        return batch;
      });
}

/// Guards the comparisons: a parameter off by 1e-6 in any block (each convolution's weights
/// and biases, dense, LSTM input and recurrent weights and biases, policy, value) shows in the
/// gradients well above 1e-10; so does a changed frame in a start state's history (every slot,
/// a channel of a pixel near the middle of the frame). Environment 1 does not start an episode
/// at t = 0, so its history frames are read.
template <class TC>
void check_every_block_matters(const basic_shape<TC>& sh, std::uint64_t seed) {
  using trainer = pixel_trainer_t<double, TC>;
  net_t<double, TC> net(sh.stack, sh.agent);
  seedrl::random_generator rng(seed);
  const auto batch = make_pixel_batch<double>(sh, 4, 3, rng);
  const std::vector<double> p0(net.parameters().begin(), net.parameters().end());
  const auto want = seedrl_test::reference_gradients(net, batch);
  auto [blocks, F] = torso_blocks(sh);
  const auto D = static_cast<std::size_t>(sh.agent.dense_size);
  const auto A = static_cast<std::size_t>(sh.agent.num_actions);
  const auto H = static_cast<std::size_t>(sh.agent.lstm_size);
  const std::size_t I = D + 1 + A;
  const param_block head[] = {{"dense W", D * F, F, 0, F},
                              {"dense b", D, D, 0, D},
                              {"LSTM W_ih", 4 * H * (I + H), I + H, 0, I},
                              {"LSTM W_hh", 0, I + H, I, I + H},
                              {"LSTM b", 4 * H, 4 * H, 0, 4 * H},
                              {"policy W", A * H, H, 0, H},
                              {"policy b", A, A, 0, A},
                              {"value W", H, H, 0, H},
                              {"value b", 1, 1, 0, 1}};
  blocks.insert(blocks.end(), std::begin(head), std::end(head));
  seedrl::host_backend backend;
  seedrl_test::check_block_perturbations(blocks, p0, want, batch,
                                         [&] { return trainer(backend, sh.stack, sh.agent); });
  const auto frame = static_cast<std::size_t>(sh.stack.height * sh.stack.width * sh.stack.channels);
  const auto history = static_cast<std::size_t>(sh.stack.depth - 1) * frame;
  const std::size_t state = history + 2 * H;
  const auto pixel = static_cast<std::size_t>(
      ((sh.stack.height / 2) * sh.stack.width + sh.stack.width / 2) * sh.stack.channels +
      sh.stack.channels - 1);
  for (std::size_t slot = 0; slot + 1 < static_cast<std::size_t>(sh.stack.depth); ++slot) {
    INFO("history slot " << slot);
    trainer t(backend, sh.stack, sh.agent);
    t.set_optimizer(adam_lr(1e-3), 0);
    t.set_parameters(p0);
    auto changed = batch;
    changed.start[state + slot * frame + pixel] += 50.0;
    t.train_step(changed.view(), loss_config(), 1e9);
    CHECK(max_difference<double>(gradients_of(t), want) > 1e-9);
  }
}

/// Environment 0 starts an episode at t = 0: its history frames are never read, whatever they
/// hold; environment 1's are. Needs depth > 1.
template <class TC>
void check_history_zeroed_at_reset(const basic_shape<TC>& sh, std::uint64_t seed) {
  using trainer = pixel_trainer_t<double, TC>;
  net_t<double, TC> net(sh.stack, sh.agent);
  seedrl::host_backend backend;
  seedrl::random_generator rng(seed);
  auto batch = make_pixel_batch<double>(sh, 4, 2, rng);
  std::fill(batch.dones.begin(), batch.dones.end(), std::uint8_t{0});
  std::fill(batch.truncated.begin(), batch.truncated.end(), std::uint8_t{0});
  batch.dones[0] = 1;
  const auto run = [&](const random_batch<double>& b) {
    trainer t(backend, sh.stack, sh.agent);
    t.set_parameters(net.parameters());
    t.set_optimizer(adam_lr(1e-3), 0);
    const auto r = t.train_step(b.view(), loss_config(), 1e9);
    return std::make_pair(r.terms.total, gradients_of(t));
  };
  const auto base = run(batch);
  const auto frame = static_cast<std::size_t>(sh.stack.height * sh.stack.width * sh.stack.channels);
  const auto history = static_cast<std::size_t>(sh.stack.depth - 1) * frame;
  const std::size_t state = history + 2 * static_cast<std::size_t>(sh.agent.lstm_size);
  REQUIRE(history > 100);
  auto unread = batch;
  for (std::size_t i = 0; i < history; ++i)
    unread.start[i] = 255.0 - unread.start[i];  // environment 0's history
  CHECK(run(unread) == base);
  auto read = batch;
  read.start[state + 100] += 30.0;  // environment 1's history: read
  CHECK(run(read).second != base.second);
}

/// Two CPU steps with Adam (a decaying learning rate), then the backend trainer loaded with
/// the CPU optimizer's state takes the third step as the CPU does.
template <class TC>
void check_continues_from_cpu_state(const basic_shape<TC>& sh, std::uint64_t seed) {
  using trainer = pixel_trainer_t<double, TC>;
  seedrl::random_generator rng(seed);
  const seedrl::impala_loss<double> loss(loss_config());
  seedrl::host_trainer reference;
  seedrl::host_backend backend;
  auto a = adam_lr(1e-3);
  a.lr_decay_steps = 4;
  net_t<double, TC> net(sh.stack, sh.agent);
  seedrl::adam<double> opt(a);
  for (int i = 0; i < 2; ++i) {
    const auto b = make_pixel_batch<double>(sh, 3, 2, rng);
    reference.train_step(b.view(), net, opt, loss, 1.0);
  }
  trainer t(backend, sh.stack, sh.agent);
  t.set_parameters(net.parameters());
  t.set_optimizer(a, opt.step_count(), cpu_state(opt));
  CHECK(t.optimizer_step_count() == 2);
  CHECK(t.learning_rate() == opt.learning_rate());
  const auto b = make_pixel_batch<double>(sh, 3, 2, rng);
  const auto want = reference.train_step(b.view(), net, opt, loss, 1.0);
  const auto got = t.train_step(b.view(), loss_config(), 1.0);
  CHECK(got.learning_rate == want.learning_rate);
  CHECK(max_difference<double>(parameters_of(t), net.parameters()) < 1e-10);
  const auto state = t.optimizer_state();
  REQUIRE(state.size() == 2);
  CHECK(max_difference<double>(state[0], opt.first_moment()) < 1e-10);
  CHECK(max_difference<double>(state[1], opt.second_moment()) < 1e-10);
}

/// A batch that `spoil` makes give a non-finite gradient is skipped by both sides alike (no
/// parameter or optimizer change); the next, good batch trains as the reference does.
template <class TC, class Spoil>
void check_skips_non_finite(const basic_shape<TC>& sh, std::uint64_t seed, Spoil spoil) {
  using trainer = pixel_trainer_t<double, TC>;
  net_t<double, TC> net(sh.stack, sh.agent);
  seedrl::adam<double> opt(adam_lr(1e-3));
  seedrl::host_trainer reference;
  const seedrl::impala_loss<double> loss(loss_config());
  seedrl::host_backend backend;
  trainer t(backend, sh.stack, sh.agent);
  t.set_parameters(net.parameters());
  t.set_optimizer(adam_lr(1e-3), 0);
  seedrl::random_generator rng(seed);
  auto bad = make_pixel_batch<double>(sh, 4, 2, rng);
  spoil(bad);
  const std::vector<double> before(net.parameters().begin(), net.parameters().end());
  const auto want = reference.train_step(bad.view(), net, opt, loss, 1.0);
  const auto got = t.train_step(bad.view(), loss_config(), 1.0);
  REQUIRE_FALSE(want.applied);
  CHECK_FALSE(got.applied);
  CHECK(got.skipped == want.skipped);
  CHECK(got.grad_norm == want.grad_norm);
  CHECK(parameters_of(t) == before);
  CHECK(t.optimizer_step_count() == 0);
  const auto good = make_pixel_batch<double>(sh, 4, 2, rng);
  const auto want2 = reference.train_step(good.view(), net, opt, loss, 1.0);
  const auto got2 = t.train_step(good.view(), loss_config(), 1.0);
  REQUIRE(got2.applied);
  CHECK(relative(got2.grad_norm, want2.grad_norm) < 1e-10);
  CHECK(max_difference<double>(parameters_of(t), net.parameters()) < 1e-10);
}

/// `mutate` makes `sh` a shape the trainer and the CPU network both refuse.
template <class TC, class Mutate>
void check_refused(const basic_shape<TC>& sh, Mutate mutate) {
  using trainer = pixel_trainer_t<double, TC>;
  using net = net_t<double, TC>;
  seedrl::host_backend backend;
  auto bad = sh;
  mutate(bad);
  CHECK_THROWS_AS(trainer(backend, bad.stack, bad.agent), std::invalid_argument);
  CHECK_THROWS_AS(net(bad.stack, bad.agent), std::invalid_argument);
}

/// Refusals of any torso: bad frame stacking and agent sizes, then calls and batches that do
/// not fit (none of which changes the parameters or the optimizer).
template <class TC>
void check_common_refusals(const basic_shape<TC>& sh) {
  using Shape = basic_shape<TC>;
  check_refused(sh, [](Shape& s) { s.stack.depth = 0; });
  check_refused(sh, [](Shape& s) { s.stack.height = -1; });
  check_refused(sh, [](Shape& s) { s.agent.channels += 1; });  // not the stack's channels
  check_refused(sh, [](Shape& s) { s.agent.num_actions = 0; });
  check_refused(sh, [](Shape& s) { s.agent.dense_size = 0; });
  check_refused(sh, [](Shape& s) { s.agent.lstm_size = 0; });

  seedrl::host_backend backend;
  pixel_trainer_t<double, TC> trainer(backend, sh.stack, sh.agent);
  net_t<double, TC> net(sh.stack, sh.agent);
  const std::size_t P = trainer.num_parameters();
  const auto A = sh.agent.num_actions;
  const auto lstm_state = static_cast<std::size_t>(2 * sh.agent.lstm_size);
  seedrl::random_generator rng(17);
  const auto batch = make_pixel_batch<double>(sh, 3, 2, rng);
  const auto l = loss_config();
  CHECK_THROWS_AS(trainer.train_step(batch.view(), l, 1.0), std::logic_error);
  CHECK_THROWS_AS(trainer.learning_rate(), std::logic_error);
  CHECK(trainer.optimizer_state().empty());
  CHECK_THROWS_AS(trainer.set_parameters(std::vector<double>(P + 1)), std::invalid_argument);
  std::vector<double> short_host(P - 1);
  CHECK_THROWS_AS(trainer.get_parameters(short_host), std::invalid_argument);
  CHECK_THROWS_AS(trainer.get_gradients(short_host), std::invalid_argument);
  trainer.set_parameters(std::vector<double>(net.parameters().begin(), net.parameters().end()));
  auto bad_adam = adam_lr(1e-3);
  bad_adam.beta2 = 1.0;
  CHECK_THROWS_AS(trainer.set_optimizer(bad_adam, 0), std::invalid_argument);
  const std::vector<double> full(P, 0.1), wrong(P + 1, 0.1);
  const std::span<const double> mismatched[] = {full, wrong};
  CHECK_THROWS_AS(trainer.set_optimizer(adam_lr(1e-3), 3, mismatched), std::invalid_argument);
  trainer.set_optimizer(adam_lr(1e-3), 0);
  CHECK_THROWS_AS(trainer.train_step(batch.view(), l, 0.0), std::invalid_argument);

  const auto throws_on = [&](auto mutate) {
    auto b = batch;
    mutate(b);
    CHECK_THROWS_AS(trainer.train_step(b.view(), l, 1.0), std::invalid_argument);
  };
  throws_on([](random_batch<double>& b) { b.obs.pop_back(); });
  throws_on([&](random_batch<double>& b) {  // a stack of frames per step instead of one
    b.obs.resize(b.obs.size() * static_cast<std::size_t>(sh.stack.depth));
  });
  throws_on([](random_batch<double>& b) { b.start.pop_back(); });
  throws_on([&](random_batch<double>& b) { b.start.resize(b.start.size() - lstm_state); });
  throws_on([](random_batch<double>& b) { b.rewards.pop_back(); });
  throws_on([](random_batch<double>& b) { b.dones.push_back(0); });
  throws_on([](random_batch<double>& b) { b.truncated.pop_back(); });
  throws_on([](random_batch<double>& b) { b.actions.pop_back(); });
  throws_on([](random_batch<double>& b) { b.behaviour.pop_back(); });
  throws_on([](random_batch<double>& b) { b.prev_actions.pop_back(); });
  throws_on([](random_batch<double>& b) { b.A -= 1; });
  throws_on([](random_batch<double>& b) { b.T = 0; });
  throws_on([&](random_batch<double>& b) { b.prev_actions[4] = A; });
  throws_on([](random_batch<double>& b) { b.actions[1] = -1; });
  CHECK(parameters_of(trainer) ==
        std::vector<double>(net.parameters().begin(), net.parameters().end()));
  CHECK(trainer.optimizer_step_count() == 0);
  CHECK(trainer.train_step(batch.view(), l, 1.0).applied);
}

}  // namespace

TEST_CASE("pixel backend trainer matches the reference: grayscale, Adam, no clipping",
          "[backend_trainer]") {
  pixel_run_options o;
  const auto norms = compare_pixel_with_reference<double, seedrl::adam<double>>(
      small_shape(), adam_lr(1e-3), loss_config(), o);
  for (const double n : norms)
    CHECK(n < o.max_grad_norm);  // clipping never bit
}

TEST_CASE("pixel backend trainer matches the reference: two-channel frames, every layout",
          "[backend_trainer]") {
  // Frames of 2 channels stacked channels-first (CHW, concatenated) or channels-last
  // (interleaved HWC), read by the agent as CHW or HWC: the four ways the two flags combine.
  auto a = adam_lr(2e-3);
  a.lr_decay_steps = 5;  // the schedule moves between steps
  pixel_run_options o;
  o.max_grad_norm = 0.05;
  for (const bool stack_last : {false, true}) {
    for (const bool agent_last : {false, true}) {
      INFO("stack channels_last " << stack_last << ", agent channels_last " << agent_last);
      o.seed = 2 + (stack_last ? 2 : 0) + (agent_last ? 1 : 0);
      const auto norms = compare_pixel_with_reference<double, seedrl::adam<double>>(
          small_shape(2, stack_last, agent_last), a, loss_config(), o);
      for (const double n : norms)
        CHECK(n > o.max_grad_norm);  // every step was clipped
    }
  }
}

TEST_CASE(
    "pixel backend trainer trains R2D2 as host_trainer does: the burn-in carries the "
    "frame history",
    "[backend_trainer][r2d2]") {
  // The burn-in's end state holds the frame history (stepped frame by frame, resets zeroing
  // it) besides the LSTM's: the trained steps' stacks read the burn-in's frames. Against
  // frame_stacked<nature_cnn_lstm_agent>, whose burn-in steps `infer`.
  using S = double;
  for (const auto& sh : {small_shape(), small_shape(2, true, false)}) {
    CAPTURE(sh.stack.channels);
    net_t<S> net(sh.stack, sh.agent);
    seedrl::adam<S> opt(adam_lr(1e-3));
    seedrl::host_backend backend;
    pixel_trainer_t<S> trainer(backend, sh.stack, sh.agent);
    trainer.set_parameters(net.parameters());
    trainer.set_optimizer(adam_lr(1e-3), 0);
    seedrl_test::train_r2d2_side_by_side<S>(
        net, opt, trainer,
        [&](std::size_t T, std::size_t B, seedrl::random_generator& rng) {
          return make_pixel_batch<S>(sh, T, B, rng);
        },
        1e-9);
  }
}

TEST_CASE("pixel backend trainer matches the reference: RMSProp, raw input reward, depth 1",
          "[backend_trainer]") {
  seedrl::rmsprop_config r;
  r.learning_rate = 1e-3;
  pixel_run_options o;
  o.seed = 7;
  o.max_grad_norm = 0.2;
  SECTION("rmsprop without momentum, unclipped input reward, one environment") {
    auto sh = small_shape();
    sh.agent.max_abs_input_reward.reset();
    o.B = 1;
    compare_pixel_with_reference<double, seedrl::rmsprop<double>>(sh, r, loss_config(), o);
  }
  SECTION("rmsprop with momentum, no stacking (depth 1: no history in the state)") {
    auto sh = small_shape(2, true, true);
    sh.stack.depth = 1;
    sh.agent.channels = 2;
    sh.agent.observation_scale = 0.5;
    r.momentum = 0.9;
    compare_pixel_with_reference<double, seedrl::rmsprop<double>>(sh, r, loss_config(), o);
  }
  SECTION("deep stack: depth 5, longer than half the unroll") {
    auto sh = small_shape();
    sh.stack.depth = 5;
    sh.agent.channels = 5;
    o.T = 3;
    compare_pixel_with_reference<double, seedrl::rmsprop<double>>(sh, r, loss_config(), o);
  }
}

TEST_CASE("pixel backend trainer matches the reference in float", "[backend_trainer]") {
  seedrl::impala_loss_config<float> l;
  l.entropy_cost = 0.01f;
  pixel_run_options o;
  o.seed = 6;
  o.max_grad_norm = 0.1;
  o.tolerance = 1e-3;
  seedrl::rmsprop_config r;
  r.learning_rate = 1e-3;
  r.momentum = 0.5;
  compare_pixel_with_reference<float, seedrl::rmsprop<float>>(small_shape(2, true, true), r, l, o);
  seedrl::adam_config a = adam_lr(1e-3);
  a.epsilon = 1e-2;
  compare_pixel_with_reference<float, seedrl::adam<float>>(small_shape(), a, l, o);
}

TEST_CASE("pixel backend trainer comparison notices a wrong parameter in every block",
          "[backend_trainer]") {
  // Convolutions: 6 -> 4 (8x8), 4 -> 5 (4x4), 5 -> 3 (3x3); features 3 * 2 * 3 = 18.
  const auto sh = small_shape(2, true, true);
  REQUIRE(torso_blocks(sh).second == 18);
  check_every_block_matters(sh, 9);
}

TEST_CASE("pixel backend trainer zeroes the frame history where an episode starts",
          "[backend_trainer]") {
  check_history_zeroed_at_reset(small_shape(), 21);
}

TEST_CASE("pixel backend trainer continues from a CPU optimizer's state", "[backend_trainer]") {
  check_continues_from_cpu_state(small_shape(), 13);
}

TEST_CASE("pixel backend trainer skips a non-finite gradient as the reference does",
          "[backend_trainer]") {
  check_skips_non_finite(small_shape(), 11, [](random_batch<double>& b) {
    b.rewards[5] = std::numeric_limits<double>::quiet_NaN();
  });
}

/// A conv stack's parameters after `init` from `seed` are PyTorch's default draws for its
/// convolutions {out, in, kernel} in order (W then b, uniform in +-1/sqrt(in*k*k)), written
/// here from the documented layout: a network starts as PyTorch's would, on either device.
template <class Config>
void check_pytorch_init(const Config& config, std::size_t C, std::size_t H, std::size_t W,
                        const std::vector<std::array<std::size_t, 3>>& convs, std::uint64_t seed) {
  seedrl::host_backend backend;
  const typename seedrl::backend_conv_stack<seedrl::host_backend, double, Config>::type stack(
      backend, config, C, H, W, "test");
  std::vector<double> want;
  seedrl::random_generator rng_want(seed), rng(seed);
  for (const auto& [out, in, k] : convs) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(in * k * k));
    for (std::size_t i = 0; i < out * in * k * k + out; ++i)
      want.push_back(rng_want.uniform(-bound, bound));
  }
  REQUIRE(stack.num_parameters() == want.size());
  std::vector<double> params(want.size(), -9.0);
  stack.init(rng, params.data());
  CHECK(params == want);
  CHECK(rng() == rng_want());  // the same number of draws
}

TEST_CASE("the conv stacks draw PyTorch's initial parameters in their documented layout",
          "[backend_trainer]") {
  check_pytorch_init(nature{}, 3, 44, 40, {{32, 3, 8}, {64, 32, 4}, {64, 64, 3}}, 1);
  seedrl::small_conv_torso_config small;
  small.channels = {4, 6, 5};
  small.padding = 1;
  check_pytorch_init(small, 2, 9, 7, {{4, 2, 3}, {6, 4, 3}, {5, 6, 3}}, 2);
  std::vector<std::array<std::size_t, 3>> resnet_convs{{4, 3, 3}};
  resnet_convs.insert(resnet_convs.end(), 4, {4, 4, 3});
  resnet_convs.push_back({6, 4, 3});
  resnet_convs.insert(resnet_convs.end(), 4, {6, 6, 3});
  check_pytorch_init(seedrl::impala_resnet_config{.channels = {4, 6}, .blocks_per_stack = 2}, 3, 12,
                     10, resnet_convs, 3);
}

TEST_CASE("pixel backend trainer refuses bad configurations, sizes and calls",
          "[backend_trainer]") {
  const auto sh = small_shape();
  check_common_refusals(sh);
  check_refused(sh, [](shape& s) { s.agent.torso.channels[1] = 0; });
  check_refused(sh, [](shape& s) {  // 35x35: too small for the three convolutions
    s.stack.height = s.stack.width = s.agent.height = s.agent.width = 35;
  });
}

TEST_CASE("pixel backend trainer runs a full-size Atari step", "[backend_trainer]") {
  // The example's shape (84x84 grayscale, 4-stacks, 32/64/64 convolutions, dense 512, LSTM 512)
  // on a short batch: the geometry holds at full size and the step stays finite.
  seedrl::frame_stack_config stack;
  seedrl::nature_cnn_lstm_agent_config agent;
  agent.num_actions = 6;
  net_t<float> net(stack, agent);
  seedrl::host_backend backend;
  pixel_trainer_t<float> trainer(backend, stack, agent);
  REQUIRE(trainer.num_parameters() == net.parameters().size());
  trainer.set_parameters(net.parameters());
  trainer.set_optimizer(adam_lr(1e-4), 0);
  shape sh{stack, agent};
  seedrl::random_generator rng(23);
  const auto batch = make_pixel_batch<float>(sh, 2, 2, rng);
  seedrl::impala_loss_config<float> l;
  const auto r = trainer.train_step(batch.view(), l, 40.0);
  CHECK(r.applied);
  CHECK(std::isfinite(r.grad_norm));
  CHECK(r.grad_norm > 0.0);
}

// The IMPALA ResNet torso (backend_pixel_lstm_trainer<..., impala_resnet_config>) against
// frame_stacked<impala_resnet_lstm_agent>: the same checks on small frames, where the max pools
// (3x3 stride 2 padding 1) clip their windows at every border.

TEST_CASE("pixel backend trainer matches the reference with the ResNet: Adam, stacks and blocks",
          "[backend_trainer]") {
  pixel_run_options o;
  o.seed = 31;
  SECTION("12x10 grayscale, stacks 4, 6, one block each, no clipping") {
    const auto norms = compare_pixel_with_reference<double, seedrl::adam<double>>(
        resnet_small({}), adam_lr(1e-3), loss_config(), o);
    for (const double n : norms)
      CHECK(n < o.max_grad_norm);  // clipping never bit
  }
  SECTION("16x16 grayscale, one stack of 3, no residual blocks, clipped") {
    o.max_grad_norm = 0.05;
    const auto norms = compare_pixel_with_reference<double, seedrl::adam<double>>(
        resnet_small({.height = 16, .width = 16, .stacks = {3}, .blocks = 0}), adam_lr(2e-3),
        loss_config(), o);
    for (const double n : norms)
      CHECK(n > o.max_grad_norm);  // every step was clipped
  }
  SECTION("12x10 grayscale, stacks 4, 6, two blocks each, clipped") {
    o.max_grad_norm = 0.05;
    compare_pixel_with_reference<double, seedrl::adam<double>>(resnet_small({.blocks = 2}),
                                                               adam_lr(1e-3), loss_config(), o);
  }
  SECTION("7x5 frames, three stacks down to 1x1") {
    // 7x5 -> 4x3 -> 2x2 -> 1x1: windows clipped on both sides, a single-cell last stack.
    compare_pixel_with_reference<double, seedrl::adam<double>>(
        resnet_small({.height = 7, .width = 5, .stacks = {2, 3, 2}, .blocks = 1}), adam_lr(1e-3),
        loss_config(), o);
  }
}

TEST_CASE(
    "pixel backend trainer matches the reference with the ResNet: two-channel frames, "
    "every layout",
    "[backend_trainer]") {
  auto a = adam_lr(2e-3);
  a.lr_decay_steps = 5;
  pixel_run_options o;
  o.max_grad_norm = 0.05;
  for (const bool stack_last : {false, true}) {
    for (const bool agent_last : {false, true}) {
      INFO("stack channels_last " << stack_last << ", agent channels_last " << agent_last);
      o.seed = 32 + (stack_last ? 2 : 0) + (agent_last ? 1 : 0);
      const auto norms = compare_pixel_with_reference<double, seedrl::adam<double>>(
          resnet_small({.height = 12,
                        .width = 10,
                        .channels = 2,
                        .stacks = {3},
                        .blocks = 2,
                        .stack_last = stack_last,
                        .agent_last = agent_last}),
          a, loss_config(), o);
      for (const double n : norms)
        CHECK(n > o.max_grad_norm);  // every step was clipped
    }
  }
}

TEST_CASE("pixel backend trainer matches the reference with the ResNet: RMSProp, depth 1 and 5",
          "[backend_trainer]") {
  seedrl::rmsprop_config r;
  r.learning_rate = 1e-3;
  pixel_run_options o;
  o.seed = 37;
  o.max_grad_norm = 0.2;
  SECTION("rmsprop without momentum, unclipped input reward, one environment, no blocks") {
    auto sh = resnet_small({.blocks = 0});
    sh.agent.max_abs_input_reward.reset();
    o.B = 1;
    compare_pixel_with_reference<double, seedrl::rmsprop<double>>(sh, r, loss_config(), o);
  }
  SECTION("rmsprop with momentum, no stacking (depth 1), two-channel HWC frames") {
    auto sh = resnet_small(
        {.channels = 2, .depth = 1, .blocks = 2, .stack_last = true, .agent_last = true});
    sh.agent.observation_scale = 0.5;
    r.momentum = 0.9;
    compare_pixel_with_reference<double, seedrl::rmsprop<double>>(sh, r, loss_config(), o);
  }
  SECTION("deep stack: depth 5, longer than half the unroll") {
    o.T = 3;
    compare_pixel_with_reference<double, seedrl::rmsprop<double>>(
        resnet_small({.depth = 5, .stacks = {3}, .blocks = 1}), r, loss_config(), o);
  }
}

TEST_CASE("pixel backend trainer matches the reference with the ResNet where max pools tie",
          "[backend_trainer]") {
  // Frames of large flat areas (flatten_frames): convolution outputs repeat exactly, so many
  // pooling windows hold equal maxima, in every stack. With the stacks' convolutions reduced to
  // their centre taps (keep_centre_taps) the tied positions have different neighbourhoods, and
  // the gradients match only if the backend picks the CPU's maximum, the first in row-major
  // window order. The first step starts from those weights; later steps train on. (Checked by
  // mutation: letting the last maximum win in any one stack's pool puts the first two sections'
  // gradients off by 8e-4 to 0.04; the third holds ties that any choice resolves alike.)
  pixel_run_options o;
  o.seed = 41;
  o.flat_frames = 3;
  o.centre_taps = true;
  SECTION("20x16 grayscale, stacks 3, 4, one block each, Adam") {
    compare_pixel_with_reference<double, seedrl::adam<double>>(
        resnet_small({.height = 20, .width = 16, .stacks = {3, 4}, .blocks = 1}), adam_lr(1e-3),
        loss_config(), o);
  }
  SECTION("24x24 grayscale, stacks 2, 3, 6, two blocks each, RMSProp, clipped") {
    seedrl::rmsprop_config r;
    r.learning_rate = 1e-3;
    r.momentum = 0.5;
    o.max_grad_norm = 0.05;
    compare_pixel_with_reference<double, seedrl::rmsprop<double>>(
        resnet_small({.height = 24, .width = 24, .stacks = {2, 3, 6}, .blocks = 2}), r,
        loss_config(), o);
  }
  SECTION("full kernels: ties between equal neighbourhoods") {
    o.centre_taps = false;
    compare_pixel_with_reference<double, seedrl::adam<double>>(
        resnet_small({.height = 16, .width = 16, .stacks = {3, 4}, .blocks = 0}), adam_lr(1e-3),
        loss_config(), o);
  }
}

TEST_CASE("pixel backend trainer matches the reference with the ResNet in float",
          "[backend_trainer]") {
  // A moderate size: 24x20 frames, 4-stacks, stacks 6, 8, 8 with two blocks each.
  seedrl::impala_loss_config<float> l;
  l.entropy_cost = 0.01f;
  pixel_run_options o;
  o.seed = 43;
  o.max_grad_norm = 0.1;
  o.tolerance = 1e-3;
  seedrl::rmsprop_config r;
  r.learning_rate = 1e-3;
  r.momentum = 0.5;
  const auto sh =
      resnet_small({.height = 24, .width = 20, .depth = 4, .stacks = {6, 8, 8}, .blocks = 2});
  compare_pixel_with_reference<float, seedrl::rmsprop<float>>(sh, r, l, o);
  seedrl::adam_config a = adam_lr(1e-3);
  a.epsilon = 1e-2;
  compare_pixel_with_reference<float, seedrl::adam<float>>(sh, a, l, o);
}

TEST_CASE("pixel backend trainer comparison notices a wrong parameter in every ResNet block",
          "[backend_trainer]") {
  // Every convolution of both stacks (the stack's own and both of each residual block), weights
  // and biases; then the dense, LSTM and heads and the frame history.
  const auto sh = resnet_small(
      {.channels = 2, .stacks = {4, 6}, .blocks = 2, .stack_last = true, .agent_last = true});
  REQUIRE(torso_blocks(sh).first.size() == 2 * 2 * (1 + 2 * 2));
  REQUIRE(torso_blocks(sh).second == 6 * 3 * 3);  // 12x10 -> 6x5 -> 3x3
  check_every_block_matters(sh, 45);
}

TEST_CASE(
    "pixel backend trainer with the ResNet zeroes the frame history, continues from a "
    "CPU optimizer's state",
    "[backend_trainer]") {
  const auto sh = resnet_small({.stacks = {3, 4}, .blocks = 1});
  check_history_zeroed_at_reset(sh, 47);
  check_continues_from_cpu_state(sh, 48);
}

TEST_CASE(
    "pixel backend trainer with the ResNet skips a non-finite gradient as the reference "
    "does",
    "[backend_trainer]") {
  const auto sh = resnet_small({.stacks = {3, 4}, .blocks = 1});
  SECTION("a NaN reward") {
    check_skips_non_finite(sh, 51, [](random_batch<double>& b) {
      b.rewards[5] = std::numeric_limits<double>::quiet_NaN();
    });
  }
  SECTION("a NaN pixel (it wins its pooling windows)") {
    check_skips_non_finite(sh, 52, [](random_batch<double>& b) {
      b.obs[3 * 12 * 10 + 5 * 10 + 4] = std::numeric_limits<double>::quiet_NaN();
    });
  }
  SECTION("an infinite pixel") {
    check_skips_non_finite(sh, 53, [](random_batch<double>& b) {
      b.obs[12 * 10 + 7] = std::numeric_limits<double>::infinity();
    });
  }
}

TEST_CASE("pixel backend trainer with the ResNet refuses bad configurations, sizes and calls",
          "[backend_trainer]") {
  const auto sh = resnet_small({});
  check_common_refusals(sh);
  check_refused(sh, [](resnet_shape& s) { s.agent.torso.channels.clear(); });
  check_refused(sh, [](resnet_shape& s) { s.agent.torso.blocks_per_stack = -1; });
  check_refused(sh, [](resnet_shape& s) { s.agent.torso.channels[0] = 0; });
  check_refused(sh, [](resnet_shape& s) { s.agent.torso.channels[1] = -2; });
}

// The small conv stack (backend_pixel_lstm_trainer<..., small_conv_torso_config>) against
// frame_stacked<small_conv_lstm_agent>: 10x10 frames (MinAtar's), 3x3 convolutions with
// padding 0 (10x10 -> 8x8 -> 6x6 -> 4x4) and 1 (10x10 throughout, where the padding is read at
// every border).

TEST_CASE("pixel backend trainer matches the reference with the small conv stack",
          "[backend_trainer]") {
  pixel_run_options o;
  SECTION("grayscale frames stacked 3 deep, Adam, no clipping") {
    for (const std::ptrdiff_t padding : {0, 1}) {
      INFO("padding " << padding);
      o.seed = 61 + static_cast<std::uint64_t>(padding);
      const auto norms = compare_pixel_with_reference<double, seedrl::adam<double>>(
          small_conv_small(1, 3, padding), adam_lr(1e-3), loss_config(), o);
      for (const double n : norms)
        CHECK(n < o.max_grad_norm);  // clipping never bit
    }
  }
  SECTION("4-channel frames, no stacking, channels last (as seedrl_gym), clipped Adam") {
    o.max_grad_norm = 0.05;
    auto a = adam_lr(2e-3);
    a.lr_decay_steps = 5;
    for (const std::ptrdiff_t padding : {0, 1}) {
      INFO("padding " << padding);
      o.seed = 63 + static_cast<std::uint64_t>(padding);
      const auto norms = compare_pixel_with_reference<double, seedrl::adam<double>>(
          small_conv_small(4, 1, padding, true, true), a, loss_config(), o);
      for (const double n : norms)
        CHECK(n > o.max_grad_norm);  // every step was clipped
    }
  }
  SECTION("4-channel frames stacked 2 deep, channels first, one convolution, RMSProp") {
    seedrl::rmsprop_config r;
    r.learning_rate = 1e-3;
    r.momentum = 0.5;
    for (const std::ptrdiff_t padding : {0, 1}) {
      INFO("padding " << padding);
      o.seed = 65 + static_cast<std::uint64_t>(padding);
      compare_pixel_with_reference<double, seedrl::rmsprop<double>>(
          small_conv_small(4, 2, padding, false, false, {6}), r, loss_config(), o);
    }
  }
}

TEST_CASE("pixel backend trainer matches the reference with the small conv stack in float",
          "[backend_trainer]") {
  seedrl::impala_loss_config<float> l;
  l.entropy_cost = 0.01f;
  pixel_run_options o;
  o.seed = 69;
  o.max_grad_norm = 0.1;
  o.tolerance = 1e-3;
  compare_pixel_with_reference<float, seedrl::adam<float>>(small_conv_small(4, 1, 1, true, true),
                                                           adam_lr(1e-3), l, o);
}

TEST_CASE("pixel backend trainer comparison notices a wrong parameter in every small conv block",
          "[backend_trainer]") {
  SECTION("padding 0") {
    const auto sh = small_conv_small(2, 2, 0, true, true);
    REQUIRE(torso_blocks(sh).first.size() == 2 * 3);
    REQUIRE(torso_blocks(sh).second == 3 * 4 * 4);  // 10x10 -> 8x8 -> 6x6 -> 4x4
    check_every_block_matters(sh, 67);
  }
  SECTION("padding 1") {
    const auto sh = small_conv_small(1, 3, 1);
    REQUIRE(torso_blocks(sh).second == 3 * 10 * 10);
    check_every_block_matters(sh, 68);
  }
}

TEST_CASE(
    "pixel backend trainer with the small conv stack zeroes the frame history, continues "
    "from a CPU optimizer's state, skips a non-finite gradient",
    "[backend_trainer]") {
  const auto sh = small_conv_small(1, 3, 1);
  check_history_zeroed_at_reset(sh, 71);
  check_continues_from_cpu_state(sh, 72);
  check_skips_non_finite(sh, 73, [](random_batch<double>& b) {
    b.obs[10 * 10 + 3] = std::numeric_limits<double>::quiet_NaN();
  });
}

TEST_CASE(
    "pixel backend trainer with the small conv stack refuses bad configurations, sizes and "
    "calls",
    "[backend_trainer]") {
  const auto sh = small_conv_small(1, 3, 0);
  check_common_refusals(sh);
  check_refused(sh, [](small_shape_t& s) { s.agent.torso.channels.clear(); });
  check_refused(sh, [](small_shape_t& s) { s.agent.torso.padding = -1; });
  // 10x10 without padding fits four 3x3 convolutions (down to 2x2), not five.
  check_refused(sh, [](small_shape_t& s) { s.agent.torso.channels = {2, 2, 2, 2, 2}; });
  // With padding 1 the image keeps its size: any number fits.
  seedrl::host_backend backend;
  const auto deep = small_conv_small(1, 3, 1, false, false, {2, 2, 2, 2, 2, 2});
  CHECK_NOTHROW(pixel_trainer_t<double, small>(backend, deep.stack, deep.agent));
}

TEST_CASE("backend_trainer trains a pixel agent through the Trainer members as host_trainer does",
          "[backend_trainer]") {
  // The recipe trainer the CUDA pixel trainers run, on host_backend: the frame-stacked small
  // conv agent (the shape comes from the network: stacking and agent config), IMPALA and PPO.
  using S = double;
  const auto sh = small_conv_small(2, 2, 1, true, true);
  net_t<S, small> ref_net(sh.stack, sh.agent), net(sh.stack, sh.agent);
  seedrl::adam<S> ref_opt(adam_lr(1e-3)), opt(adam_lr(1e-3));
  seedrl::host_trainer reference;
  seedrl::backend_trainer<S, seedrl::pixel_lstm_recipe<small>> trainer;
  seedrl::ppo_loss_config<S> ppo;
  ppo.epochs = 2;
  ppo.minibatches = 2;
  const seedrl::loss_choice<S> losses[] = {
      seedrl::loss_choice<S>(seedrl::ppo_loss<S>(ppo)),
      seedrl::loss_choice<S>(seedrl::impala_loss<S>(loss_config()))};
  seedrl::random_generator rng(71);
  for (const auto& loss : losses) {
    const auto batch = make_pixel_batch<S>(sh, 3, 4, rng);
    const auto want = reference.train_step(batch.view(), ref_net, ref_opt, loss, 1.0);
    const auto got = trainer.train_step(batch.view(), net, opt, loss, 1.0);
    CHECK(relative(got.terms.total, want.terms.total) < 1e-9);
    CHECK(relative(got.grad_norm, want.grad_norm) < 1e-9);
    CHECK(max_difference<S>(net.parameters(), ref_net.parameters()) < 1e-9);
  }
  trainer.sync_to_host(net, opt);
  CHECK(opt.step_count() == ref_opt.step_count());
  CHECK(max_difference<S>(opt.second_moment(), ref_opt.second_moment()) < 1e-9);
}
