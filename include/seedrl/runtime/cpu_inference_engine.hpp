#pragma once
/// \file
/// `cpu_inference_engine<Net>` models InferenceEngine (seedrl/runtime/inference_engine.hpp) on
/// the host: Net::infer (Eigen) on host buffers, the recurrent state table in host memory.
///
/// With `workers` W > 1, a batch's B rows are split into W contiguous chunks (the first
/// B mod W chunks one row longer), each inferred by a network copy of its own: chunk 0 on the
/// calling thread, the others on W - 1 persistent threads started at construction. Rows are
/// independent, so a row's outputs do not depend on W, up to the network's own batch-size
/// dependence (Eigen may sum a product in a different order for a different row count).
/// The threads are a detail::worker_pool: no thread is created and nothing is allocated per
/// batch.
///
/// uint8 frames (agent_step_input::observations_u8) are widened to S by each lane for its own
/// rows, into a buffer of the lane's (sized at the first such batch), right before its
/// network step: the same values the float path would carry, so the outputs are identical.
/// Every row's state_before is kept, whatever agent_step_input::keep_state asks.
///
/// `Net` models LearnerNetwork (seedrl/runtime/learner_network.hpp).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "seedrl/net/agent_io.hpp"
#include "seedrl/runtime/detail/worker_pool.hpp"
#include "seedrl/runtime/inference_engine.hpp"
#include "seedrl/runtime/parameter_store.hpp"

namespace seedrl {

/// See the file comment.
template <class Net>
class cpu_inference_engine {
 public:
  using scalar_type = typename Net::scalar_type;
  using S = scalar_type;

  cpu_inference_engine(const Net& net, const inference_engine_config& config)
      : max_envs_(config.max_envs),
        max_batch_(config.max_batch),
        policy_width_(config.policy_width),
        width_(checked_width(net, config)),
        table_(max_envs_ * width_, S(0)),
        before_(max_batch_ * width_, S(0)),
        pool_(config.workers) {
    const std::size_t W = config.workers;
    chunk_ = (max_batch_ + W - 1) / W;  // the longest chunk
    lanes_.reserve(W);
    for (std::size_t w = 0; w < W; ++w)
      lanes_.push_back(lane{net, net.initial_state(chunk_), {}});
  }

  cpu_inference_engine(const cpu_inference_engine&) = delete;
  cpu_inference_engine& operator=(const cpu_inference_engine&) = delete;

  std::size_t max_envs() const noexcept { return max_envs_; }
  std::size_t max_batch() const noexcept { return max_batch_; }
  std::size_t state_width() const noexcept { return width_; }
  std::size_t policy_width() const noexcept { return policy_width_; }
  std::size_t workers() const noexcept { return lanes_.size(); }

  void reset_state(std::size_t slot) {
    check_slot(slot);
    std::fill_n(table_.begin() + static_cast<std::ptrdiff_t>(slot * width_), width_, S(0));
  }

  void infer(std::span<const std::uint32_t> slots, const agent_step_input<S>& in,
             const agent_step_output<S>& out) {
    const std::size_t B = slots.size();
    if (B > max_batch_) {
      throw std::invalid_argument("seedrl::cpu_inference_engine: a batch of " + std::to_string(B) +
                                  " rows, built for at most " + std::to_string(max_batch_));
    }
    for (const auto slot : slots)
      check_slot(slot);
    job_ = {slots, in, out};
    pool_.run([this](std::size_t w) { run_lane(w); });
  }

  std::span<const S> state_before(std::size_t row) const {
    return {before_.data() + row * width_, width_};
  }

  bool update_parameters(const parameter_store<S>& params, std::uint64_t* version) {
    // Every lane is idle between batches (infer() waits for them all), so the copies below
    // cannot race a lane's step; the next batch's hand-off publishes them to the threads.
    if (!params.update_if_newer(version, lanes_[0].net.parameters()))
      return false;
    const auto first = lanes_[0].net.parameters();
    for (std::size_t w = 1; w < lanes_.size(); ++w)
      std::copy(first.begin(), first.end(), lanes_[w].net.parameters().begin());
    return true;
  }

 private:
  /// One network copy with its own state buffer for the rows of its chunk.
  struct lane {
    Net net;
    typename Net::state_type state;
    std::vector<S> widened;  // [chunk, observation_size]: its rows' uint8 frames as S
  };

  /// What the current batch asks for; written before the hand-off, read by every lane.
  struct job {
    std::span<const std::uint32_t> slots;
    agent_step_input<S> in;
    agent_step_output<S> out;
  };

  static std::size_t checked_width(const Net& net, const inference_engine_config& c) {
    if (c.workers == 0)
      throw std::invalid_argument("seedrl::cpu_inference_engine: 0 workers; at least 1");
    if (c.max_batch == 0)
      throw std::invalid_argument("seedrl::cpu_inference_engine: a batch of at most 0 rows");
    if constexpr (requires { net.policy_size(); }) {
      if (static_cast<std::size_t>(net.policy_size()) != c.policy_width) {
        throw std::invalid_argument("seedrl::cpu_inference_engine: the network writes " +
                                    std::to_string(net.policy_size()) +
                                    " policy outputs per row, the engine was asked for " +
                                    std::to_string(c.policy_width));
      }
    }
    if (net.state_size() < 0)
      throw std::invalid_argument("seedrl::cpu_inference_engine: a negative state width");
    return static_cast<std::size_t>(net.state_size());
  }

  void check_slot(std::size_t slot) const {
    if (slot >= max_envs_) {
      throw std::out_of_range("seedrl::cpu_inference_engine: slot " + std::to_string(slot) +
                              " is outside [0, " + std::to_string(max_envs_) + ")");
    }
  }

  /// Lane `w`'s rows of the current job: gather their states, step, scatter the new states.
  /// Lanes touch disjoint rows of every buffer and (slots being distinct) of the table.
  void run_lane(std::size_t w) {
    const std::size_t B = job_.slots.size(), W = lanes_.size();
    const std::size_t b0 = B / W * w + std::min(w, B % W);
    const std::size_t n = B / W + (w < B % W ? 1 : 0);
    if (n == 0)
      return;
    auto& l = lanes_[w];
    const auto& in = job_.in;
    const bool bytes = !in.observations_u8.empty();
    const std::size_t obs = (bytes ? in.observations_u8.size() : in.observations.size()) / B;
    const std::size_t D = in.prev_continuous_actions.size() / B;
    const std::size_t P = policy_width_;
    for (std::size_t r = b0; r < b0 + n; ++r) {
      const auto src = table_.begin() + static_cast<std::ptrdiff_t>(job_.slots[r] * width_);
      std::copy_n(src, width_, before_.begin() + static_cast<std::ptrdiff_t>(r * width_));
      std::copy_n(src, width_,
                  l.state.data.begin() + static_cast<std::ptrdiff_t>((r - b0) * width_));
    }
    l.state.batch = static_cast<std::ptrdiff_t>(n);
    std::span<const S> observations;
    if (bytes) {
      // The first layer's input: this lane's frames widened (exactly) to S.
      if (l.widened.size() < chunk_ * obs)
        l.widened.resize(chunk_ * obs);  // once: every later batch fits
      const auto src = in.observations_u8.subspan(b0 * obs, n * obs);
      std::transform(src.begin(), src.end(), l.widened.begin(),
                     [](std::uint8_t x) { return static_cast<S>(x); });
      observations = std::span<const S>(l.widened).first(n * obs);
    } else {
      observations = in.observations.subspan(b0 * obs, n * obs);
    }
    agent_step_output<S> out{job_.out.logits.subspan(b0 * P, n * P),
                             job_.out.values.subspan(b0, n)};
    l.net.infer({observations, in.rewards.subspan(b0, n), in.dones.subspan(b0, n),
                 in.prev_actions.subspan(b0, n), in.prev_continuous_actions.subspan(b0 * D, n * D)},
                l.state, out);
    for (std::size_t r = b0; r < b0 + n; ++r) {
      std::copy_n(l.state.data.begin() + static_cast<std::ptrdiff_t>((r - b0) * width_), width_,
                  table_.begin() + static_cast<std::ptrdiff_t>(job_.slots[r] * width_));
    }
  }

  std::size_t max_envs_, max_batch_, policy_width_, width_;
  std::size_t chunk_ = 0;  // the longest lane's rows
  std::vector<S> table_;   // [max_envs, width]: each slot's state after its last step
  std::vector<S> before_;  // [max_batch, width]: each row's state before the last step
  std::vector<lane> lanes_;
  job job_;

  // Lanes 1..W-1 run on its threads; last, so they stop before what they use is destroyed.
  detail::worker_pool pool_;
};

}  // namespace seedrl
