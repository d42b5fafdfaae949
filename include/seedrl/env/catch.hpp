#pragma once
/// \file
/// Catch, a pixel game small enough to learn on a CPU in minutes, so that tests and benchmarks
/// exercise the whole pixel path (uint8 frames, convolutional networks, learner-side frame
/// stacking) without Python or ALE.
///
/// A ball starts in a random column of the top row of a `rows` x `columns` grid and falls one
/// row per step. The agent moves a paddle `paddle_width` cells wide along the bottom row: left,
/// stay or right (actions 0, 1, 2), one cell per step, stopping at the walls. When the ball
/// reaches the bottom row, after `rows - 1` steps, the episode terminates with reward +1 if
/// the ball is above the paddle and -1 if not; every other step gives 0. The paddle starts in
/// the middle, so a policy that follows the ball catches it whenever `rows - 1` steps suffice
/// to get there (always with the default 10 x 10 grid).
///
/// Observations are one 84 x 84 grayscale frame, uint8 [84, 84] row-major: background 0,
/// paddle 128, ball 255 (drawn over the paddle). Grid cell (r, c) covers pixel rows
/// [r * 84 / rows, (r + 1) * 84 / rows) and columns [c * 84 / columns, (c + 1) * 84 / columns),
/// rounded down, so cells differ by at most one pixel when 84 is not a multiple of the grid.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>

#include "seedrl/core/random.hpp"
#include "seedrl/core/spec.hpp"
#include "seedrl/env/environment.hpp"

namespace seedrl {

/// Grid of a Catch game.
struct catch_config {
  std::int32_t rows = 10;         ///< 2..84; the ball falls for rows - 1 steps
  std::int32_t columns = 10;      ///< 1..84
  std::int32_t paddle_width = 1;  ///< 1..columns cells
};

/// The game Catch rendered at 84 x 84; models seedrl::Environment (see the file comment).
class catch_game {
 public:
  using observation_type = std::uint8_t;
  using action_type = std::int32_t;

  /// Side of the square frame, in pixels.
  static constexpr std::int32_t screen_size = 84;
  static constexpr std::uint8_t background_value = 0;
  static constexpr std::uint8_t paddle_value = 128;
  static constexpr std::uint8_t ball_value = 255;
  /// Actions: move the paddle one cell left, keep it, move it one cell right.
  static constexpr action_type left = 0, stay = 1, right = 2;

  /// Where the ball and the paddle are; `paddle_column` is the paddle's leftmost cell.
  struct state {
    std::int32_t ball_row = 0;
    std::int32_t ball_column = 0;
    std::int32_t paddle_column = 0;
  };

  /// Throws std::invalid_argument for a grid outside the documented ranges.
  explicit catch_game(catch_config config = {}, std::uint64_t seed = 0)
      : config_(config), rng_(seed) {
    if (config.rows < 2 || config.rows > screen_size) {
      throw std::invalid_argument("seedrl::catch_game: rows must be in [2, 84], got " +
                                  std::to_string(config.rows));
    }
    if (config.columns < 1 || config.columns > screen_size) {
      throw std::invalid_argument("seedrl::catch_game: columns must be in [1, 84], got " +
                                  std::to_string(config.columns));
    }
    if (config.paddle_width < 1 || config.paddle_width > config.columns) {
      throw std::invalid_argument("seedrl::catch_game: paddle_width must be in [1, columns], got " +
                                  std::to_string(config.paddle_width));
    }
  }

  static seedrl::observation_spec observation_spec() {
    return {dtype::uint8, {screen_size, screen_size}};
  }
  static seedrl::action_spec action_spec() { return action_spec::discrete(3); }

  /// Restarts the stream that draws the ball's column.
  void seed(std::uint64_t seed) noexcept { rng_.seed(seed); }

  /// Starts an episode: the ball in a uniformly drawn column of the top row, the paddle in the
  /// middle of the bottom row.
  void reset(std::span<std::uint8_t> observation) {
    state s;
    s.ball_row = 0;
    s.ball_column =
        static_cast<std::int32_t>(rng_.below(static_cast<std::uint64_t>(config_.columns)));
    s.paddle_column = (config_.columns - config_.paddle_width) / 2;
    reset_to(s, observation);
  }

  /// Starts an episode from a given state (tests, replays). Throws std::invalid_argument when
  /// the ball is off the grid or above-or-on the bottom row, or the paddle does not fit.
  void reset_to(const state& s, std::span<std::uint8_t> observation) {
    check_size(observation);
    if (s.ball_row < 0 || s.ball_row >= config_.rows - 1 || s.ball_column < 0 ||
        s.ball_column >= config_.columns || s.paddle_column < 0 ||
        s.paddle_column > config_.columns - config_.paddle_width) {
      throw std::invalid_argument(
          "seedrl::catch_game::reset_to: the ball must be on the grid above the bottom row and "
          "the paddle within the bottom row");
    }
    state_ = s;
    ended_ = false;
    render(observation);
  }

  /// Moves the paddle by `action`, then lets the ball fall one row.
  step_result step(action_type action, std::span<std::uint8_t> observation) {
    if (action < left || action > right) {
      throw std::out_of_range("seedrl::catch_game::step: action " + std::to_string(action) +
                              " is outside the action space {0, 1, 2}");
    }
    if (ended_) {
      throw std::logic_error("seedrl::catch_game::step: the episode has ended; call reset() first");
    }
    check_size(observation);
    state_.paddle_column = std::clamp(state_.paddle_column + (action - stay), 0,
                                      config_.columns - config_.paddle_width);
    ++state_.ball_row;
    step_result result;
    if (state_.ball_row == config_.rows - 1) {
      result.terminated = true;
      result.reward = caught() ? 1.0 : -1.0;
      ended_ = true;
    }
    render(observation);
    return result;
  }

  /// The current positions.
  const state& game_state() const noexcept { return state_; }
  const catch_config& config() const noexcept { return config_; }

  /// First pixel row (or column) of grid row (or column) `cell` in a grid of `cells`; cell
  /// `cells` gives 84, the end of the last one.
  static constexpr std::int32_t cell_begin(std::int32_t cell, std::int32_t cells) noexcept {
    return cell * screen_size / cells;
  }

 private:
  bool caught() const noexcept {
    return state_.ball_column >= state_.paddle_column &&
           state_.ball_column < state_.paddle_column + config_.paddle_width;
  }

  static void check_size(std::span<std::uint8_t> observation) {
    if (observation.size() != static_cast<std::size_t>(screen_size * screen_size)) {
      throw std::invalid_argument("seedrl::catch_game: observation buffer holds " +
                                  std::to_string(observation.size()) +
                                  " bytes, needs 84 * 84 = 7056");
    }
  }

  /// Fills grid cells [row0, row1) x [col0, col1) with `value`.
  void fill_cells(std::span<std::uint8_t> frame, std::int32_t row0, std::int32_t row1,
                  std::int32_t col0, std::int32_t col1, std::uint8_t value) const noexcept {
    const std::int32_t y0 = cell_begin(row0, config_.rows), y1 = cell_begin(row1, config_.rows);
    const std::int32_t x0 = cell_begin(col0, config_.columns);
    const std::int32_t x1 = cell_begin(col1, config_.columns);
    for (std::int32_t y = y0; y < y1; ++y) {
      const auto line = frame.subspan(static_cast<std::size_t>(y * screen_size));
      std::fill(line.begin() + x0, line.begin() + x1, value);
    }
  }

  void render(std::span<std::uint8_t> frame) const noexcept {
    std::fill(frame.begin(), frame.end(), background_value);
    const std::int32_t bottom = config_.rows - 1;
    fill_cells(frame, bottom, bottom + 1, state_.paddle_column,
               state_.paddle_column + config_.paddle_width, paddle_value);
    fill_cells(frame, state_.ball_row, state_.ball_row + 1, state_.ball_column,
               state_.ball_column + 1, ball_value);
  }

  catch_config config_;
  random_generator rng_;
  state state_;
  bool ended_ = true;  // step() before the first reset() is an error too
};

static_assert(check_environment<catch_game>());

}  // namespace seedrl
