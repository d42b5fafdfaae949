// The pieces of a data-parallel run that need no MPI: where a rank stands (from each launcher's
// variables, checked), which learner an actor talks to and where it goes when that one is
// lost, and the check that the ranks' training state is identical.
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "seedrl/distributed/actor_placement.hpp"
#include "seedrl/distributed/gradient_reducer.hpp"
#include "seedrl/distributed/learner_failover.hpp"
#include "seedrl/distributed/rendezvous.hpp"
#include "seedrl/distributed/state_check.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/transport/transport_error.hpp"

namespace {

/// The environment a test sets: rendezvous reads it through a plain function pointer.
std::map<std::string, std::string>& fake_env() {
  static std::map<std::string, std::string> env;
  return env;
}
const char* lookup(const char* name) {
  const auto it = fake_env().find(name);
  return it == fake_env().end() ? nullptr : it->second.c_str();
}
seedrl::distributed::world_place place_with(std::map<std::string, std::string> env) {
  fake_env() = std::move(env);
  return seedrl::distributed::world_place_from_environment(&lookup);
}

}  // namespace

TEST_CASE("rendezvous: each launcher's variables give the rank's place", "[distributed]") {
  SECTION("nothing set: one rank") {
    const auto p = place_with({});
    CHECK(p.rank == 0);
    CHECK(p.size == 1);
    CHECK(p.local_rank == 0);
    CHECK(p.master_addr.empty());
  }
  SECTION("mpirun") {
    const auto p = place_with({{"OMPI_COMM_WORLD_RANK", "3"},
                               {"OMPI_COMM_WORLD_SIZE", "4"},
                               {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}});
    CHECK(p.rank == 3);
    CHECK(p.size == 4);
    CHECK(p.local_rank == 1);
    CHECK(p.source.find("mpirun") != std::string::npos);
  }
  SECTION("PMI") {
    const auto p = place_with({{"PMI_RANK", "1"}, {"PMI_SIZE", "2"}});
    CHECK(p.rank == 1);
    CHECK(p.size == 2);
  }
  SECTION("srun: the step's task count, not the allocation's") {
    const auto p = place_with({{"SLURM_PROCID", "2"},
                               {"SLURM_NTASKS", "8"},
                               {"SLURM_STEP_NUM_TASKS", "3"},
                               {"SLURM_LOCALID", "0"}});
    CHECK(p.rank == 2);
    CHECK(p.size == 3);
  }
  SECTION("an sbatch script outside srun is one rank") {
    const auto p = place_with({{"SLURM_NTASKS", "8"}, {"SLURM_JOB_ID", "17"}});
    CHECK(p.rank == 0);
    CHECK(p.size == 1);
  }
  SECTION("RANK / WORLD_SIZE with the bootstrap address") {
    const auto p = place_with({{"RANK", "1"},
                               {"WORLD_SIZE", "2"},
                               {"LOCAL_RANK", "1"},
                               {"MASTER_ADDR", "learner-0.learners"},
                               {"MASTER_PORT", "29500"}});
    CHECK(p.rank == 1);
    CHECK(p.size == 2);
    CHECK(p.local_rank == 1);
    CHECK(p.master_addr == "learner-0.learners");
    CHECK(p.master_port == 29500);
  }
  SECTION("two launchers that agree") {
    const auto p = place_with({{"OMPI_COMM_WORLD_RANK", "1"},
                               {"OMPI_COMM_WORLD_SIZE", "2"},
                               {"PMI_RANK", "1"},
                               {"PMI_SIZE", "2"}});
    CHECK(p.rank == 1);
  }
}

TEST_CASE("rendezvous: bad or contradictory variables are refused by name", "[distributed]") {
  using Catch::Contains;
  const auto refused = [](std::map<std::string, std::string> env, const std::string& words) {
    INFO(words);
    CHECK_THROWS_WITH(place_with(std::move(env)), Contains(words));
  };
  refused({{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "a"}, {"MASTER_PORT", "1"}},
          "RANK=2 is not below WORLD_SIZE=2");
  refused({{"RANK", "x"}, {"WORLD_SIZE", "2"}}, "RANK='x' is not an integer");
  refused({{"RANK", "1 "}, {"WORLD_SIZE", "2"}}, "RANK='1 ' is not an integer");
  refused({{"RANK", "-1"}, {"WORLD_SIZE", "2"}}, "RANK='-1'");
  refused({{"WORLD_SIZE", "0"}, {"RANK", "0"}}, "WORLD_SIZE='0'");
  refused({{"WORLD_SIZE", "2"}}, "RANK is not set, but WORLD_SIZE is");
  refused({{"OMPI_COMM_WORLD_RANK", "0"}}, "OMPI_COMM_WORLD_SIZE is not set");
  refused({{"RANK", "0"}, {"WORLD_SIZE", "2"}}, "MASTER_ADDR and MASTER_PORT");
  refused({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "70000"}},
          "MASTER_PORT='70000'");
  refused({{"OMPI_COMM_WORLD_RANK", "0"},
           {"OMPI_COMM_WORLD_SIZE", "2"},
           {"RANK", "1"},
           {"WORLD_SIZE", "2"}},
          "says rank 0 of 2, but RANK / WORLD_SIZE says rank 1 of 2");
}

TEST_CASE("actor placement: home rank by index, equal shares, failover in turn", "[distributed]") {
  using namespace seedrl::distributed;
  CHECK(home_learner(0, 3) == 0);
  CHECK(home_learner(4, 3) == 1);
  CHECK(learner_order(5, 3) == std::vector<std::size_t>{2, 0, 1});
  CHECK(learner_order(7, 1) == std::vector<std::size_t>{0});
  CHECK_THROWS_AS(home_learner(0, 0), std::invalid_argument);
  // Every actor has one home; the shares differ by at most one and add up.
  const std::size_t actors = 11, learners = 4;
  std::vector<std::size_t> count(learners, 0);
  for (std::size_t a = 0; a < actors; ++a)
    ++count[home_learner(a, learners)];
  std::size_t total = 0;
  for (std::size_t r = 0; r < learners; ++r) {
    CHECK(count[r] == actors_of_learner(r, learners, actors));
    total += count[r];
  }
  CHECK(total == actors);
  CHECK_THROWS_AS(actors_of_learner(4, 4, 11), std::invalid_argument);
}

TEST_CASE("actor placement: the --learner list", "[distributed]") {
  using seedrl::distributed::split_learner_list;
  CHECK(split_learner_list("a:1") == std::vector<std::string>{"a:1"});
  CHECK(split_learner_list("a:1,b:2,[::1]:3") == std::vector<std::string>{"a:1", "b:2", "[::1]:3"});
  CHECK_THROWS_WITH(split_learner_list("a:1,,b:2"), Catch::Contains("empty address"));
  CHECK_THROWS_WITH(split_learner_list("a:1,"), Catch::Contains("empty address"));
  CHECK_THROWS_WITH(split_learner_list("a:1,a:1"), Catch::Contains("names a:1 twice"));
}

namespace {

/// A reducer whose other ranks hold given hashes (this process is rank 0).
struct fixed_ranks final : seedrl::distributed::gradient_reducer {
  std::vector<std::uint64_t> others;
  explicit fixed_ranks(std::vector<std::uint64_t> o) : others(std::move(o)) {}
  int rank() const override { return 0; }
  int ranks() const override { return static_cast<int>(others.size()) + 1; }
  void mean(std::span<float>) override {}
  void mean(std::span<double>) override {}
  std::vector<std::uint64_t> gather(std::uint64_t mine) override {
    std::vector<std::uint64_t> all{mine};
    all.insert(all.end(), others.begin(), others.end());
    return all;
  }
  std::vector<double> gather(std::span<const double>) override {
    throw std::logic_error("fixed_ranks: no array gather");
  }
  [[noreturn]] void abort_all(int code) noexcept override { std::_Exit(code); }
  std::string describe() const override { return "fixed ranks"; }
};

}  // namespace

TEST_CASE("state check: the hash follows parameters and optimizer state, mismatches name ranks",
          "[distributed]") {
  using namespace seedrl::distributed;
  std::vector<float> params{0.5f, -1.0f, 2.0f}, grads{0.1f, 0.2f, -0.3f};
  seedrl::adam<float> opt;
  const auto h0 = training_state_hash<float>(params, opt);
  CHECK(training_state_hash<float>(params, seedrl::adam<float>()) == h0);
  auto other = params;
  other[1] = std::nextafter(other[1], 0.0f);  // one ulp
  CHECK(training_state_hash<float>(other, opt) != h0);
  auto stepped = params;
  seedrl::adam<float> opt2;
  opt2.step(stepped, grads);
  const auto h1 = training_state_hash<float>(stepped, opt2);
  CHECK(h1 != h0);
  CHECK(training_state_hash<float>(stepped, opt) != h1);  // same parameters, another state

  fixed_ranks same({h0, h0});
  CHECK_NOTHROW(require_identical_ranks(same, h0, "after training step 10"));
  fixed_ranks two_differ({h1, h0, h1});
  const std::string t0 = hash_text(h0), t1 = hash_text(h1);
  CHECK(t0.size() == 16);
  CHECK(t0 != t1);
  // Both hashes printed, so that a user sees which rank holds what.
  CHECK_THROWS_WITH(
      require_identical_ranks(two_differ, h0, "after training step 10"),
      Catch::Contains("parameters and optimizer state differ after training step "
                      "10: ranks 1 (" +
                      t1 + "), 3 (" + t1 + ") differ from rank 0 (" + t0 + "; fixed ranks)"));
  fixed_ranks one_differs({h1});
  CHECK_THROWS_WITH(require_same_on_all_ranks(one_differs, 5, "configuration", "at rendezvous"),
                    Catch::Contains("configuration differ at rendezvous: rank 1 (" + t1 +
                                    ") differs from rank 0 (" + hash_text(5)));
}

namespace {

/// A transport whose endpoints are numbers; connecting to one in `down` fails.
struct numbered_transport {
  using endpoint_type = int;
  using connection_type = int;
  std::set<int> down;
  std::vector<int> attempts;
  int connect(const int& endpoint) {
    attempts.push_back(endpoint);
    if (down.contains(endpoint))
      throw seedrl::transport_error("endpoint " + std::to_string(endpoint) + " is down");
    return endpoint;
  }
};

}  // namespace

TEST_CASE("learner failover: an actor connects to its home rank, and moves on when it is gone",
          "[distributed]") {
  using seedrl::distributed::learner_failover;
  numbered_transport t;
  std::vector<std::string> log;
  const auto name = [](const int& e) { return "learner-" + std::to_string(e); };
  // Actor 4 of 3 ranks: home rank 1, then 2, then 0.
  learner_failover<numbered_transport> connect(
      t, {100, 101, 102}, 4, [&](const std::string& s) { log.push_back(s); }, name, 2);
  // Before its first connection it waits for its home rank (actors often start first).
  t.down = {101};
  for (int i = 0; i < 5; ++i)
    CHECK_THROWS_AS(connect(), seedrl::transport_error);
  CHECK(connect.current_rank() == 1);
  t.down.clear();
  CHECK(connect.current_rank() == 1);
  CHECK(connect() == 101);
  CHECK(connect() == 101);  // a working rank is kept
  t.down = {101};
  CHECK_THROWS_AS(connect(), seedrl::transport_error);
  CHECK(connect.current_rank() == 1);  // one failure: still trying its home
  CHECK_THROWS_AS(connect(), seedrl::transport_error);
  CHECK(connect.current_rank() == 2);  // two in a row: the next rank
  REQUIRE(log.size() == 1);
  CHECK(log[0] ==
        "seedrl actor: learner rank 1 at learner-101 is unreachable; moving to rank 2 at "
        "learner-102");
  CHECK(connect() == 102);
  // Every rank down: it goes round the list, and comes back to the first that answers.
  t.down = {100, 101, 102};
  for (int i = 0; i < 6; ++i)
    CHECK_THROWS_AS(connect(), seedrl::transport_error);
  CHECK(connect.current_rank() == 2);  // 2 -> 0 -> 1 -> 2
  t.down = {100, 101};
  CHECK(connect() == 102);
  // One learner: nowhere to move to, it keeps trying.
  numbered_transport lone;
  lone.down = {7};
  learner_failover<numbered_transport> only(lone, {7}, 3, {}, name, 1);
  // A home rank that never answers: after first_contact_wait, the next one.
  numbered_transport late;
  late.down = {0};
  learner_failover<numbered_transport> impatient(late, {0, 1}, 0, {}, name, 3,
                                                 std::chrono::milliseconds(0));
  CHECK_THROWS_AS(impatient(), seedrl::transport_error);
  CHECK(impatient.current_rank() == 1);
  CHECK(impatient() == 1);
  for (int i = 0; i < 3; ++i)
    CHECK_THROWS_AS(only(), seedrl::transport_error);
  CHECK(lone.attempts == std::vector<int>{7, 7, 7});
  CHECK_THROWS_AS(learner_failover<numbered_transport>(lone, {}, 0, {}, name),
                  std::invalid_argument);
  CHECK_THROWS_AS(learner_failover<numbered_transport>(lone, {7}, 0, {}, name, 0),
                  std::invalid_argument);
}
