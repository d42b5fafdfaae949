#pragma once
// A Trainer that keeps a copy of every training batch the learner hands it and changes no
// parameter, for the tests that check what the learner assembled (discrete and continuous).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/runtime/trainer.hpp"
#include "seedrl/runtime/training_batch.hpp"

namespace seedrl_test {

/// A copy of one training_batch<float>, every field (those an algorithm leaves out stay empty).
struct recorded_batch {
  std::size_t T = 0, B = 0, D = 0, num_actions = 0;
  std::vector<float> observations, rewards, behaviour_log_probs, start_state, prev_env_actions,
      raw_actions;
  std::vector<std::uint8_t> dones, truncated;
  std::vector<std::int32_t> prev_actions, actions;
};

/// Copies every batch and changes no parameter, so that inference runs with the initial
/// parameters throughout and its log-probs can be recomputed afterwards. Copies share the record.
struct recording_trainer {
  struct record {
    std::mutex mutex;
    std::vector<recorded_batch> batches;
  };
  std::shared_ptr<record> r = std::make_shared<record>();

  template <class Net, class Opt>
  seedrl::train_step_result train_step(const seedrl::training_batch<float>& b, Net&, Opt&,
                                       const seedrl::impala_loss<float>&, double) {
    recorded_batch c;
    c.T = b.T;
    c.B = b.B;
    c.D = b.action_dim;
    c.num_actions = b.num_actions;
    c.observations.assign(b.observations.begin(), b.observations.end());
    c.rewards.assign(b.rewards.begin(), b.rewards.end());
    c.dones.assign(b.dones.begin(), b.dones.end());
    c.truncated.assign(b.truncated.begin(), b.truncated.end());
    c.prev_actions.assign(b.prev_actions.begin(), b.prev_actions.end());
    c.actions.assign(b.actions.begin(), b.actions.end());
    c.behaviour_log_probs.assign(b.behaviour_log_probs.begin(), b.behaviour_log_probs.end());
    c.start_state.assign(b.start_state.begin(), b.start_state.end());
    c.prev_env_actions.assign(b.prev_env_actions.begin(), b.prev_env_actions.end());
    c.raw_actions.assign(b.raw_actions.begin(), b.raw_actions.end());
    std::lock_guard lock(r->mutex);
    r->batches.push_back(std::move(c));
    return {};
  }
  template <class Net, class Opt>
  void sync_to_host(Net&, Opt&) noexcept {}
  template <class Net, class Opt>
  void load_from_host(Net&, Opt&) noexcept {}
};

}  // namespace seedrl_test
