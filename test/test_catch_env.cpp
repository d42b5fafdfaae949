// Catch, the C++ pixel environment: rendering, dynamics, rewards, seeding, the expected returns
// of the optimal and the uniformly random policy, and uint8 frames through env_batch and the
// actor runtime.
#include "seedrl/env/catch.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <span>
#include <thread>
#include <vector>

#include "seedrl/env/env_batch.hpp"
#include "seedrl/protocol/frame.hpp"
#include "seedrl/runtime/actor.hpp"
#include "seedrl/transport/in_process.hpp"

namespace {

using seedrl::catch_game;
using frame_t = std::array<std::uint8_t, 84 * 84>;

std::uint8_t pixel(const frame_t& f, int y, int x) {
  return f[static_cast<std::size_t>(y * 84 + x)];
}

/// The frame a state must render to, drawn pixel by pixel from the documented cell bounds
/// (an independent oracle for render()).
frame_t expected_frame(const seedrl::catch_config& c, const catch_game::state& s) {
  frame_t f{};
  auto inside = [](int p, int cell, int cells) {
    return p >= cell * 84 / cells && p < (cell + 1) * 84 / cells;
  };
  for (int y = 0; y < 84; ++y) {
    for (int x = 0; x < 84; ++x) {
      std::uint8_t v = 0;
      for (int p = s.paddle_column; p < s.paddle_column + c.paddle_width; ++p) {
        if (inside(y, c.rows - 1, c.rows) && inside(x, p, c.columns))
          v = 128;
      }
      if (inside(y, s.ball_row, c.rows) && inside(x, s.ball_column, c.columns))
        v = 255;
      f[static_cast<std::size_t>(y * 84 + x)] = v;
    }
  }
  return f;
}

/// Moves the paddle towards the ball.
std::int32_t follow_ball(const catch_game& g) {
  const auto& s = g.game_state();
  if (s.ball_column < s.paddle_column)
    return catch_game::left;
  if (s.ball_column >= s.paddle_column + g.config().paddle_width)
    return catch_game::right;
  return catch_game::stay;
}

}  // namespace

TEST_CASE("catch describes uint8 84x84 frames and three actions", "[catch]") {
  CHECK(catch_game::observation_spec() == seedrl::observation_spec{seedrl::dtype::uint8, {84, 84}});
  CHECK(catch_game::action_spec() == seedrl::action_spec::discrete(3));
  STATIC_REQUIRE(seedrl::Environment<catch_game>);
  CHECK_THROWS_AS(catch_game(seedrl::catch_config{1, 10, 1}), std::invalid_argument);
  CHECK_THROWS_AS(catch_game(seedrl::catch_config{10, 85, 1}), std::invalid_argument);
  CHECK_THROWS_AS(catch_game(seedrl::catch_config{10, 5, 6}), std::invalid_argument);
  CHECK_THROWS_AS(catch_game(seedrl::catch_config{10, 5, 0}), std::invalid_argument);
}

TEST_CASE("catch draws the ball and the paddle in their cells", "[catch]") {
  catch_game g;
  frame_t f{};
  g.reset_to({0, 0, 4}, f);
  // 84 / 10 = 8.4 pixels per cell: the ball in cell (0, 0) covers pixels [0, 8) x [0, 8), the
  // paddle in cell (9, 4) rows [75, 84) and columns [33, 42).
  CHECK(pixel(f, 0, 0) == 255);
  CHECK(pixel(f, 7, 7) == 255);
  CHECK(pixel(f, 8, 0) == 0);
  CHECK(pixel(f, 0, 8) == 0);
  CHECK(pixel(f, 75, 33) == 128);
  CHECK(pixel(f, 83, 41) == 128);
  CHECK(pixel(f, 74, 33) == 0);
  CHECK(pixel(f, 75, 32) == 0);
  CHECK(pixel(f, 75, 42) == 0);
  CHECK(std::count(f.begin(), f.end(), 255) == 8 * 8);
  CHECK(std::count(f.begin(), f.end(), 128) == 9 * 9);
  CHECK(std::count(f.begin(), f.end(), 0) == 84 * 84 - 64 - 81);

  // Every state of several grids against the pixel-by-pixel oracle.
  for (const seedrl::catch_config c :
       {seedrl::catch_config{10, 10, 1}, seedrl::catch_config{7, 5, 2},
        seedrl::catch_config{84, 84, 3}, seedrl::catch_config{2, 1, 1}}) {
    catch_game h(c);
    for (int r = 0; r < c.rows - 1; r += std::max(1, c.rows / 7)) {
      for (int b = 0; b < c.columns; b += std::max(1, c.columns / 6)) {
        for (int p = 0; p <= c.columns - c.paddle_width; p += std::max(1, c.columns / 5)) {
          INFO("grid " << c.rows << "x" << c.columns << " ball " << r << "," << b << " paddle "
                       << p);
          h.reset_to({r, b, p}, f);
          CHECK(f == expected_frame(c, {r, b, p}));
        }
      }
    }
  }
}

TEST_CASE("catch moves the paddle, drops the ball and pays +1 or -1 at the bottom", "[catch]") {
  catch_game g;
  frame_t f{};
  g.reset_to({0, 9, 4}, f);
  CHECK_THROWS_AS(g.step(3, f), std::out_of_range);
  CHECK_THROWS_AS(g.step(-1, f), std::out_of_range);
  const auto r1 = g.step(catch_game::right, f);
  CHECK(g.game_state().ball_row == 1);
  CHECK(g.game_state().paddle_column == 5);
  CHECK(r1.reward == 0.0);
  CHECK_FALSE(r1.done());
  CHECK(f == expected_frame(g.config(), g.game_state()));
  g.step(catch_game::left, f);
  CHECK(g.game_state().paddle_column == 4);
  g.step(catch_game::stay, f);
  CHECK(g.game_state().paddle_column == 4);
  for (int i = 0; i < 5; ++i) {
    const auto r = g.step(catch_game::right, f);  // walks into the wall at column 9
    CHECK_FALSE(r.done());
  }
  CHECK(g.game_state().paddle_column == 9);
  CHECK(g.game_state().ball_row == 8);
  const auto last = g.step(catch_game::right, f);  // the wall stops it
  CHECK(g.game_state().paddle_column == 9);
  CHECK(g.game_state().ball_row == 9);
  CHECK(last.terminated);
  CHECK_FALSE(last.truncated);
  CHECK(last.reward == 1.0);
  CHECK(pixel(f, 80, 80) == 255);  // the ball is drawn over the paddle
  CHECK_THROWS_AS(g.step(catch_game::stay, f), std::logic_error);

  g.reset_to({0, 0, 4}, f);
  int steps = 0;
  seedrl::step_result r;
  do {
    r = g.step(catch_game::stay, f);
    ++steps;
  } while (!r.done());
  CHECK(steps == 9);
  CHECK(r.reward == -1.0);

  // A wide paddle catches anywhere over its span.
  catch_game wide(seedrl::catch_config{3, 10, 3});
  wide.reset_to({0, 5, 3}, f);  // paddle over columns 3, 4, 5
  wide.step(catch_game::stay, f);
  CHECK(wide.step(catch_game::stay, f).reward == 1.0);
  wide.reset_to({0, 6, 3}, f);
  wide.step(catch_game::stay, f);
  CHECK(wide.step(catch_game::stay, f).reward == -1.0);
}

TEST_CASE("catch replays the same episodes from the same seed", "[catch]") {
  auto columns = [](std::uint64_t seed) {
    catch_game g({}, seed);
    frame_t f{};
    std::vector<std::int32_t> out;
    for (int i = 0; i < 50; ++i) {
      g.reset(f);
      out.push_back(g.game_state().ball_column);
      CHECK(g.game_state().ball_row == 0);
      CHECK(g.game_state().paddle_column == 4);
    }
    return out;
  };
  CHECK(columns(3) == columns(3));
  CHECK(columns(3) != columns(4));
  catch_game g({}, 3);
  g.seed(7);
  frame_t f{};
  g.reset(f);
  CHECK(g.game_state().ball_column == columns(7).front());
  // Every column comes up.
  std::array<int, 10> seen{};
  catch_game h({}, 11);
  for (int i = 0; i < 1000; ++i) {
    h.reset(f);
    ++seen[static_cast<std::size_t>(h.game_state().ball_column)];
  }
  for (int n : seen)
    CHECK(n > 50);
}

TEST_CASE("catch: following the ball wins every episode, random play loses as computed",
          "[catch]") {
  for (const seedrl::catch_config c :
       {seedrl::catch_config{10, 10, 1}, seedrl::catch_config{6, 10, 2}}) {
    INFO("grid " << c.rows << "x" << c.columns << " paddle " << c.paddle_width);
    catch_game g(c, 42);
    frame_t f{};
    // The paddle starts mid-row, at most rows - 1 moves from any ball.
    for (int episode = 0; episode < 200; ++episode) {
      g.reset(f);
      seedrl::step_result r;
      do {
        r = g.step(follow_ball(g), f);
      } while (!r.done());
      CHECK(r.reward == 1.0);
    }
    seedrl::random_generator rng(5);
    const int episodes = 20000;
    double total = 0.0;
    for (int episode = 0; episode < episodes; ++episode) {
      g.reset(f);
      seedrl::step_result r;
      do {
        r = g.step(static_cast<std::int32_t>(rng.below(3)), f);
        total += r.reward;
      } while (!r.done());
    }
    // The ball's column is uniform and independent of the actions, and wherever the paddle
    // is it covers paddle_width of the columns: a random policy catches with probability
    // paddle_width / columns, whatever its walk. Returns are +-1, so the standard error of the
    // mean is below 1 / sqrt(episodes) = 0.007.
    const double expected = 2.0 * c.paddle_width / c.columns - 1.0;
    CHECK(total / episodes == Approx(expected).margin(0.03));
  }
}

TEST_CASE("catch frames go through env_batch with auto-reset", "[catch][env_batch]") {
  auto batch = seedrl::env_batch<catch_game>::create(
      3, [](std::size_t) { return catch_game{}; }, 9);
  REQUIRE(batch.observation_spec() == catch_game::observation_spec());
  REQUIRE(batch.observations().size() == 3 * 84 * 84);
  std::vector<std::int32_t> actions(3, catch_game::stay);
  double finished = 0;
  for (int t = 0; t < 9; ++t) {
    for (std::size_t i = 0; i < 3; ++i) {
      const auto obs = batch.observation(i);
      REQUIRE(std::equal(obs.begin(), obs.end(),
                         expected_frame(batch.env(i).config(), batch.env(i).game_state()).begin()));
    }
    batch.step(actions);
    for (std::size_t i = 0; i < 3; ++i) {
      CHECK(batch.dones()[i] == (t == 8));
      CHECK(std::abs(batch.rewards()[i]) == (t == 8 ? 1.0f : 0.0f));
    }
    finished += static_cast<double>(batch.finished_episodes().size());
  }
  CHECK(finished == 3);
  for (std::size_t i = 0; i < 3; ++i)
    CHECK(batch.env(i).game_state().ball_row == 0);  // reset after the terminal step
}

TEST_CASE("catch frames reach the learner as uint8 [84, 84] through the actor runtime",
          "[catch][runtime]") {
  namespace proto = seedrl::protocol;
  seedrl::in_process_transport transport;
  const seedrl::in_process_endpoint endpoint{"catch-actor"};
  auto listener = transport.listen(endpoint);
  seedrl::actor_config ac;
  ac.num_envs = 2;
  ac.max_steps = 12;
  ac.stats_interval = std::chrono::milliseconds(0);
  seedrl::actor<catch_game, std::function<seedrl::in_process_connection()>> a(
      ac, [](std::size_t) { return catch_game{}; }, [&] { return transport.connect(endpoint); });
  std::atomic<bool> stop{false};
  std::int64_t actor_steps = 0;
  std::thread actor_thread([&] { actor_steps = a.run(stop); });

  auto c = listener.accept();
  auto read_frame = [&](proto::frame_header& h) {
    std::array<std::byte, proto::header_size> raw{};
    c.read(raw);
    REQUIRE(proto::decode_header(raw, proto::default_max_payload, h) == proto::error_code::none);
    std::vector<std::byte> payload(h.payload_length);
    if (!payload.empty())
      c.read(payload);
    return payload;
  };
  auto write = [&](std::span<const std::byte> frame) {
    const std::span<const std::byte> bufs[] = {frame};
    c.write(bufs);
  };
  proto::frame_header h{};
  auto payload = read_frame(h);
  REQUIRE(h.type == proto::message_type::hello);
  proto::hello hello;
  REQUIRE(proto::decode_hello(payload, hello) == proto::error_code::none);
  CHECK(hello.observation == seedrl::observation_spec{seedrl::dtype::uint8, {84, 84}});
  CHECK(hello.action == seedrl::action_spec::discrete(3));
  std::vector<std::byte> out;
  proto::encode_welcome({0, 2, proto::default_max_payload, 0}, out);
  write(out);

  // Always move right: after t steps the paddle is at min(4 + t, 9), the ball on row t, and the
  // episode ends on the ninth step with the next episode's first frame.
  proto::step_view view;
  std::array<std::byte, proto::header_size + 4 + 8> actions_frame{};
  const std::array<std::int32_t, 2> right{catch_game::right, catch_game::right};
  for (int t = 0; t < 12; ++t) {
    INFO("step " << t);
    payload = read_frame(h);
    REQUIRE(h.type == proto::message_type::step);
    REQUIRE(proto::parse_step(payload, 2, 84 * 84, view) == proto::error_code::none);
    for (std::size_t i = 0; i < 2; ++i) {
      frame_t f{};
      view.copy_observation(i, seedrl::dtype::uint8, std::as_writable_bytes(std::span(f)));
      const int row = t % 9;
      const int paddle = t < 9 ? std::min(4 + t, 9) : 4 + row;
      CHECK(view.done(i) == (t == 0 || t == 9));  // the C++ actor flags first observations
      CHECK(std::abs(view.reward(i)) == (t == 9 ? 1.0f : 0.0f));
      // Find the ball in the top-left pixel of its cell row.
      int ball_column = -1;
      for (int col = 0; col < 10; ++col) {
        if (pixel(f, catch_game::cell_begin(row, 10), catch_game::cell_begin(col, 10)) == 255)
          ball_column = col;
      }
      REQUIRE(ball_column >= 0);
      CHECK(f == expected_frame({}, {row, ball_column, paddle}));
    }
    const std::size_t n = proto::encode_discrete_actions(actions_frame, right);
    write(std::span<const std::byte>(actions_frame).first(n));
  }
  actor_thread.join();
  CHECK(actor_steps == 12);
}
