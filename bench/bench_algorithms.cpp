// PPO's update (issue 15's "Numbers") and R2D2's training step (issue 31's) against IMPALA's
// training step on the same batch.
//
// Both run through host_trainer::train_step, the learner's CPU trainer, on one fixed training
// batch of T = 20, B = 32 unrolls: IMPALA takes one gradient step on the whole batch (the
// baseline); PPO (ppo_loss defaults) takes epochs x minibatches = 4 x 4 steps on minibatches
// of 8 unrolls, after one forward pass for the values the batch arrived to. Both report
// samples (T * B) per trained batch per second, so PPO / IMPALA in samples/s is read off the
// two rows directly (PPO's 16 steps each see a quarter of the batch: about 4 IMPALA steps'
// arithmetic plus the extra forward). R2D2 (r2d2_loss defaults but for the burn-in) takes one
// gradient step after the target network's forward pass over the whole batch: burn-in 0 trains
// every step as IMPALA does; burn-in 10 first steps the network over 10 steps without keeping
// activations and trains the other 10 (the items count the batch's steps either way).
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

#include <cstdint>
#include <string>

#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/algo/policy_distribution.hpp"
#include "seedrl/algo/ppo_loss.hpp"
#include "seedrl/algo/r2d2_loss.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/runtime/trainer.hpp"
#include "seedrl/runtime/training_batch.hpp"

#include "random_training_batch.hpp"

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

/// The benchmarks' batch for a network of config `c`.
seedrl_bench::batch_shape batch_for(const seedrl::mlp_lstm_agent_config& c,
                                    std::size_t state_width) {
  seedrl_bench::batch_shape s;
  s.T = T;
  s.B = B;
  s.observation_size = static_cast<std::size_t>(c.observation_size);
  s.num_actions = static_cast<std::size_t>(c.num_actions);
  s.action_dim = static_cast<std::size_t>(c.continuous_action_size);
  s.state_width = state_width;
  s.action_bound = max_torque;
  if (s.action_dim > 0) {  // Pendulum's episodes end only at its 200-step time limit
    s.episode_length = 200;
    s.ends_are_time_limits = true;
  }
  return s;
}

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
  const seedrl_bench::random_training_batch data(
      batch_for(config, static_cast<std::size_t>(net.state_size())), 1);
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

void BM_r2d2_step(benchmark::State& state, net_kind kind, std::size_t burn_in) {
  seedrl::r2d2_loss_config<float> c;
  c.burn_in = burn_in;
  run(state, kind, seedrl::r2d2_loss<float>(c));
}

BENCHMARK_CAPTURE(BM_impala_step, cartpole_mlp, net_kind::cartpole_mlp)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ppo_update, cartpole_mlp, net_kind::cartpole_mlp)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_impala_step, cartpole_lstm, net_kind::cartpole_lstm)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ppo_update, cartpole_lstm, net_kind::cartpole_lstm)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_r2d2_step, cartpole_mlp, net_kind::cartpole_mlp, 0)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_r2d2_step, cartpole_lstm, net_kind::cartpole_lstm, 0)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_r2d2_step, cartpole_lstm_burn_in_10, net_kind::cartpole_lstm, 10)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_impala_step, pendulum, net_kind::pendulum)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ppo_update, pendulum, net_kind::pendulum)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
