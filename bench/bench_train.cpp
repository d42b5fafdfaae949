// Training-side costs: one full training step of the CartPole network. V-trace against memcpy
// is in bench_vtrace.cpp.
//
// BM_train_step: forward over a [T+1 = 21, B = 32] unroll of the MLP 64-64 + LSTM 64 network,
// the IMPALA loss, backward through time, global-norm clipping and an Adam step; reported as
// samples (T * B) per second. Its baseline is BM_sgemm_1024 in seedrl_bench_lstm.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/optim/clip.hpp"

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

}  // namespace

BENCHMARK_MAIN();
