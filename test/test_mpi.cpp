// Data-parallel learners over MPI, run by ctest as `mpirun -np 2 seedrl_mpi_tests`: the
// reducer against a serial sum, and a host_trainer with the reducer (each rank training on
// its half of a batch) against one trainer on the whole batch, with the ranks' parameters
// bit-identical afterwards (and a drift on one rank reported by every rank); the backend trainer
// (what a GPU rank runs) likewise on host_backend. Every rank runs every test case in the same
// order (their collectives pair up); a check that fails on one rank fails the run.
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "backend_trainer_support.hpp"
#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/algo/ppo_loss.hpp"
#include "seedrl/backend/host_backend.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/distributed/mpi_reducer.hpp"
#include "seedrl/distributed/state_check.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/runtime/minibatch_schedule.hpp"
#include "seedrl/runtime/trainer.hpp"
#include "seedrl/train/mlp_lstm_trainer.hpp"

namespace {

using seedrl::distributed::mpi_reducer;

std::shared_ptr<mpi_reducer> world() {
  static const auto reducer = std::make_shared<mpi_reducer>();
  return reducer;
}

/// Rank r's values: draws from a generator seeded by (seed, r).
template <class T>
std::vector<T> values_of_rank(int r, std::size_t n, std::uint64_t seed) {
  seedrl::random_generator g(seed * 1000 + static_cast<std::uint64_t>(r));
  std::vector<T> v(n);
  for (T& x : v)
    x = static_cast<T>(g.uniform(-1e3, 1e3));
  return v;
}

template <class T>
void check_mean_against_serial_sum(std::size_t n) {
  auto& reducer = *world();
  const int K = reducer.ranks();
  std::vector<T> mine = values_of_rank<T>(reducer.rank(), n, 7);
  reducer.mean(std::span<T>(mine));
  std::vector<double> want(n, 0.0);
  for (int r = 0; r < K; ++r) {
    const auto v = values_of_rank<T>(r, n, 7);
    for (std::size_t i = 0; i < n; ++i)
      want[i] += static_cast<double>(v[i]);
  }
  const double eps = std::is_same_v<T, float> ? 1e-6 : 1e-14;
  for (std::size_t i = 0; i < n; ++i) {
    want[i] /= K;
    INFO("element " << i);
    REQUIRE(std::abs(static_cast<double>(mine[i]) - want[i]) <= eps * 1e3 * K);
  }
}

seedrl::mlp_lstm_agent<double> small_agent() {
  seedrl::mlp_lstm_agent_config c;
  c.observation_size = 4;
  c.num_actions = 3;
  c.hidden_sizes = {16};
  c.lstm_size = 8;
  c.seed = 11;
  return seedrl::mlp_lstm_agent<double>(c);
}

/// The same random batch of B unrolls on every rank.
seedrl_test::random_batch<double> whole_batch(std::size_t T, std::size_t B, std::size_t state) {
  seedrl::random_generator rng(5);
  seedrl_test::random_batch<double> d;
  d.T = T;
  d.B = B;
  d.A = 3;
  seedrl_test::append_uniform(d.obs, (T + 1) * B * 4, -1.0, 1.0, rng);
  seedrl_test::append_uniform(d.rewards, (T + 1) * B, -1.0, 1.0, rng);
  seedrl_test::append_uniform(d.start, B * state, -0.5, 0.5, rng);
  seedrl_test::draw_steps(d, rng);
  return d;
}

/// The same batch of per_rank * K unrolls on every rank, and this rank's share of it (columns
/// rank * per_rank onwards) as a batch of its own.
struct split_batch {
  seedrl_test::random_batch<double> whole;
  seedrl::minibatch_scratch<double> scratch;
  seedrl::training_batch<double> mine;

  split_batch(std::size_t T, std::size_t per_rank, const mpi_reducer& reducer,
              std::size_t state_size)
      : whole(whole_batch(T, per_rank * static_cast<std::size_t>(reducer.ranks()), state_size)) {
    std::vector<std::size_t> columns(per_rank);
    for (std::size_t j = 0; j < per_rank; ++j)
      columns[j] = static_cast<std::size_t>(reducer.rank()) * per_rank + j;
    mine = seedrl::gather_unrolls(whole.view(), std::span<const std::size_t>(columns), scratch);
  }
};

}  // namespace

TEST_CASE("mpi_reducer: the mean over ranks equals a serial sum, gather orders by rank", "[mpi]") {
  auto& reducer = *world();
  REQUIRE(reducer.ranks() >= 2);  // ctest starts this under mpirun -np 2
  check_mean_against_serial_sum<float>(1000);
  check_mean_against_serial_sum<double>(1000);
  check_mean_against_serial_sum<float>(0);
  const auto all = reducer.gather(static_cast<std::uint64_t>(100 + reducer.rank()));
  REQUIRE(all.size() == static_cast<std::size_t>(reducer.ranks()));
  for (int r = 0; r < reducer.ranks(); ++r)
    CHECK(all[static_cast<std::size_t>(r)] == static_cast<std::uint64_t>(100 + r));
  CHECK(seedrl::distributed::ranks_differing_from_rank0(reducer, 42).empty());
  const auto differ =
      seedrl::distributed::ranks_differing_from_rank0(reducer, reducer.rank() == 1 ? 1 : 0);
  CHECK(differ == std::vector<int>{1});
}

TEST_CASE("data-parallel host_trainer: K ranks at B/K make the update of one trainer at B",
          "[mpi]") {
  auto reducer = world();
  auto reference = small_agent();
  const split_batch split(5, 2, *reducer, static_cast<std::size_t>(reference.state_size()));
  const auto& mine = split.mine;
  const auto batch = split.whole.view();

  auto net = small_agent();
  seedrl::adam<double> opt, ref_opt;
  seedrl::host_trainer parallel(1, 1), alone(1, 1);
  parallel.set_gradient_reducer(reducer);
  const seedrl::impala_loss<double> loss;
  for (int step = 0; step < 3; ++step) {
    const auto r = parallel.train_step(mine, net, opt, loss, 1e9);
    const auto want = alone.train_step(batch, reference, ref_opt, loss, 1e9);
    INFO("step " << step);
    REQUIRE(r.applied);
    CHECK(r.grad_norm == Approx(want.grad_norm).epsilon(1e-10));
    CHECK(r.terms.total == Approx(want.terms.total).epsilon(1e-10));
    CHECK(seedrl_test::max_difference<double>(net.parameters(), reference.parameters()) < 1e-10);
  }
  // Not vacuous: a rank's half alone moves the parameters elsewhere.
  auto lone = small_agent();
  seedrl::adam<double> lone_opt;
  seedrl::host_trainer(1, 1).train_step(mine, lone, lone_opt, loss, 1e9);
  auto once = small_agent();
  seedrl::adam<double> once_opt;
  seedrl::host_trainer(1, 1).train_step(batch, once, once_opt, loss, 1e9);
  CHECK(seedrl_test::max_difference<double>(lone.parameters(), once.parameters()) > 1e-6);
}

TEST_CASE("data-parallel host_trainer: PPO with threads keeps the ranks' parameters identical",
          "[mpi]") {
  auto reducer = world();
  const int rank = reducer->rank();
  auto net = small_agent();
  // Each rank its own batch (as from its own actors).
  seedrl::random_generator rng(static_cast<std::uint64_t>(20 + rank));
  seedrl_test::random_batch<double> d;
  d.T = 6;
  d.B = 4;
  d.A = 3;
  seedrl_test::append_uniform(d.obs, 7 * 4 * 4, -1.0, 1.0, rng);
  seedrl_test::append_uniform(d.rewards, 7 * 4, -1.0, 1.0, rng);
  seedrl_test::append_uniform(d.start, 4 * static_cast<std::size_t>(net.state_size()), -0.5, 0.5,
                              rng);
  seedrl_test::draw_steps(d, rng);
  seedrl::ppo_loss_config<double> c;
  c.epochs = 2;
  c.minibatches = 2;
  const seedrl::ppo_loss<double> ppo(c);
  seedrl::adam<double> opt;
  seedrl::host_trainer trainer(3, 2);  // the same schedule seed on every rank, two lanes
  trainer.set_gradient_reducer(reducer);
  const auto before = std::vector<double>(net.parameters().begin(), net.parameters().end());
  for (int step = 0; step < 3; ++step)
    REQUIRE(trainer.train_step(d.view(), net, opt, ppo, 0.5).applied);
  const auto params = net.parameters();
  CHECK(seedrl_test::max_difference<double>(params, before) > 1e-6);
  using seedrl::distributed::training_state_hash;
  const auto hash = training_state_hash<double>(params, opt);
  CHECK_NOTHROW(seedrl::distributed::require_identical_ranks(*reducer, hash, "after 3 steps"));
  // One ulp on rank 1 is a mismatch every rank reports, naming rank 1.
  auto drifted = std::vector<double>(params.begin(), params.end());
  drifted[7] = std::nextafter(drifted[7], 1e9);
  const auto rank1_hash = training_state_hash<double>(drifted, opt);  // what rank 1 holds
  CHECK_THROWS_WITH(
      seedrl::distributed::require_identical_ranks(
          *reducer, reducer->rank() == 1 ? rank1_hash : hash, "after 3 steps"),
      Catch::Contains("rank 1 (" + seedrl::distributed::hash_text(rank1_hash) +
                      ") differs from rank 0 (" + seedrl::distributed::hash_text(hash)));
}

TEST_CASE("data-parallel backend trainer (the GPU trainer's code) on host_backend", "[mpi]") {
  auto reducer = world();
  auto reference = small_agent();
  const split_batch split(4, 2, *reducer, static_cast<std::size_t>(reference.state_size()));
  const auto& mine = split.mine;
  const auto batch = split.whole.view();
  seedrl::host_backend backend;
  seedrl::backend_mlp_lstm_trainer<seedrl::host_backend, double> trainer(backend,
                                                                         reference.config());
  trainer.set_parameters(reference.parameters());
  trainer.set_optimizer(seedrl::adam_config{}, 0);
  trainer.set_gradient_reducer(reducer);
  seedrl::adam<double> ref_opt;
  seedrl::host_trainer alone(1, 1);
  const seedrl::impala_loss<double> loss;
  for (int step = 0; step < 2; ++step) {
    const auto r = trainer.train_step(mine, loss, 1e9);
    const auto want = alone.train_step(batch, reference, ref_opt, loss, 1e9);
    INFO("step " << step);
    REQUIRE(r.applied);
    CHECK(r.grad_norm == Approx(want.grad_norm).epsilon(1e-9));
    CHECK(r.terms.total == Approx(want.terms.total).epsilon(1e-9));
    std::vector<double> p(trainer.num_parameters());
    trainer.get_parameters(p);
    CHECK(seedrl_test::max_difference<double>(p, reference.parameters()) < 1e-9);
  }
}

TEST_CASE("ranks meet with a deadline: one that comes late is named, and a later meeting works",
          "[mpi]") {
  using namespace std::chrono_literals;
  using seedrl::distributed::detail::meet_ranks;
  const auto reducer = world();  // MPI is up
  CHECK(meet_ranks(MPI_COMM_WORLD, 10s).empty());
  // Rank 1 comes 1.5 s late to a meeting that waits 0.5 s.
  if (reducer->rank() == 1)
    std::this_thread::sleep_for(1500ms);
  const std::string failed = meet_ranks(MPI_COMM_WORLD, 500ms);
  if (reducer->rank() == 0)
    CHECK_THAT(failed, Catch::Contains("rank 0 of 2: rank 1 has not arrived within 0.500 s"));
  else
    CHECK_THAT(failed, Catch::Contains("learner rank 1 of 2: rank 0 did not confirm"));
  MPI_Barrier(MPI_COMM_WORLD);
  // The late hello of the failed meeting does not answer this one.
  CHECK(meet_ranks(MPI_COMM_WORLD, 10s).empty());
}
