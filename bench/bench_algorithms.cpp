// PPO's update against IMPALA's training step on the same batch (issue 15's "Numbers").
//
// Both run through host_trainer::train_step, the learner's CPU trainer, on one fixed training
// batch of T = 20, B = 32 unrolls: IMPALA takes one gradient step on the whole batch (the
// baseline); PPO (ppo_loss defaults) takes epochs x minibatches = 4 x 4 steps on minibatches
// of 8 unrolls, after one forward pass for the values the batch arrived to. Both report
// samples (T * B) per trained batch per second, so PPO / IMPALA in samples/s is read off the
// two rows directly (PPO's 16 steps each see a quarter of the batch: about 4 IMPALA steps'
// arithmetic plus the extra forward).
//
// Networks (mlp_lstm_agent):
//   cartpole_mlp   the CartPole demo's: MLP 64-64, no LSTM, 4 observations, 2 actions,
//                  categorical policy;
//   cartpole_lstm  the default config (MLP 64-64 + LSTM 64), as seedrl_bench_train;
//   pendulum       seedrl_pendulum's: MLP 64-64, no LSTM, 3 observations, one continuous
//                  action (outputs: mean and log-std), diagonal Gaussian tanh-squashed into
//                  [-2, 2] (diag_gaussian_distribution<float>).
// Run with --benchmark_repetitions and read the medians; add
// --benchmark_enable_random_interleaving=true so that load drift hits every row alike.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/algo/policy_distribution.hpp"
#include "seedrl/algo/ppo_loss.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/runtime/trainer.hpp"
#include "seedrl/runtime/training_batch.hpp"

namespace {

constexpr std::size_t T = 20, B = 32;
constexpr double max_grad_norm = 40.0;
constexpr float max_torque = 2.0f;  // Pendulum-v1's action bounds

enum class net_kind { cartpole_mlp, cartpole_lstm, pendulum };

seedrl::mlp_lstm_agent_config net_config(net_kind kind) {
  seedrl::mlp_lstm_agent_config c;  // MLP 64-64 + LSTM 64, 4 observations, 2 actions
  if (kind == net_kind::cartpole_mlp)
    c.lstm_size = 0;
  if (kind == net_kind::pendulum) {
    c.lstm_size = 0;
    c.observation_size = 3;
    c.continuous_action_size = 1;
    c.num_actions = 2;  // one mean, one log-std
  }
  return c;
}

/// One training batch, owned, shaped like what the learner hands its trainer. The values are
/// random but of the right kind (episode ends, actions in range); a step's cost does not
/// depend on them beyond that.
struct batch_data {
  std::size_t A = 0, D = 0;
  std::vector<float> observations, rewards, behaviour, start, prev_env_actions, raw_actions;
  std::vector<std::uint8_t> dones, truncated;
  std::vector<std::int32_t> prev_actions, actions;

  batch_data(const seedrl::mlp_lstm_agent_config& c, std::size_t state_width) {
    seedrl::random_generator rng(1);
    const std::size_t rows = (T + 1) * B;
    const auto obs = static_cast<std::size_t>(c.observation_size);
    A = static_cast<std::size_t>(c.num_actions);
    D = static_cast<std::size_t>(c.continuous_action_size);
    const auto uniform = [&](std::vector<float>& v, std::size_t n, double lo, double hi) {
      v.resize(n);
      for (auto& x : v)
        x = static_cast<float>(rng.uniform(lo, hi));
    };
    uniform(observations, rows * obs, -1, 1);
    uniform(behaviour, rows, -1.5, -0.1);
    start.assign(B * state_width, 0.0f);
    dones.resize(rows);
    truncated.resize(rows);
    prev_actions.assign(rows, 0);
    actions.assign(rows, 0);
    if (D == 0) {  // CartPole: reward 1 a step, episodes end by failing
      rewards.assign(rows, 1.0f);
      for (std::size_t i = 0; i < rows; ++i) {
        dones[i] = rng.below(20) == 0;
        actions[i] = static_cast<std::int32_t>(rng.below(A));
        prev_actions[i] = i >= B ? actions[i - B] : 0;
      }
    } else {  // Pendulum: costs up to 16.3, episodes end by the 200-step time limit
      uniform(rewards, rows, -16.3, 0);
      raw_actions.resize(rows * D);
      prev_env_actions.assign(rows * D, 0.0f);
      for (std::size_t i = 0; i < rows; ++i) {
        dones[i] = truncated[i] = rng.below(200) == 0;
        for (std::size_t d = 0; d < D; ++d) {
          raw_actions[i * D + d] = static_cast<float>(rng.normal());
          if (i >= B)
            prev_env_actions[i * D + d] = max_torque * std::tanh(raw_actions[(i - B) * D + d]);
        }
      }
    }
  }

  seedrl::training_batch<float> view() const {
    return {
        T,         B,     A, observations,     rewards,    dones, truncated, prev_actions, actions,
        behaviour, start, D, prev_env_actions, raw_actions};
  }
};

/// seedrl_pendulum's policy distribution: tanh-squashed into [-max_torque, max_torque].
seedrl::diag_gaussian_distribution<float> pendulum_distribution() {
  return {true, {-max_torque}, {max_torque}};
}

/// One trained batch per iteration: train_step with `loss` (all of its update schedule).
template <class L>
void run(benchmark::State& state, net_kind kind, const L& loss) {
  const auto config = net_config(kind);
  seedrl::mlp_lstm_agent<float> net(config);
  seedrl::adam<float> optimizer;
  seedrl::host_trainer trainer(1);
  const batch_data data(config, static_cast<std::size_t>(net.state_size()));
  const auto batch = data.view();
  for (auto _ : state) {
    const auto r = trainer.train_step(batch, net, optimizer, loss, max_grad_norm);
    if (!r.applied) {  // a skipped step would time less work than it claims
      state.SkipWithError(("update skipped: " + r.skipped).c_str());
      break;
    }
    benchmark::DoNotOptimize(r.grad_norm);
  }
  const auto schedule = seedrl::schedule_of(loss);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * T * B));
  state.counters["grad_steps"] = static_cast<double>(schedule.epochs * schedule.minibatches);
}

void BM_impala_step(benchmark::State& state, net_kind kind) {
  if (kind == net_kind::pendulum)
    run(state, kind,
        seedrl::impala_loss<float, seedrl::diag_gaussian_distribution<float>>(
            {}, pendulum_distribution()));
  else
    run(state, kind, seedrl::impala_loss<float>());
}

void BM_ppo_update(benchmark::State& state, net_kind kind) {
  if (kind == net_kind::pendulum)
    run(state, kind,
        seedrl::ppo_loss<float, seedrl::diag_gaussian_distribution<float>>(
            {}, pendulum_distribution()));
  else
    run(state, kind, seedrl::ppo_loss<float>());
}

BENCHMARK_CAPTURE(BM_impala_step, cartpole_mlp, net_kind::cartpole_mlp)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ppo_update, cartpole_mlp, net_kind::cartpole_mlp)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_impala_step, cartpole_lstm, net_kind::cartpole_lstm)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ppo_update, cartpole_lstm, net_kind::cartpole_lstm)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_impala_step, pendulum, net_kind::pendulum)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ppo_update, pendulum, net_kind::pendulum)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
