// Training-side costs: one full training step of the CartPole network. V-trace against memcpy
// is in bench_vtrace.cpp.
//
// BM_train_step: forward over a [T+1 = 21, B = 32] unroll of the MLP 64-64 + LSTM 64 network,
// the IMPALA loss, backward through time, global-norm clipping and an Adam step; reported as
// samples (T * B) per second. Its baseline is BM_sgemm_1024 in seedrl_bench_lstm.
//
// BM_trainer_threads/<net>: host_trainer::train_step (IMPALA loss, Adam) with 1 thread and with
// 2 (learner_config::trainer_threads) on copies of the same network and the same batch,
// alternated in every iteration so that both see the same machine load; wall time, since the
// second thread's work is the point. Counters: w1_ms and w2_ms per step, speedup = w1 / w2,
// load = the 1-minute load average when the benchmark started. Networks: the CartPole MLP 64-64
// + LSTM 64 at T = 20, B = 32, and the Atari example's frame-stacked Nature CNN + LSTM 512 at
// 84x84, 4-frame stacks, 6 actions, T = 20, B = 32.
//
// BM_one_trainer/<net>: the learner's CPU trainer (host_trainer, one thread, on the CPU agent)
// against the recipe trainer the GPU runs (backend_trainer on host_backend: backend_agent_trainer
// through the Trainer members, the new parameters copied into the network each step), on copies
// of the same network and the same batch, alternated in every iteration. Counters: host_ms and
// backend_ms per step, ratio = backend / host. Networks: the CartPole MLP 64-64 without and with
// the LSTM 64, and the Atari network above.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "atari_network.hpp"
#include "random_training_batch.hpp"
#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/optim/clip.hpp"
#include "seedrl/runtime/trainer.hpp"
#include "seedrl/train/backend_trainer.hpp"
#include "seedrl/train/mlp_lstm_recipe.hpp"
#include "seedrl/train/pixel_lstm_recipe.hpp"

namespace {

std::vector<float> random_floats(std::size_t n, seedrl::random_generator& rng, double lo,
                                 double hi) {
  std::vector<float> v(n);
  for (auto& x : v)
    x = static_cast<float>(rng.uniform(lo, hi));
  return v;
}

void BM_train_step(benchmark::State& state) {
  const std::size_t T = 20, T1 = T + 1, B = 32, A = 2;
  seedrl::mlp_lstm_agent<float> net;  // the CartPole network
  seedrl::impala_loss<float> loss;
  seedrl::adam<float> optimizer;
  seedrl::random_generator rng(1);
  const auto obs = random_floats(T1 * B * 4, rng, -1, 1);
  const auto rewards = random_floats(T1 * B, rng, 0, 1);
  const auto behaviour = random_floats(T1 * B, rng, -1.5, -0.1);
  std::vector<std::uint8_t> dones(T1 * B), truncated(T1 * B);  // no time limits
  std::vector<std::int32_t> prev_actions(T1 * B), actions(T1 * B);
  for (std::size_t i = 0; i < T1 * B; ++i) {
    dones[i] = rng.below(20) == 0;
    actions[i] = static_cast<std::int32_t>(rng.below(A));
    prev_actions[i] = i >= B ? actions[i - B] : 0;
  }
  const std::vector<float> start(B * static_cast<std::size_t>(net.state_size()), 0.0f);
  std::vector<float> logits(T1 * B * A), values(T1 * B), d_logits(T1 * B * A), d_values(T1 * B);
  seedrl::agent_unroll_output<float> out{logits, values};
  seedrl::impala_gradients<float> grads{d_logits, d_values};
  const seedrl::agent_unroll_input<float> in{T1, B, obs, rewards, dones, prev_actions, start};
  for (auto _ : state) {
    net.forward_unroll(in, out);
    const seedrl::impala_batch<float> batch{T,       B,         A,       logits, values,
                                            actions, behaviour, rewards, dones,  truncated};
    benchmark::DoNotOptimize(loss(batch, grads));
    net.zero_gradients();
    net.backward_unroll({d_logits, d_values});
    seedrl::clip_by_global_norm<float>(net.gradients(), 40.0);
    optimizer.step(net.parameters(), net.gradients());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * T * B));
}
BENCHMARK(BM_train_step)->Unit(benchmark::kMicrosecond);

double load_average() {
  double load = -1.0;
  if (std::FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &load) != 1)
      load = -1.0;
    std::fclose(f);
  }
  return load;
}

/// One train_step of `trainer` in wall-clock seconds.
template <class Trainer, class Net>
double timed_step(Trainer& trainer, Net& net, seedrl::adam<float>& opt,
                  const seedrl::training_batch<float>& batch, benchmark::State& state) {
  const seedrl::impala_loss<float> loss;
  const auto start = std::chrono::steady_clock::now();
  const auto r = trainer.train_step(batch, net, opt, loss, 40.0);
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  if (!r.applied)
    state.SkipWithError(("update skipped: " + r.skipped).c_str());
  benchmark::DoNotOptimize(r.grad_norm);
  return took.count();
}

/// Trains copies of `net0` on the same batch with trainers `a` and `b`, alternating in every
/// iteration (both warmed up by one step first: network copies, uploads); counters
/// `<name_a>` and `<name_b>` in ms per step, `a_over_b` (speedup, when a is the baseline) and
/// `b_over_a` (ratio) as named, and the load average.
template <class TrainerA, class TrainerB, class Net>
void alternate_trainers(benchmark::State& state, const Net& net0,
                        const seedrl_bench::batch_shape& shape, TrainerA& a, TrainerB& b,
                        const char* name_a, const char* name_b, const char* ratio_name,
                        bool ratio_b_over_a) {
  const double load = load_average();
  const seedrl_bench::random_training_batch data(shape, 1);
  Net net_a = net0, net_b = net0;
  seedrl::adam<float> opt_a, opt_b;
  (void)timed_step(a, net_a, opt_a, data.view(), state);
  (void)timed_step(b, net_b, opt_b, data.view(), state);
  double sa = 0.0, sb = 0.0;
  for (auto _ : state) {
    sa += timed_step(a, net_a, opt_a, data.view(), state);
    sb += timed_step(b, net_b, opt_b, data.view(), state);
    state.SetIterationTime(0.0);  // the counters carry the times
  }
  const auto n = static_cast<double>(state.iterations());
  state.counters[name_a] = sa / n * 1e3;
  state.counters[name_b] = sb / n * 1e3;
  state.counters[ratio_name] = ratio_b_over_a ? sb / sa : sa / sb;
  state.counters["load"] = load;
}

template <class Net>
void trainer_threads(benchmark::State& state, const Net& net0,
                     const seedrl_bench::batch_shape& shape) {
  seedrl::host_trainer t1(1, 1), t2(1, 2);
  alternate_trainers(state, net0, shape, t1, t2, "w1_ms", "w2_ms", "speedup", false);
}

void BM_trainer_threads_cartpole(benchmark::State& state) {
  const seedrl::mlp_lstm_agent<float> net;
  seedrl_bench::batch_shape s;
  s.state_width = static_cast<std::size_t>(net.state_size());
  trainer_threads(state, net, s);
}

void BM_trainer_threads_atari(benchmark::State& state) {
  const auto net = seedrl_bench::make_atari_network();
  trainer_threads(state, net, seedrl_bench::atari_batch_shape(net));
}
BENCHMARK(BM_trainer_threads_cartpole)->UseManualTime()->Iterations(40);
BENCHMARK(BM_trainer_threads_atari)->UseManualTime()->Iterations(3);

template <class Recipe, class Net>
void one_trainer(benchmark::State& state, const Net& net0, const seedrl_bench::batch_shape& shape) {
  seedrl::host_trainer host(1, 1);
  seedrl::backend_trainer<float, Recipe> backend;
  alternate_trainers(state, net0, shape, host, backend, "host_ms", "backend_ms", "ratio", true);
}

void BM_one_trainer_cartpole_mlp(benchmark::State& state) {
  seedrl::mlp_lstm_agent_config c;
  c.lstm_size = 0;
  const seedrl::mlp_lstm_agent<float> net(c);
  one_trainer<seedrl::mlp_lstm_recipe>(state, net, seedrl_bench::batch_shape{});
}

void BM_one_trainer_cartpole_lstm(benchmark::State& state) {
  const seedrl::mlp_lstm_agent<float> net;
  seedrl_bench::batch_shape s;
  s.state_width = static_cast<std::size_t>(net.state_size());
  one_trainer<seedrl::mlp_lstm_recipe>(state, net, s);
}

void BM_one_trainer_atari(benchmark::State& state) {
  const auto net = seedrl_bench::make_atari_network();
  one_trainer<seedrl::pixel_lstm_recipe<seedrl::nature_cnn_config>>(
      state, net, seedrl_bench::atari_batch_shape(net));
}
BENCHMARK(BM_one_trainer_cartpole_mlp)->UseManualTime()->Iterations(200);
BENCHMARK(BM_one_trainer_cartpole_lstm)->UseManualTime()->Iterations(60);
BENCHMARK(BM_one_trainer_atari)->UseManualTime()->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
