// The cost of data-parallel training on MPI, per training step (issue 30): run as
//   mpirun -np 2 build/.../bench/seedrl_bench_allreduce [--steps N]
// For the CartPole network (MLP 64-64 + LSTM 64) and the Atari one (4-frame stacked Nature CNN
// + LSTM 256), each rank times, alternating in one run:
//   - the step's compute: host_trainer::train_step on this rank's batch (T = 20, B = 32)
//     without a reducer;
//   - the all-reduce alone: mpi_reducer::mean over the network's whole gradient (one fused
//     buffer of P floats, what a step reduces), started when every rank has arrived;
//   - the data-parallel step: the same train_step with the reducer.
// Rank 0 prints the medians of all ranks' samples (the slowest rank's median for the step with
// the reducer, where every rank waits for the slowest) and the ratios. Times are wall clock.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "atari_network.hpp"
#include "random_training_batch.hpp"
#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/distributed/mpi_reducer.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/runtime/trainer.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

/// Milliseconds `f()` takes.
template <class F>
double time_ms(F&& f) {
  const auto start = clock_type::now();
  f();
  return std::chrono::duration<double, std::milli>(clock_type::now() - start).count();
}

/// Each rank's medians gathered to every rank (through the reducer's gather of bit patterns).
std::vector<double> all_ranks(seedrl::distributed::mpi_reducer& r, double mine) {
  std::uint64_t bits = 0;
  std::memcpy(&bits, &mine, sizeof bits);
  std::vector<double> out;
  for (const std::uint64_t b : r.gather(bits)) {
    double v = 0.0;
    std::memcpy(&v, &b, sizeof v);
    out.push_back(v);
  }
  return out;
}

template <class Net>
void measure(const char* name, const Net& net0, const seedrl_bench::batch_shape& shape, int steps,
             const std::shared_ptr<seedrl::distributed::mpi_reducer>& reducer) {
  const seedrl_bench::random_training_batch data(shape,
                                                 100 + static_cast<std::uint64_t>(reducer->rank()));
  Net alone_net = net0, parallel_net = net0;
  seedrl::adam<float> alone_opt, parallel_opt;
  seedrl::host_trainer alone(1, 1), parallel(1, 1);
  parallel.set_gradient_reducer(reducer);
  const seedrl::impala_loss<float> loss;
  const std::size_t P = alone_net.parameters().size();
  std::vector<float> gradient(P, 1.0f);
  std::vector<double> compute, reduce, step;
  // Warm-up: network copies, buffers, MPI's connections.
  (void)alone.train_step(data.view(), alone_net, alone_opt, loss, 40.0);
  (void)parallel.train_step(data.view(), parallel_net, parallel_opt, loss, 40.0);
  for (int i = 0; i < steps; ++i) {
    compute.push_back(
        time_ms([&] { (void)alone.train_step(data.view(), alone_net, alone_opt, loss, 40.0); }));
    (void)reducer->gather(0);  // the ranks meet first: the time is the collective's, not a wait
    reduce.push_back(time_ms([&] { reducer->mean(std::span<float>(gradient)); }));
    step.push_back(time_ms(
        [&] { (void)parallel.train_step(data.view(), parallel_net, parallel_opt, loss, 40.0); }));
  }
  const auto c = all_ranks(*reducer, median(compute));
  const auto a = all_ranks(*reducer, median(reduce));
  const auto s = all_ranks(*reducer, median(step));
  if (reducer->rank() != 0)
    return;
  const double c_med = median(c), a_med = median(a), s_max = *std::max_element(s.begin(), s.end());
  std::printf("| %s | %zu | %.3f | %.3f | %.3f | %.3f | %.3f |\n", name, P, c_med, a_med,
              a_med / c_med, s_max, s_max / c_med);
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 20;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--steps") == 0)
      steps = std::max(1, std::atoi(argv[i + 1]));
  }
  auto reducer = std::make_shared<seedrl::distributed::mpi_reducer>();
  if (reducer->rank() == 0) {
    std::printf("%s, %d steps per network, wall clock, medians\n\n", reducer->describe().c_str(),
                steps);
    std::printf(
        "| network | parameters | step compute ms | all-reduce ms | all-reduce / compute "
        "| data-parallel step ms (slowest rank) | data-parallel / compute |\n");
    std::printf("| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  }
  {
    const seedrl::mlp_lstm_agent<float> net;
    seedrl_bench::batch_shape s;
    s.state_width = static_cast<std::size_t>(net.state_size());
    measure("CartPole MLP 64-64 + LSTM 64", net, s, steps, reducer);
  }
  {
    const auto net = seedrl_bench::make_atari_network();
    measure("Atari Nature CNN + LSTM 256, 4-frame stacks", net,
            seedrl_bench::atari_batch_shape(net), std::max(1, steps / 5), reducer);
  }
  return 0;
}
