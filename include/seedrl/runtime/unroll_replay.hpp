#pragma once
/// \file
/// `unroll_replay`: where the learner's completed unrolls go when its loss trains from a replay
/// (seedrl::ReplayLoss, R2D2) instead of the training queue: the inference loop inserts each
/// unroll as one sequence, the training loop samples batches and gives the priorities back.
/// It is a `replay::sequence_replay` whose stored observation type is chosen at run time from
/// the observation spec: uint8 frames stay uint8 (a quarter of float's bytes), anything else is
/// stored as the learner's scalar.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <istream>
#include <memory>
#include <optional>
#include <ostream>
#include <span>
#include <utility>

#include "seedrl/core/random.hpp"
#include "seedrl/replay/sequence_replay.hpp"
#include "seedrl/runtime/unroll_builder.hpp"

namespace seedrl {

/// See the file comment.
template <std::floating_point S>
class unroll_replay {
 public:
  /// `uint8_frames`: observations arrive as uint8 values (stored so); `batch`: sequences per
  /// sample. Throws std::invalid_argument as sequence_replay's constructor does.
  unroll_replay(const replay::sequence_replay_config& config, const replay::sequence_shape& shape,
                std::size_t batch, bool uint8_frames) {
    if (uint8_frames)
      frames_ = std::make_unique<replay::sequence_replay<std::uint8_t, S>>(config, shape, batch);
    else
      values_ = std::make_unique<replay::sequence_replay<S, S>>(config, shape, batch);
  }

  /// Stores `u` (T + 1 steps) as one sequence, waiting while actors are ahead of training.
  /// False once closed (nothing stored).
  bool insert(const unroll<S>& u) {
    const replay::sequence_view<S> v{u.observations, u.rewards, u.dones,      u.truncated,
                                     u.prev_actions, u.actions, u.start_state};
    return visit([&](auto& r) { return r.insert(v).has_value(); });
  }

  bool sample(random_generator& rng, replay::sampled_sequences<S>& out) {
    return visit([&](auto& r) { return r.sample(rng, out); });
  }

  void update_priorities(std::span<const std::uint64_t> ids, std::span<const double> priorities) {
    visit([&](auto& r) { r.update_priorities(ids, priorities); });
  }

  void close() {
    visit([](auto& r) { r.close(); });
  }

  /// sequence_replay::save and ::load (seedrl/replay/replay_file.hpp puts them in files).
  std::size_t save(std::ostream& out) {
    return visit([&](auto& r) { return r.save(out); });
  }
  std::size_t load(std::istream& in) {
    return visit([&](auto& r) { return r.load(in); });
  }

  replay::replay_stats stats() const { return frames_ ? frames_->stats() : values_->stats(); }

  std::size_t capacity() const { return frames_ ? frames_->capacity() : values_->capacity(); }

 private:
  template <class F>
  decltype(auto) visit(F&& f) {
    return frames_ ? std::forward<F>(f)(*frames_) : std::forward<F>(f)(*values_);
  }

  std::unique_ptr<replay::sequence_replay<std::uint8_t, S>> frames_;
  std::unique_ptr<replay::sequence_replay<S, S>> values_;
};

}  // namespace seedrl
