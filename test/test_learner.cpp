// The learner on the in-process transport: every kind of malformed input gets a clear error
// frame and closes only that connection, while a well-behaved actor keeps being served; and,
// end to end, every field of every training batch lines up with what the environments did.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "learner_bad_input.hpp"
#include "recording_trainer.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/distributed/state_check.hpp"
#include "seedrl/env/cartpole.hpp"
#include "seedrl/env/environment.hpp"
#include "seedrl/io/checkpoint.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/protocol/frame.hpp"
#include "seedrl/runtime/actor.hpp"
#include "seedrl/runtime/learner.hpp"
#include "seedrl/runtime/progress.hpp"
#include "seedrl/runtime/trainer.hpp"
#include "seedrl/runtime/training_batch.hpp"
#include "seedrl/train/backend_trainer.hpp"
#include "seedrl/train/mlp_lstm_recipe.hpp"
#include "seedrl/transport/in_process.hpp"
#include "thread_ranks.hpp"
#include "wait_for.hpp"

namespace {

using namespace std::chrono_literals;
namespace proto = seedrl::protocol;
using net_t = seedrl::mlp_lstm_agent<float>;
using learner_t = seedrl::learner<net_t, seedrl::adam<float>, seedrl::in_process_transport>;

/// The bad-input checks every transport runs (learner_bad_input.hpp), on the in-process one.
using served_learner = seedrl_test::served_learner<seedrl::in_process_transport>;
using seedrl_test::cartpole_hello;
using seedrl_test::header;
using seedrl_test::small_learner_config;

}  // namespace

TEST_CASE("learner refuses malformed frames and keeps serving other actors",
          "[learner][bad_input]") {
  served_learner s(seedrl::in_process_endpoint{"learner-bad-input"});
  seedrl_test::check_malformed_frames_are_refused(s);
}

namespace {

std::unique_ptr<learner_t> small_learner() {
  seedrl::mlp_lstm_agent_config nc;
  nc.hidden_sizes = {8};
  nc.lstm_size = 8;
  seedrl::learner_config lc = small_learner_config();
  return std::make_unique<learner_t>(
      lc, net_t(nc), seedrl::adam<float>(), seedrl::impala_loss<float>(),
      seedrl::cartpole::observation_spec(), seedrl::cartpole::action_spec());
}

/// An in-process link the test can break from outside while the actor uses it (close() is
/// safe from another thread).
struct breakable_connection {
  std::shared_ptr<seedrl::in_process_connection> c;
  void write(std::span<const std::span<const std::byte>> b) { c->write(b); }
  void read(std::span<std::byte> b) { c->read(b); }
  void close() noexcept { c->close(); }
  bool is_open() const noexcept { return c->is_open(); }
};

}  // namespace

TEST_CASE("actor reconnects after broken links and the learner frees the old connections",
          "[learner][reconnect]") {
  seedrl::in_process_transport transport;
  const seedrl::in_process_endpoint endpoint{"learner-reconnect"};
  auto learner = small_learner();
  learner->start();
  learner->serve(transport.listen(endpoint));

  std::mutex m;
  std::shared_ptr<seedrl::in_process_connection> current;
  std::vector<std::chrono::steady_clock::time_point> connects;
  seedrl::actor_config ac;
  ac.num_envs = 3;
  ac.initial_backoff = 20ms;
  ac.max_backoff = 40ms;
  std::atomic<bool> stop{false};
  std::thread actor_thread([&] {
    seedrl::actor<seedrl::cartpole, std::function<breakable_connection()>> a(
        ac, [](std::size_t) { return seedrl::cartpole{}; },
        [&] {
          auto c = std::make_shared<seedrl::in_process_connection>(transport.connect(endpoint));
          std::lock_guard lock(m);
          current = c;
          connects.push_back(std::chrono::steady_clock::now());
          return breakable_connection{c};
        });
    a.run(stop);
  });

  constexpr int breaks = 5;
  std::vector<std::chrono::steady_clock::time_point> broke_at;
  for (int i = 0; i < breaks; ++i) {
    const auto frames = learner->stats().frames;
    REQUIRE(seedrl_test::wait_for([&] { return learner->stats().frames >= frames + 30; }));
    std::lock_guard lock(m);
    broke_at.push_back(std::chrono::steady_clock::now());
    current->close();
  }
  const auto frames = learner->stats().frames;
  CHECK(seedrl_test::wait_for([&] { return learner->stats().frames >= frames + 30; }));
  stop = true;
  actor_thread.join();

  std::lock_guard lock(m);
  REQUIRE(connects.size() == breaks + 1);
  for (int i = 0; i < breaks; ++i) {
    // The actor waits out its backoff before each new connection.
    CHECK(connects[i + 1] - broke_at[i] >= ac.initial_backoff);
  }
  // Finished connections are joined and freed as new ones arrive: at most the live one and
  // the one it replaced are held, not one per reconnect.
  CHECK(learner->held_connections() <= 2);
  CHECK(learner->stats().connected_actors <= 1);
  // Each broken link threw away its envs' partial unrolls.
  CHECK(learner->stats().dropped_unroll_steps >= breaks);
  learner->stop();
}

TEST_CASE("actor backs off exponentially up to its cap while the learner is away",
          "[learner][reconnect]") {
  seedrl::in_process_transport transport;
  const seedrl::in_process_endpoint endpoint{"learner-backoff"};
  auto learner = small_learner();
  learner->start();
  learner->serve(transport.listen(endpoint));
  std::vector<std::chrono::steady_clock::time_point> attempts;
  seedrl::actor_config ac;
  ac.num_envs = 1;
  ac.initial_backoff = 20ms;
  ac.max_backoff = 60ms;
  ac.max_steps = 10;
  std::vector<std::string> log;
  ac.log = [&](const std::string& line) { log.push_back(line); };
  seedrl::actor<seedrl::cartpole, std::function<seedrl::in_process_connection()>> a(
      ac, [](std::size_t) { return seedrl::cartpole{}; },
      [&] {
        attempts.push_back(std::chrono::steady_clock::now());
        if (attempts.size() <= 5)
          throw seedrl::transport_error("refused for the test", seedrl::transport_failure::refused);
        return transport.connect(endpoint);
      });
  const std::atomic<bool> stop{false};
  CHECK(a.run(stop) == 10);
  REQUIRE(attempts.size() == 6);
  // Waits of 20, 40, 60 (capped), 60, 60 ms, each plus up to a quarter of jitter.
  const std::chrono::milliseconds expected[] = {20ms, 40ms, 60ms, 60ms, 60ms};
  for (std::size_t i = 0; i < 5; ++i) {
    INFO("wait " << i);
    CHECK(attempts[i + 1] - attempts[i] >= expected[i]);
  }
  REQUIRE(log.size() == 5);
  CHECK(log[0].find("retrying in 20 ms") != std::string::npos);
  CHECK(log[2].find("retrying in 60 ms") != std::string::npos);
  CHECK(log[4].find("retrying in 60 ms") != std::string::npos);
  learner->stop();
}

TEST_CASE("learner stop sends every actor a shutting_down close frame", "[learner]") {
  seedrl::in_process_transport transport;
  const seedrl::in_process_endpoint endpoint{"learner-stop"};
  auto learner = small_learner();
  learner->start();
  learner->serve(transport.listen(endpoint));
  auto c = transport.connect(endpoint);
  const auto hello = cartpole_hello();
  const std::span<const std::byte> bufs[] = {hello};
  c.write(bufs);
  auto read_frame = [&](proto::frame_header& h) {
    std::array<std::byte, proto::header_size> raw{};
    c.read(raw);
    REQUIRE(proto::decode_header(raw, proto::default_max_payload, h) == proto::error_code::none);
    std::vector<std::byte> payload(h.payload_length);
    if (!payload.empty())
      c.read(payload);
    return payload;
  };
  proto::frame_header h{};
  read_frame(h);
  REQUIRE(h.type == proto::message_type::welcome);
  learner->stop();
  const auto payload = read_frame(h);
  CHECK(h.type == proto::message_type::close);
  proto::status_message m;
  REQUIRE(proto::decode_status(payload, m) == proto::error_code::none);
  CHECK(m.code == proto::error_code::shutting_down);
}

TEST_CASE("actor time reports reach the learner stats and name the binding stage", "[learner]") {
  served_learner s(seedrl::in_process_endpoint{"learner-actor-stats"});
  // The good actor reports every second; wait for its first report.
  REQUIRE(seedrl_test::wait_for([&] { return s.learner->stats().actor_steps > 0; }, 5s));
  const auto st = s.learner->stats();
  CHECK(st.actor_seconds_env > 0.0);
  CHECK(st.actor_seconds_waiting > 0.0);
  CHECK(st.requests > 0);
  CHECK(st.request_seconds_inference > 0.0);
  const auto t = seedrl::stage_times_between(seedrl::learner_stats{}, st, 1.0);
  CHECK(t.env > 0.0);
  CHECK(t.inference > 0.0);
  CHECK(seedrl::binding_stage(t) != seedrl::run_bound::unknown);
}

TEST_CASE("binding stage picks a saturated thread first and else the largest stage", "[learner]") {
  seedrl::learner_stats a, b;
  b.actor_steps = 100;
  b.requests = 100;
  b.actor_seconds_env = 0.1;           // 1 ms per step on the envs
  b.actor_seconds_waiting = 0.05;      // 0.5 ms waiting per step
  b.request_seconds_batching = 0.01;   // 0.1 ms
  b.request_seconds_inference = 0.02;  // 0.2 ms, so the link took 0.2 ms
  auto t = seedrl::stage_times_between(a, b, 1.0);
  CHECK(t.env == Approx(1e-3));
  CHECK(t.link == Approx(2e-4));
  CHECK(t.batching == Approx(1e-4));
  CHECK(t.inference == Approx(2e-4));
  CHECK(seedrl::binding_stage(t) == seedrl::run_bound::env);
  b.actor_seconds_waiting = 0.5;  // 5 ms per step: now mostly on the link
  CHECK(seedrl::binding_stage(seedrl::stage_times_between(a, b, 1.0)) == seedrl::run_bound::link);
  b.seconds_training = 0.95;  // the trainer worked 95% of the second
  CHECK(seedrl::binding_stage(seedrl::stage_times_between(a, b, 1.0)) ==
        seedrl::run_bound::training);
  CHECK(seedrl::binding_stage(seedrl::stage_times_between(a, a, 1.0)) ==
        seedrl::run_bound::unknown);
  CHECK(std::string(seedrl::to_string(seedrl::run_bound::link)) == "link-bound");
}

TEST_CASE("progress reports rates between two snapshots and logs every figure", "[learner]") {
  seedrl::learner_stats a, b;
  a.frames = 1000;
  a.batches = 10;
  a.batch_rows = 80;
  b.frames = 5000;  // 4000 frames in 2 s
  b.batches = 30;   // 20 batches of 16 rows out of 32: half full
  b.batch_rows = 400;
  b.episodes = 7;
  b.mean_return = 12.5;
  b.last_loss.policy_entropy = 0.25;
  b.queue_depth = 3;
  b.seconds_training = 1.9;  // 95% of the window: training-bound
  const auto p = seedrl::progress_between(a, b, 2.0, 32);
  CHECK(p.frames_per_second == Approx(2000.0));
  CHECK(p.batch_fill == Approx(0.5));
  CHECK(p.bound == seedrl::run_bound::training);
  const std::string line = seedrl::progress_line(p);
  CHECK_THAT(line, Catch::Contains("frames      5000") && Catch::Contains("2000 f/s") &&
                       Catch::Contains("episodes      7") && Catch::Contains("return   12.5") &&
                       Catch::Contains("batch fill  50%") && Catch::Contains("queue 3") &&
                       Catch::Contains("training-bound"));
  // No batches in the window: fill 0, not a division by zero.
  CHECK(seedrl::progress_between(b, b, 1.0, 32).batch_fill == 0.0);

  const auto dir =
      std::filesystem::temp_directory_path() / ("seedrl_progress_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  {
    seedrl::metrics_log log(dir);
    seedrl::log_progress(log, p);
  }
  std::ifstream in(dir / "metrics.jsonl");
  std::string record;
  REQUIRE(std::getline(in, record));
  CHECK_THAT(record, Catch::Contains("\"frames_per_second\"") &&
                         Catch::Contains("\"learner/batch_fill\"") &&
                         Catch::Contains("\"busy/training\"") &&
                         Catch::Contains("\"policy/entropy\":0.25"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("a collapsed discrete policy is reported once, and a converged one is not",
          "[learner][progress]") {
  // The policy's own entropy is on the progress line, whatever the entropy cost.
  seedrl::learner_stats s;
  s.train_steps = 10;
  s.returns_counted = 100;
  s.last_loss.policy_entropy = 0.6931;
  CHECK_THAT(seedrl::progress_line(seedrl::progress_between(s, s, 1.0, 8)),
             Catch::Contains("entropy 0.693"));

  // Three actions: the maximum is log 3 = 1.0986, 1% of it 0.011.
  seedrl::entropy_collapse_watch with_target(3, -100.0);
  s.mean_return = -500.0;
  s.last_loss.policy_entropy = 0.02;  // low, not collapsed
  CHECK(with_target.check(s).empty());
  s.last_loss.policy_entropy = 0.005;
  s.frames = 300000;
  const std::string warning = with_target.check(s);
  CHECK_THAT(warning, Catch::Contains("entropy fell to 0.0050") &&
                          Catch::Contains("300000 frames") && Catch::Contains("-500.0") &&
                          Catch::Contains("the target -100.0"));
  CHECK(with_target.check(s).empty());  // once

  // At (or within 10% of) the target a near-deterministic policy is a solved task.
  seedrl::entropy_collapse_watch solved(2, 475.0);
  s.mean_return = 480.0;
  s.last_loss.policy_entropy = 0.001;
  CHECK(solved.check(s).empty());
  // Without a target, against the best mean return seen: collapsing after a fall is reported.
  seedrl::entropy_collapse_watch no_target(2, std::nullopt);
  s.mean_return = -112.0;
  s.last_loss.policy_entropy = 0.5;
  CHECK(no_target.check(s).empty());
  s.mean_return = -500.0;
  s.last_loss.policy_entropy = 0.001;
  CHECK_THAT(no_target.check(s), Catch::Contains("its best -112.0"));
  // Before any training step, or for a single action, nothing is said.
  seedrl::entropy_collapse_watch untrained(2, 475.0), single(1, 475.0);
  s.train_steps = 0;
  CHECK(untrained.check(s).empty());
  s.train_steps = 1;
  CHECK(single.check(s).empty());
}

namespace {

using seedrl_test::run_actor;
using seedrl_test::secret_of;

}  // namespace

TEST_CASE(
    "authenticated link: the right secret is served and a wrong one never reaches the batcher",
    "[learner][auth]") {
  seedrl_test::check_authentication<seedrl::in_process_transport>(
      seedrl::in_process_endpoint{"learner-auth"});
}

TEST_CASE("an actor with a secret refuses a learner without one", "[learner][auth]") {
  seedrl::in_process_transport transport;
  const seedrl::in_process_endpoint endpoint{"learner-no-auth"};
  auto learner = small_learner();
  learner->start();
  learner->serve(transport.listen(endpoint));
  try {
    run_actor(transport, endpoint, secret_of("0123456789abcdef"));
    FAIL("the actor talked to a learner that cannot prove the secret");
  } catch (const seedrl::actor_rejected& e) {
    CHECK(std::string(e.what()).find("without authentication") != std::string::npos);
  }
  CHECK(learner->stats().frames == 0);
  learner->stop();
}

TEST_CASE("a silent peer is refused after the handshake timeout", "[learner]") {
  seedrl_test::check_handshake_timeout_and_connection_limit<seedrl::in_process_transport>(
      seedrl::in_process_endpoint{"learner-silent"});
}

namespace {

/// One CartPole actor of `num_envs` environments on a thread of its own, connected to
/// `endpoint`, until stop() (or destruction) ends and joins it.
class cartpole_actor_thread {
 public:
  cartpole_actor_thread(seedrl::in_process_transport& transport,
                        const seedrl::in_process_endpoint& endpoint, std::size_t num_envs)
      : thread_([this, &transport, endpoint, num_envs] {
          seedrl::actor_config ac;
          ac.num_envs = num_envs;
          seedrl::actor<seedrl::cartpole, std::function<seedrl::in_process_connection()>> a(
              ac, [](std::size_t) { return seedrl::cartpole{}; },
              [&transport, endpoint] { return transport.connect(endpoint); });
          a.run(stop_);
        }) {}
  cartpole_actor_thread(const cartpole_actor_thread&) = delete;
  cartpole_actor_thread& operator=(const cartpole_actor_thread&) = delete;
  ~cartpole_actor_thread() { stop(); }

  void stop() {
    stop_ = true;
    if (thread_.joinable())
      thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

/// A small CartPole network (MLP 8 + LSTM 8) and a learner config that checkpoints every
/// `every` steps into a fresh directory of its own, removed at the end.
struct checkpointed_run {
  std::filesystem::path dir;
  seedrl::mlp_lstm_agent_config nc;
  seedrl::learner_config lc = small_learner_config();

  checkpointed_run(const std::string& name, std::int64_t every)
      : dir(std::filesystem::temp_directory_path() /
            ("seedrl-learner-" + name + "-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(dir);
    nc.hidden_sizes = {8};
    nc.lstm_size = 8;
    lc.checkpoint_dir = dir;
    lc.checkpointing = {every, std::nullopt, true};
  }
  checkpointed_run(const checkpointed_run&) = delete;
  checkpointed_run& operator=(const checkpointed_run&) = delete;
  ~checkpointed_run() { std::filesystem::remove_all(dir); }
};

/// Starts `learner` on `endpoint`, runs one CartPole actor of two environments on a thread
/// until the learner has saved `checkpoints` checkpoints, stops both (the learner saves once
/// more) and returns the learner's parameters (a network of config `nc`).
template <class Learner>
std::vector<float> train_until_checkpoints(Learner& learner,
                                           seedrl::in_process_transport& transport,
                                           const seedrl::in_process_endpoint& endpoint,
                                           std::int64_t checkpoints,
                                           const seedrl::mlp_lstm_agent_config& nc) {
  learner.start();
  learner.serve(transport.listen(endpoint));
  cartpole_actor_thread actor(transport, endpoint, 2);
  const bool saved =
      seedrl_test::wait_for([&] { return learner.stats().checkpoints_saved >= checkpoints; }, 20s);
  actor.stop();
  learner.stop();  // saves once more, at exit
  REQUIRE(saved);
  net_t copy(nc);
  learner.copy_parameters(copy);
  return {copy.parameters().begin(), copy.parameters().end()};
}

}  // namespace

TEST_CASE("learner checkpoints while training and a new learner resumes from them",
          "[learner][checkpoint]") {
  checkpointed_run run("ckpt", 3);
  const auto& dir = run.dir;
  const auto& nc = run.nc;
  auto& lc = run.lc;
  seedrl::in_process_transport transport;
  lc.keep_checkpoints = 2;
  lc.checkpoint_meta["network"] = "test net";
  const seedrl::in_process_endpoint endpoint{"learner-ckpt"};
  std::vector<float> final_params;
  seedrl::learner_stats saved{};
  {
    learner_t learner(lc, net_t(nc), seedrl::adam<float>(), seedrl::impala_loss<float>(),
                      seedrl::cartpole::observation_spec(), seedrl::cartpole::action_spec());
    final_params = train_until_checkpoints(learner, transport, endpoint, 3, nc);
    saved = learner.stats();
  }
  // keep_checkpoints = 2: only the two newest remain, the newest from stop().
  std::size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    files += e.path().extension() == ".seedrl" ? 1 : 0;
  CHECK(files == 2);
  const auto latest = seedrl::read_latest_checkpoint(dir);
  REQUIRE(latest);
  CHECK(latest->step == saved.train_steps);
  CHECK(latest->int_counter("frames") == saved.frames);
  CHECK(latest->meta_value("network") == std::optional<std::string>("test net"));

  SECTION("resume restores parameters and counters") {
    learner_t resumed(lc, net_t(nc), seedrl::adam<float>(), seedrl::impala_loss<float>(),
                      seedrl::cartpole::observation_spec(), seedrl::cartpole::action_spec());
    resumed.restore(*latest);
    CHECK(resumed.stats().frames == saved.frames);
    CHECK(resumed.stats().train_steps == saved.train_steps);
    net_t copy(nc);
    resumed.copy_parameters(copy);
    CHECK(std::equal(final_params.begin(), final_params.end(), copy.parameters().begin()));
  }
  SECTION("init from weights only leaves the counters at zero") {
    learner_t fresh(lc, net_t(nc), seedrl::adam<float>(), seedrl::impala_loss<float>(),
                    seedrl::cartpole::observation_spec(), seedrl::cartpole::action_spec());
    fresh.restore(*latest, true);
    CHECK(fresh.stats().frames == 0);
    net_t copy(nc);
    fresh.copy_parameters(copy);
    CHECK(std::equal(final_params.begin(), final_params.end(), copy.parameters().begin()));
  }
  SECTION("a checkpoint of another network is refused and changes nothing") {
    auto other_nc = nc;
    other_nc.hidden_sizes = {16};
    learner_t other(lc, net_t(other_nc), seedrl::adam<float>(), seedrl::impala_loss<float>(),
                    seedrl::cartpole::observation_spec(), seedrl::cartpole::action_spec());
    net_t before(other_nc), after(other_nc);
    other.copy_parameters(before);
    CHECK_THROWS_AS(other.restore(*latest), seedrl::checkpoint_error);
    other.copy_parameters(after);
    CHECK(std::equal(before.parameters().begin(), before.parameters().end(),
                     after.parameters().begin()));
    CHECK(other.stats().frames == 0);
  }
}

TEST_CASE("the learner trains with backend_trainer and checkpoints what the backend holds",
          "[learner][checkpoint]") {
  // The recipe trainer (what a GPU learner runs) as the learner's Trainer on the CPU: the
  // learner publishes the parameters each step writes back, and a checkpoint carries the
  // backend's optimizer state (sync_to_host), which a host_trainer learner resumes from.
  checkpointed_run run("backend", 2);
  const auto& dir = run.dir;
  const auto& nc = run.nc;
  const auto& lc = run.lc;
  seedrl::in_process_transport transport;
  using backend_learner = seedrl::learner<net_t, seedrl::adam<float>, seedrl::in_process_transport,
                                          seedrl::backend_trainer<float, seedrl::mlp_lstm_recipe>>;
  const seedrl::in_process_endpoint endpoint{"learner-backend-trainer"};
  const net_t initial(nc);
  std::vector<float> final_params;
  seedrl::learner_stats saved{};
  {
    backend_learner learner(lc, net_t(nc), seedrl::adam<float>(), seedrl::impala_loss<float>(),
                            seedrl::cartpole::observation_spec(), seedrl::cartpole::action_spec());
    final_params = train_until_checkpoints(learner, transport, endpoint, 2, nc);
    saved = learner.stats();
  }
  REQUIRE(saved.train_steps > 0);
  CHECK(saved.trainer_error.empty());
  CHECK(!std::equal(final_params.begin(), final_params.end(), initial.parameters().begin()));
  const auto latest = seedrl::read_latest_checkpoint(dir);
  REQUIRE(latest);
  CHECK(latest->step == saved.train_steps);
  seedrl::adam<float> opt;
  opt.load_state(latest->blob("optimizer"));
  CHECK(opt.step_count() == saved.train_steps);  // the backend's state, not the host's zeros
  learner_t resumed(lc, net_t(nc), seedrl::adam<float>(), seedrl::impala_loss<float>(),
                    seedrl::cartpole::observation_spec(), seedrl::cartpole::action_spec());
  resumed.restore(*latest);
  net_t copy(nc);
  resumed.copy_parameters(copy);
  CHECK(std::equal(final_params.begin(), final_params.end(), copy.parameters().begin()));
}

TEST_CASE("a new run refuses a checkpoint directory that holds another run's checkpoints",
          "[learner][checkpoint]") {
  // Checkpoints are ranked by step. A new run numbering its own from step 0 beside an older
  // run's would see keep-N retention delete each of its saves at the next one, and a later
  // --resume would continue the old run instead.
  const auto dir = std::filesystem::temp_directory_path() /
                   ("seedrl-learner-another-run-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  seedrl::mlp_lstm_agent_config nc;
  nc.hidden_sizes = {8};
  nc.lstm_size = 8;
  seedrl::learner_config lc = small_learner_config();
  lc.checkpoint_dir = dir;
  const auto make_learner = [&] {
    return std::make_unique<learner_t>(
        lc, net_t(nc), seedrl::adam<float>(), seedrl::impala_loss<float>(),
        seedrl::cartpole::observation_spec(), seedrl::cartpole::action_spec());
  };
  const auto save_run = [&](const std::filesystem::path& to, std::int64_t step) {
    net_t net(nc);
    seedrl::adam<float> opt;
    seedrl::checkpoint c;
    c.step = step;
    seedrl::store_parameters(c, net);
    seedrl::store_optimizer(c, opt);
    c.counters["frames"] = step * 10;
    c.counters["episodes"] = step / 10;
    c.counters["train_steps"] = step;
    seedrl::write_checkpoint(to, c);
  };
  const auto files = [&] {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir))
      names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  };
  // What start() threw, or "" when it started (the learner is then stopped again).
  const auto start_error = [](learner_t& l) {
    try {
      l.start();
    } catch (const seedrl::checkpoint_error& e) {
      return std::string(e.what());
    }
    l.stop();
    return std::string();
  };
  // The other run: steps 700 and 900.
  save_run(dir, 700);
  save_run(dir, 900);
  const std::vector<std::string> old_run{"ckpt-000000000700.seedrl", "ckpt-000000000900.seedrl"};
  REQUIRE(files() == old_run);

  SECTION("a fresh start is refused with a message that says why and what to do instead") {
    {
      auto l = make_learner();
      const std::string message = start_error(*l);
      INFO(message);
      CHECK_THAT(message, Catch::Contains("'" + dir.string() + "'"));
      CHECK_THAT(message, Catch::Contains("2 checkpoints of another run"));
      CHECK_THAT(message, Catch::Contains("step 900"));
      CHECK_THAT(message, Catch::Contains("--resume"));
      CHECK_THAT(message, Catch::Contains("empty or new checkpoint directory"));
    }
    CHECK(files() == old_run);  // nothing saved at exit, nothing deleted
  }
  SECTION("so is a start from a checkpoint's weights only (--init-checkpoint)") {
    {
      auto l = make_learner();
      const auto latest = seedrl::read_latest_checkpoint(dir);
      REQUIRE(latest);
      l->restore(*latest, true);
      CHECK_THAT(start_error(*l), Catch::Contains("2 checkpoints of another run"));
    }
    CHECK(files() == old_run);
  }
  SECTION("and a full restore from a checkpoint in another directory") {
    const auto elsewhere = dir.string() + "-elsewhere";
    save_run(elsewhere, 50);
    {
      auto l = make_learner();
      const auto c = seedrl::read_latest_checkpoint(elsewhere);
      REQUIRE(c);
      l->restore(*c);
      CHECK_THAT(start_error(*l), Catch::Contains("2 checkpoints of another run"));
    }
    CHECK(files() == old_run);
    std::filesystem::remove_all(elsewhere);
  }
  SECTION("resuming from the directory itself continues it") {
    auto l = make_learner();
    const auto latest = seedrl::read_latest_checkpoint(dir);
    REQUIRE(latest);
    l->restore(*latest);
    CHECK(start_error(*l).empty());
    CHECK(l->stats().train_steps == 900);
  }
  SECTION("an empty directory or a missing one takes a new run") {
    lc.checkpoint_dir = dir / "new";
    auto fresh = make_learner();
    CHECK(start_error(*fresh).empty());
    std::filesystem::create_directories(dir / "empty");
    lc.checkpoint_dir = dir / "empty";
    auto fresh_too = make_learner();
    CHECK(start_error(*fresh_too).empty());
  }
  std::filesystem::remove_all(dir);
}

namespace {

/// A Trainer that runs the CPU step and counts what the learner asks of it; after `fail_after`
/// steps it throws, as a GPU trainer does on a device error.
struct counting_trainer {
  struct counters {
    std::atomic<int> steps{0}, syncs{0}, loads{0};
    std::atomic<std::size_t> last_batch{0};
    int fail_after = 1 << 30;
  };
  std::shared_ptr<counters> n = std::make_shared<counters>();
  seedrl::host_trainer cpu;

  template <class Net, class Opt, class S>
  seedrl::train_step_result train_step(const seedrl::training_batch<S>& batch, Net& net, Opt& opt,
                                       const seedrl::impala_loss<S>& loss, double max_norm) {
    if (n->steps >= n->fail_after)
      throw std::runtime_error("simulated device failure");
    n->last_batch = batch.B;
    ++n->steps;
    return cpu.train_step(batch, net, opt, loss, max_norm);
  }
  template <class Net, class Opt>
  void sync_to_host(Net&, Opt&) {
    ++n->syncs;
  }
  template <class Net, class Opt>
  void load_from_host(Net&, Opt&) {
    ++n->loads;
  }
};

static_assert(seedrl::Trainer<counting_trainer, net_t, seedrl::adam<float>>);
static_assert(seedrl::Trainer<seedrl::host_trainer, net_t, seedrl::adam<float>>);

}  // namespace

TEST_CASE("the learner trains through its Trainer, and a failing trainer stops training only",
          "[learner][trainer]") {
  using counting_learner =
      seedrl::learner<net_t, seedrl::adam<float>, seedrl::in_process_transport, counting_trainer>;
  seedrl::in_process_transport transport;
  const seedrl::in_process_endpoint endpoint{"learner-trainer"};
  seedrl::mlp_lstm_agent_config nc;
  nc.hidden_sizes = {8};
  nc.lstm_size = 0;
  const auto dir = std::filesystem::temp_directory_path() /
                   ("seedrl-trainer-test-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  seedrl::learner_config lc = small_learner_config();
  lc.checkpoint_dir = dir.string();
  lc.checkpointing.every_steps = 3;
  counting_trainer trainer;
  auto counters = trainer.n;
  counters->fail_after = 6;
  counting_learner learner(lc, net_t(nc), seedrl::adam<float>(), seedrl::impala_loss<float>(),
                           seedrl::cartpole::observation_spec(), seedrl::cartpole::action_spec(),
                           trainer);
  learner.start();
  learner.serve(transport.listen(endpoint));
  cartpole_actor_thread actor(transport, endpoint, 2);
  const auto until = std::chrono::steady_clock::now() + 20s;
  while (learner.stats().trainer_error.empty() && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(1ms);
  const auto s = learner.stats();
  CHECK(s.trainer_error == "simulated device failure");
  CHECK(counters->steps == 6);
  CHECK(s.train_steps == 6);
  CHECK(counters->last_batch == lc.batch_size);
  CHECK(counters->syncs >= 2);  // a checkpoint every 3 steps asks for the trainer's state first
  // Inference goes on without training.
  const auto frames = learner.stats().frames;
  const auto served_until = std::chrono::steady_clock::now() + 5s;
  while (learner.stats().frames < frames + 20 && std::chrono::steady_clock::now() < served_until)
    std::this_thread::sleep_for(1ms);
  CHECK(learner.stats().frames >= frames + 20);
  CHECK(learner.stats().train_steps == 6);
  actor.stop();
  learner.stop();
  std::filesystem::remove_all(dir);
}

namespace {

/// A Trainer whose steps take a known, long time (it sleeps, then runs the CPU step), so that
/// single training steps outlast the reporting windows and the training queue fills up.
struct slow_trainer {
  std::chrono::milliseconds step_time{120};
  std::shared_ptr<std::atomic<int>> steps = std::make_shared<std::atomic<int>>(0);
  seedrl::host_trainer cpu;

  template <class Net, class Opt, class S>
  seedrl::train_step_result train_step(const seedrl::training_batch<S>& batch, Net& net, Opt& opt,
                                       const seedrl::impala_loss<S>& loss, double max_norm) {
    std::this_thread::sleep_for(step_time);
    ++*steps;
    return cpu.train_step(batch, net, opt, loss, max_norm);
  }
  template <class Net, class Opt>
  void sync_to_host(Net&, Opt&) {}
  template <class Net, class Opt>
  void load_from_host(Net&, Opt&) {}
};

}  // namespace

TEST_CASE("busy shares stay within each window, and a full training queue is the trainer's",
          "[learner][stages]") {
  using slow_learner =
      seedrl::learner<net_t, seedrl::adam<float>, seedrl::in_process_transport, slow_trainer>;
  seedrl::in_process_transport transport;
  const seedrl::in_process_endpoint endpoint{"learner-stages"};
  seedrl::mlp_lstm_agent_config nc;
  nc.hidden_sizes = {8};
  nc.lstm_size = 0;
  slow_trainer trainer;
  auto steps = trainer.steps;
  slow_learner learner(small_learner_config(), net_t(nc), seedrl::adam<float>(),
                       seedrl::impala_loss<float>(), seedrl::cartpole::observation_spec(),
                       seedrl::cartpole::action_spec(), trainer);
  learner.start();
  learner.serve(transport.listen(endpoint));
  cartpole_actor_thread actor(transport, endpoint, 4);
  // Windows of about 20 ms against 120 ms training steps: before, a step's whole time went to
  // the window it ended in (training 600%), and queue-blocked time counted as inference.
  std::vector<seedrl::learner_stats> snaps{learner.stats()};
  const auto until = std::chrono::steady_clock::now() + 20s;
  while ((*steps < 6 || snaps.size() < 30) && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(20ms);
    snaps.push_back(learner.stats());
  }
  actor.stop();
  learner.stop();
  REQUIRE(*steps >= 6);
  for (std::size_t i = 1; i < snaps.size(); ++i) {
    const auto& a = snaps[i - 1];
    const auto& b = snaps[i];
    INFO("window " << i);
    const double wall = b.seconds_since_start - a.seconds_since_start;
    REQUIRE(wall > 0.0);
    // Each thread's states cover the window exactly, so each share is in [0, 1].
    const double inference = (b.seconds_waiting_for_batch - a.seconds_waiting_for_batch) +
                             (b.seconds_inference - a.seconds_inference) +
                             (b.seconds_blocked_on_queue - a.seconds_blocked_on_queue);
    const double trainer_time = (b.seconds_waiting_for_data - a.seconds_waiting_for_data) +
                                (b.seconds_training - a.seconds_training);
    CHECK(inference == Approx(wall).epsilon(1e-6));
    CHECK(trainer_time == Approx(wall).epsilon(1e-6));
    const auto t = seedrl::stage_times_between(a, b, 1.0);  // `seconds` unused: both carry clocks
    for (const double share : {t.inference_busy, t.queue_blocked, t.training_busy}) {
      CHECK(share >= 0.0);
      CHECK(share <= 1.0 + 1e-9);
    }
  }
  // Over the whole run the trainer binds: inference spent time blocked on the full queue, and
  // that time is not counted as inference work.
  const auto whole = seedrl::stage_times_between(snaps.front(), snaps.back(), 1.0);
  CHECK(whole.queue_blocked > 0.1);
  CHECK(whole.inference_busy + whole.queue_blocked <= 1.0 + 1e-9);
  CHECK(seedrl::binding_stage(whole) == seedrl::run_bound::training);
  // Policy lag: the queue held unrolls acted by older parameters than the ones trained on; no
  // lag can exceed the number of versions published (one per training step).
  const auto& last = snaps.back();
  CHECK(last.policy_lag_max >= 1);
  CHECK(static_cast<double>(last.policy_lag_max) >= last.policy_lag_mean);
  CHECK(last.policy_lag_max <= static_cast<std::uint64_t>(last.train_steps));
}

TEST_CASE("queue-blocked inference makes the run training-bound", "[learner][stages]") {
  seedrl::learner_stats a, b;
  a.seconds_since_start = 10.0;
  b.seconds_since_start = 12.0;      // a 2 s window by the learner's clock
  b.seconds_inference = 0.6;         // 30% inference work
  b.seconds_blocked_on_queue = 0.8;  // 40% blocked on the full training queue
  b.seconds_training = 1.2;          // trainer 60% busy: under the 90% rule alone
  const auto t = seedrl::stage_times_between(a, b, 5.0);  // the program's 5 s is not used
  CHECK(t.inference_busy == Approx(0.3));
  CHECK(t.queue_blocked == Approx(0.4));
  CHECK(t.training_busy == Approx(0.6));
  CHECK(seedrl::binding_stage(t) == seedrl::run_bound::training);
  b.seconds_blocked_on_queue = 0.1;  // 5%: a transient, inference is not held back
  b.seconds_inference = 1.9;         // 95% inference work
  CHECK(seedrl::binding_stage(seedrl::stage_times_between(a, b, 5.0)) ==
        seedrl::run_bound::inference);
}

namespace {

// End-to-end alignment (issue 18, item 6c): a scripted environment that logs everything it did,
// the real actor and learner over the in-process transport, and a trainer that records every
// batch. Every field of every batch is checked against the environments' own logs, and the
// behaviour log-probs and start states against an independent replay of the network.

constexpr std::size_t scripted_obs_size = 4;
constexpr std::int32_t scripted_num_actions = 3;
using scripted_observation = std::array<float, scripted_obs_size>;

/// One call of a scripted environment's step(): the observation the agent chose from (the last
/// one the environment emitted), the action it received and what it returned.
struct env_step_record {
  scripted_observation observation{};
  std::int32_t action = 0;
  float reward = 0.0f;
  bool done = false;
  bool truncated = false;  // the episode ended by the scripted time limit (done is set too)
};

/// What every scripted environment did, by env id; shared by all of them.
struct env_logs {
  std::mutex mutex;
  std::map<int, std::vector<env_step_record>> steps;  // index j: the env's j-th step() call
  std::map<int, int> created;
};

/// Episode n of env e lasts this many steps: one-step episodes, and episodes shorter than,
/// as long as and longer than the unroll (T = 5 below), so that episode ends fall at every
/// position of an unroll, including its overlap step.
int scripted_episode_length(int env, int episode) {
  constexpr int lengths[] = {1, 4, 2, 7, 5, 3, 11, 6};
  return lengths[(3 * env + episode) % 8];
}

/// Whether episode n of env e ends by a time limit (truncated) rather than a terminal state:
/// every other one, so that both kinds fall inside unrolls and on their overlap step.
bool scripted_time_limit(int env, int episode) {
  return (env + episode) % 2 == 1;
}

/// Exact in float and unique per (env, step within the episode, 1-based, at most 11).
float scripted_reward(int env, int step) {
  return static_cast<float>(16 * env + step);
}

/// Observation {env id, step within the episode, steps this env has taken (the agent step j),
/// episode number}. The final observation of an episode (step = its length) is overwritten by
/// the next episode's first one (step 0) in env_batch, so the two can be told apart.
class scripted_env {
 public:
  using observation_type = float;
  using action_type = std::int32_t;

  scripted_env(int id, std::shared_ptr<env_logs> logs) : id_(id), logs_(std::move(logs)) {}

  static seedrl::observation_spec observation_spec() {
    return {seedrl::dtype::float32, {static_cast<std::int64_t>(scripted_obs_size)}};
  }
  static seedrl::action_spec action_spec() {
    return seedrl::action_spec::discrete(scripted_num_actions);
  }
  void seed(std::uint64_t) noexcept {}

  void reset(std::span<float> observation) {
    ++episode_;
    step_ = 0;
    emit(observation);
  }

  seedrl::step_result step(std::int32_t action, std::span<float> observation) {
    ++step_;
    ++agent_step_;
    const bool done = step_ == scripted_episode_length(id_, episode_);
    const bool truncated = done && scripted_time_limit(id_, episode_);
    const float reward = scripted_reward(id_, step_);
    {
      std::lock_guard lock(logs_->mutex);
      logs_->steps[id_].push_back({current_, action, reward, done, truncated});
    }
    emit(observation);
    return {reward, done && !truncated, truncated};
  }

 private:
  void emit(std::span<float> observation) {
    current_ = {static_cast<float>(id_), static_cast<float>(step_), static_cast<float>(agent_step_),
                static_cast<float>(episode_)};
    std::copy(current_.begin(), current_.end(), observation.begin());
  }

  int id_;
  std::shared_ptr<env_logs> logs_;
  int episode_ = -1, step_ = 0, agent_step_ = 0;
  scripted_observation current_{};
};

static_assert(seedrl::Environment<scripted_env>);

using seedrl_test::recorded_batch;
using seedrl_test::recording_trainer;

static_assert(seedrl::Trainer<recording_trainer, net_t, seedrl::adam<float>>);

/// What step j of an env's run must look like in a training batch, derived from the env's log
/// alone. The conventions (env_batch.hpp, actor.hpp, env_state_store.hpp, learner.hpp):
///   - the reward, done and truncated at step j are what the env returned for step j - 1's
///     action; at j = 0, the run's first observation, the actor sends reward 0, done 1 and
///     truncated 0 (a time limit sets done and truncated, a terminal state done alone);
///   - at an episode end the observation is the next episode's first (the final one is lost);
///   - the previous action is the action of step j - 1, and 0 where done is set, i.e. at the
///     first step of every episode (the network reads neither it nor the reward there: at an
///     episode start the core's reward input is 0 and its previous-action one-hot all zero);
///   - the action is the one the env received at its j-th step().
struct expected_step {
  scripted_observation observation{};
  float reward = 0.0f;
  std::uint8_t done = 0;
  std::uint8_t truncated = 0;
  std::int32_t prev_action = 0;
  std::int32_t action = 0;
};

expected_step expected_at(const std::vector<env_step_record>& log, std::size_t j) {
  expected_step e;
  e.observation = log[j].observation;
  e.action = log[j].action;
  if (j == 0) {
    e.reward = 0.0f;
    e.done = 1;
    e.prev_action = 0;
  } else {
    e.reward = log[j - 1].reward;
    e.done = log[j - 1].done ? 1 : 0;
    e.truncated = log[j - 1].truncated ? 1 : 0;
    e.prev_action = log[j - 1].done ? 0 : log[j - 1].action;
  }
  return e;
}

/// One unroll (column b of a batch), pulled out of its time-major batch.
struct unroll_column {
  std::vector<scripted_observation> observations;
  std::vector<float> rewards, behaviour_log_probs, start_state;
  std::vector<std::uint8_t> dones, truncated;
  std::vector<std::int32_t> prev_actions, actions;
};

unroll_column column_of(const recorded_batch& batch, std::size_t b) {
  unroll_column c;
  const std::size_t W = batch.start_state.size() / batch.B;
  for (std::size_t t = 0; t <= batch.T; ++t) {
    const std::size_t row = t * batch.B + b;
    scripted_observation o{};
    std::copy_n(batch.observations.begin() + static_cast<std::ptrdiff_t>(row * scripted_obs_size),
                scripted_obs_size, o.begin());
    c.observations.push_back(o);
    c.rewards.push_back(batch.rewards[row]);
    c.dones.push_back(batch.dones[row]);
    c.truncated.push_back(batch.truncated[row]);
    c.prev_actions.push_back(batch.prev_actions[row]);
    c.actions.push_back(batch.actions[row]);
    c.behaviour_log_probs.push_back(batch.behaviour_log_probs[row]);
  }
  c.start_state.assign(batch.start_state.begin() + static_cast<std::ptrdiff_t>(b * W),
                       batch.start_state.begin() + static_cast<std::ptrdiff_t>((b + 1) * W));
  return c;
}

/// An agent for the scripted envs (its parameters: see randomize).
seedrl::mlp_lstm_agent_config scripted_agent(std::ptrdiff_t lstm_size, std::uint64_t seed) {
  seedrl::mlp_lstm_agent_config nc;
  nc.observation_size = static_cast<std::ptrdiff_t>(scripted_obs_size);
  nc.num_actions = scripted_num_actions;
  nc.hidden_sizes = {16};
  nc.lstm_size = lstm_size;
  nc.seed = seed;
  return nc;
}

/// Draws every parameter of `net` uniformly from [-range, range].
void randomize(net_t& net, std::uint64_t seed, double range) {
  seedrl::random_generator init(seed);
  for (auto& p : net.parameters())
    p = static_cast<float>(init.uniform(-range, range));
}

/// log softmax(logits)[a], in double.
double log_softmax_at(std::span<const float> logits, std::int32_t a) {
  double m = -std::numeric_limits<double>::infinity();
  for (float l : logits)
    m = std::max(m, static_cast<double>(l));
  double sum = 0.0;
  for (float l : logits)
    sum += std::exp(static_cast<double>(l) - m);
  return static_cast<double>(logits[static_cast<std::size_t>(a)]) - m - std::log(sum);
}

}  // namespace

TEST_CASE("every field of every training batch lines up with what the environments did",
          "[learner][alignment]") {
  // lstm_size 0 has no recurrent state; 8 checks start states as well.
  const auto lstm_size = GENERATE(as<std::ptrdiff_t>{}, 0, 8);
  INFO("lstm_size " << lstm_size);
  constexpr std::size_t T = 5, B = 3, num_actors = 2, envs_per_actor = 2;
  constexpr std::size_t wanted_batches = 24;
  using recording_learner =
      seedrl::learner<net_t, seedrl::adam<float>, seedrl::in_process_transport, recording_trainer>;
  net_t net(scripted_agent(lstm_size, 5));
  randomize(net, 17, 0.3);  // far from the near-uniform initial policy: every input counts
  seedrl::learner_config lc = small_learner_config();
  lc.unroll_length = T;
  lc.batch_size = B;
  lc.batching.max_batch = 4;
  lc.seed = 3;
  recording_trainer trainer;
  const auto record = trainer.r;
  const auto logs = std::make_shared<env_logs>();
  seedrl::in_process_transport transport;
  const seedrl::in_process_endpoint endpoint{"learner-alignment"};
  recording_learner learner(lc, net, seedrl::adam<float>(), seedrl::impala_loss<float>(),
                            scripted_env::observation_spec(), scripted_env::action_spec(), trainer);
  learner.start();
  learner.serve(transport.listen(endpoint));
  std::atomic<bool> stop{false};
  std::vector<std::thread> actors;
  for (std::size_t n = 0; n < num_actors; ++n) {
    actors.emplace_back([&, n] {
      seedrl::actor_config ac;
      ac.num_envs = envs_per_actor;
      ac.actor_id = n;
      ac.name = "scripted-" + std::to_string(n);
      ac.seed = 100 + n;
      seedrl::actor<scripted_env, std::function<seedrl::in_process_connection()>> a(
          ac,
          [&, n](std::size_t i) {
            const int id = static_cast<int>(n * envs_per_actor + i);
            std::lock_guard lock(logs->mutex);
            ++logs->created[id];
            return scripted_env(id, logs);
          },
          [&] { return transport.connect(endpoint); });
      a.run(stop);
    });
  }
  // Both actors' envs must be in the batches: one actor alone can fill them before the other
  // thread has even started, or before its envs finish their first unroll.
  const auto envs_in_batches = [&] {
    std::set<int> envs;
    for (const auto& batch : record->batches)
      for (std::size_t b = 0; b < batch.B; ++b)  // step 0's observation starts with the env id
        envs.insert(static_cast<int>(batch.observations[b * scripted_obs_size]));
    return envs.size();
  };
  const bool enough = seedrl_test::wait_for(
      [&] {
        std::lock_guard lock_logs(logs->mutex);
        std::lock_guard lock_record(record->mutex);
        return record->batches.size() >= wanted_batches &&
               logs->created.size() == num_actors * envs_per_actor &&
               envs_in_batches() == num_actors * envs_per_actor;
      },
      10s);
  // Actors first: each finishes its round trip and steps its envs with the actions it got, so
  // the logs hold every action that any recorded unroll contains.
  stop = true;
  for (auto& a : actors)
    a.join();
  learner.stop();
  REQUIRE(enough);

  const auto W = static_cast<std::size_t>(net.state_size());
  std::lock_guard lock_logs(logs->mutex);
  std::lock_guard lock_record(record->mutex);
  REQUIRE(logs->created.size() == num_actors * envs_per_actor);
  for (const auto& [id, times] : logs->created) {
    INFO("env " << id);
    REQUIRE(times == 1);  // one session per actor: the logs describe a single run per env
  }

  // Every column of every batch, keyed by (env, unroll index k): unroll k of an env covers its
  // agent steps kT .. kT + T.
  std::map<std::pair<int, std::size_t>, unroll_column> unrolls;
  net_t training_net(net);
  for (std::size_t n = 0; n < record->batches.size(); ++n) {
    const auto& batch = record->batches[n];
    REQUIRE(batch.T == T);
    REQUIRE(batch.B == B);
    REQUIRE(batch.num_actions == static_cast<std::size_t>(scripted_num_actions));
    REQUIRE(batch.observations.size() == (T + 1) * B * scripted_obs_size);
    REQUIRE(batch.rewards.size() == (T + 1) * B);
    REQUIRE(batch.dones.size() == (T + 1) * B);
    REQUIRE(batch.truncated.size() == (T + 1) * B);
    REQUIRE(batch.prev_actions.size() == (T + 1) * B);
    REQUIRE(batch.actions.size() == (T + 1) * B);
    REQUIRE(batch.behaviour_log_probs.size() == (T + 1) * B);
    REQUIRE(batch.start_state.size() == B * W);
    // What training computes from the batch as given: with the parameters unchanged, the
    // unroll forward pass must reproduce the behaviour policy (V-trace's rho = 1).
    std::vector<float> logits((T + 1) * B * scripted_num_actions), values((T + 1) * B);
    seedrl::agent_unroll_output<float> out{logits, values};
    training_net.forward_unroll({T + 1, B, batch.observations, batch.rewards, batch.dones,
                                 batch.prev_actions, batch.start_state},
                                out);
    for (std::size_t r = 0; r < (T + 1) * B; ++r) {
      INFO("batch " << n << " row " << r << " (step " << r / B << ", column " << r % B << ")");
      const auto row_logits =
          std::span<const float>(logits).subspan(r * scripted_num_actions, scripted_num_actions);
      CHECK(static_cast<double>(batch.behaviour_log_probs[r]) ==
            Approx(log_softmax_at(row_logits, batch.actions[r])).epsilon(1e-4).margin(1e-5));
    }
    for (std::size_t b = 0; b < B; ++b) {
      auto c = column_of(batch, b);
      const int env = static_cast<int>(c.observations[0][0]);
      const auto j0 = static_cast<std::size_t>(c.observations[0][2]);
      INFO("batch " << n << " column " << b << " env " << env << " first agent step " << j0);
      REQUIRE(logs->steps.count(env) == 1);
      // Unrolls tile each env's run from its first observation, overlapping by one step.
      REQUIRE(j0 % T == 0);
      const bool fresh = unrolls.emplace(std::pair{env, j0 / T}, std::move(c)).second;
      REQUIRE(fresh);  // no unroll is trained twice
    }
  }

  // Each env's unrolls form a prefix 0, 1, ..., n-1 of its run: none lost or reordered (the
  // training queue is FIFO; at stop only the newest are dropped).
  std::map<int, std::size_t> per_env;
  for (const auto& [key, c] : unrolls) {
    INFO("env " << key.first << " unroll " << key.second);
    CHECK(key.second == per_env[key.first]++);
  }
  CHECK(per_env.size() == num_actors * envs_per_actor);

  net_t replay(net);  // the parameters inference used throughout: the trainer changed none
  std::map<std::pair<int, std::size_t>, std::vector<float>> state_after_T_steps;
  std::size_t mid_unroll_dones = 0, overlap_dones = 0;
  std::size_t mid_unroll_truncations = 0, overlap_truncations = 0;
  std::size_t starts_replayed = 0;
  for (const auto& [key, c] : unrolls) {
    const auto [env, k] = key;
    const auto& log = logs->steps.at(env);
    auto state = replay.initial_state(1);
    REQUIRE(c.start_state.size() == W);
    std::copy(c.start_state.begin(), c.start_state.end(), state.data.begin());
    if (k == 0) {  // the run's first step: the learner reset the env's state
      INFO("env " << env << " unroll 0");
      for (float x : c.start_state)
        CHECK(x == 0.0f);
    }
    for (std::size_t t = 0; t <= T; ++t) {
      const std::size_t j = k * T + t;
      INFO("env " << env << " unroll " << k << " step t " << t << " (agent step " << j << ")");
      // The actor stepped the env with every action it received, so the log reaches j.
      REQUIRE(j < log.size());
      CHECK(log[j].observation[2] == static_cast<float>(j));
      const expected_step e = expected_at(log, j);
      for (std::size_t i = 0; i < scripted_obs_size; ++i) {
        INFO("observation element " << i);
        CHECK(c.observations[t][i] == e.observation[i]);
      }
      CHECK(c.rewards[t] == e.reward);
      CHECK(c.dones[t] == e.done);
      CHECK(c.truncated[t] == e.truncated);
      CHECK(c.actions[t] == e.action);
      CHECK(c.prev_actions[t] == e.prev_action);
      if (t > 0) {
        // The same relations within the batch alone: step t's reward and done came back for
        // action t - 1, and the previous action is action t - 1 unless an episode started.
        CHECK(c.rewards[t] == log[j - 1].reward);
        CHECK(c.prev_actions[t] == (c.dones[t] != 0 ? 0 : c.actions[t - 1]));
        mid_unroll_dones += c.dones[t];
        mid_unroll_truncations += c.truncated[t];
      } else if (k > 0) {
        overlap_dones += c.dones[t];
        overlap_truncations += c.truncated[t];
      }
      // Replay inference on this step alone, from the unroll's start state and the env's own
      // record of the inputs: the behaviour log-prob is log softmax of those logits.
      std::array<float, scripted_num_actions> logits{};
      std::array<float, 1> value{};
      const std::array<float, 1> reward{e.reward};
      const std::array<std::uint8_t, 1> done{e.done};
      const std::array<std::int32_t, 1> prev_action{e.prev_action};
      if (e.done != 0) {
        // An episode start: the finished episode's last reward and action are not the core's
        // input (docs/architecture.md), so any others give the behaviour log-prob as well.
        auto start_state = state;
        std::array<float, scripted_num_actions> other_logits{};
        const std::array<float, 1> other_reward{e.reward == 0.5f ? -0.25f : 0.5f};
        const std::array<std::int32_t, 1> other_prev{(e.prev_action + 1) % scripted_num_actions};
        seedrl::agent_step_output<float> other_out{other_logits, value};
        replay.infer({e.observation, other_reward, done, other_prev}, start_state, other_out);
        CHECK(static_cast<double>(c.behaviour_log_probs[t]) ==
              Approx(log_softmax_at(other_logits, e.action)).epsilon(1e-4).margin(1e-5));
        ++starts_replayed;
      }
      seedrl::agent_step_output<float> out{logits, value};
      replay.infer({e.observation, reward, done, prev_action}, state, out);
      const double want = log_softmax_at(logits, e.action);
      CHECK(static_cast<double>(c.behaviour_log_probs[t]) ==
            Approx(want).epsilon(1e-4).margin(1e-5));
      if (t + 1 == T)  // the state before step T, which is step 0 of unroll k + 1
        state_after_T_steps[{env, k + 1}] = state.data;
    }
  }
  // Consecutive unrolls overlap by one step, every field, and the next one starts from the
  // state inference held before that step.
  std::size_t overlaps = 0;
  for (const auto& [key, c] : unrolls) {
    const auto next = unrolls.find({key.first, key.second + 1});
    if (next == unrolls.end())
      continue;
    ++overlaps;
    INFO("env " << key.first << " unrolls " << key.second << " and " << key.second + 1);
    const auto& d = next->second;
    CHECK(c.observations[T] == d.observations[0]);
    CHECK(c.rewards[T] == d.rewards[0]);
    CHECK(c.dones[T] == d.dones[0]);
    CHECK(c.truncated[T] == d.truncated[0]);
    CHECK(c.prev_actions[T] == d.prev_actions[0]);
    CHECK(c.actions[T] == d.actions[0]);
    CHECK(c.behaviour_log_probs[T] == d.behaviour_log_probs[0]);
    const auto& want = state_after_T_steps.at(next->first);
    REQUIRE(d.start_state.size() == want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      INFO("start state element " << i);
      CHECK(d.start_state[i] == Approx(want[i]).epsilon(1e-4).margin(1e-5));
    }
  }
  // The run covered what it should: episode ends inside unrolls and on the overlap step.
  CHECK(overlaps > 0);
  CHECK(mid_unroll_dones > 0);
  CHECK(overlap_dones > 0);
  // ... and time limits among them, in both places.
  CHECK(mid_unroll_truncations > 0);
  CHECK(overlap_truncations > 0);
  CHECK(mid_unroll_truncations < mid_unroll_dones);
  CHECK(starts_replayed > 0);
}

TEST_CASE("an inference-only learner plays greedy actions, reports every episode, never trains",
          "[learner][eval]") {
  // What evaluation over actor processes runs on (app/run_actor_eval.hpp): the scripted envs'
  // own logs say which actions they got and which episodes they finished.
  using recording_learner =
      seedrl::learner<net_t, seedrl::adam<float>, seedrl::in_process_transport, recording_trainer>;
  net_t net(scripted_agent(8, 7));
  randomize(net, 23, 0.5);  // far from uniform: the argmax depends on every input
  const auto dir = std::filesystem::temp_directory_path() /
                   ("seedrl-inference-only-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  seedrl::learner_config lc = small_learner_config();
  lc.inference_only = true;
  lc.checkpoint_dir = dir;  // ignored: an evaluation must not write checkpoints
  std::mutex episodes_mutex;
  std::vector<std::pair<double, std::int64_t>> episodes;
  lc.on_episode = [&](double r, std::int64_t length) {
    std::lock_guard lock(episodes_mutex);
    episodes.emplace_back(r, length);
  };
  recording_trainer trainer;
  const auto record = trainer.r;
  const auto logs = std::make_shared<env_logs>();
  seedrl::in_process_transport transport;
  const seedrl::in_process_endpoint endpoint{"learner-inference-only"};
  recording_learner learner(lc, net, seedrl::adam<float>(), seedrl::impala_loss<float>(),
                            scripted_env::observation_spec(), scripted_env::action_spec(), trainer,
                            seedrl::categorical_sampler{seedrl::action_selection::greedy});
  learner.start();
  learner.serve(transport.listen(endpoint));
  const auto version = learner.parameter_version();
  std::atomic<bool> stop{false};
  std::thread actor([&] {
    seedrl::actor_config ac;
    ac.num_envs = 2;
    ac.name = "scripted";
    seedrl::actor<scripted_env, std::function<seedrl::in_process_connection()>> a(
        ac, [&](std::size_t i) { return scripted_env(static_cast<int>(i), logs); },
        [&] { return transport.connect(endpoint); });
    a.run(stop);
  });
  const bool enough = seedrl_test::wait_for([&] {
    std::lock_guard lock(episodes_mutex);
    return episodes.size() >= 30;
  });
  stop = true;
  actor.join();
  learner.stop();
  REQUIRE(enough);
  const auto s = learner.stats();
  CHECK(s.train_steps == 0);
  CHECK(s.queue_depth == 0);
  CHECK(learner.parameter_version() == version);
  CHECK(record->batches.empty());
  CHECK_FALSE(std::filesystem::exists(dir));
  CHECK(s.episodes == static_cast<std::int64_t>(episodes.size()));

  // Every action any env received is the argmax of the network on what that env sent, replayed
  // step by step with the recurrent state reset where an episode starts.
  std::lock_guard lock_logs(logs->mutex);
  REQUIRE(logs->steps.size() == 2);
  std::multiset<std::pair<double, std::int64_t>> finished;  // (return, length) from the logs
  std::size_t replayed = 0;
  for (const auto& [env, log] : logs->steps) {
    auto state = net.initial_state(1);
    double episode_return = 0.0;
    std::int64_t length = 0;
    for (std::size_t j = 0; j < log.size(); ++j) {
      INFO("env " << env << " agent step " << j);
      const expected_step e = expected_at(log, j);
      std::array<float, scripted_num_actions> logits{};
      std::array<float, 1> value{};
      const std::array<float, 1> reward{e.reward};
      const std::array<std::uint8_t, 1> done{e.done};
      const std::array<std::int32_t, 1> prev_action{e.prev_action};
      seedrl::agent_step_output<float> out{logits, value};
      net.infer({e.observation, reward, done, prev_action}, state, out);
      const auto best = std::max_element(logits.begin(), logits.end()) - logits.begin();
      CHECK(e.action == static_cast<std::int32_t>(best));
      ++replayed;
      episode_return += static_cast<double>(log[j].reward);
      ++length;
      if (log[j].done) {
        finished.emplace(episode_return, length);
        episode_return = 0.0;
        length = 0;
      }
    }
  }
  CHECK(replayed > 60);
  // The learner reports an episode when the observation after its end arrives, so it saw a
  // subset of what the envs finished, each with its own return and length.
  std::lock_guard lock(episodes_mutex);
  REQUIRE(episodes.size() <= finished.size());
  for (const auto& e : episodes) {
    INFO("episode return " << e.first << ", length " << e.second);
    const auto it = finished.find(e);
    REQUIRE(it != finished.end());
    finished.erase(it);
  }
}

namespace {

/// K learners that train together as data-parallel ranks (thread ranks: test/thread_ranks.hpp),
/// each with one CartPole actor of two environments, on the in-process transport. `vary`
/// changes rank k's config or network before its learner is built.
struct rank_learners {
  seedrl::in_process_transport transport;
  seedrl::mlp_lstm_agent_config nc;
  std::vector<std::unique_ptr<learner_t>> learners;
  std::vector<std::unique_ptr<cartpole_actor_thread>> actors;

  explicit rank_learners(
      int ranks, const std::function<void(int, seedrl::learner_config&, net_t&)>& vary = {}) {
    auto hub = std::make_shared<seedrl_test::thread_rank_hub>(ranks);
    nc.hidden_sizes = {8};
    nc.lstm_size = 8;
    for (int k = 0; k < ranks; ++k) {
      seedrl::learner_config lc = small_learner_config();
      lc.rank_check_every = 5;
      lc.seed = 100 + static_cast<std::uint64_t>(k);  // each rank samples its own actions
      net_t net(nc);
      if (vary)
        vary(k, lc, net);
      seedrl::host_trainer trainer;
      trainer.set_gradient_reducer(std::make_shared<seedrl_test::thread_rank>(hub, k));
      learners.push_back(
          std::make_unique<learner_t>(lc, net, seedrl::adam<float>(), seedrl::impala_loss<float>(),
                                      seedrl::cartpole::observation_spec(),
                                      seedrl::cartpole::action_spec(), std::move(trainer)));
    }
  }

  void start(bool with_actors = true) {
    for (std::size_t k = 0; k < learners.size(); ++k) {
      learners[k]->start();
      if (!with_actors)
        continue;
      const seedrl::in_process_endpoint endpoint{"rank-" + std::to_string(k)};
      learners[k]->serve(transport.listen(endpoint));
      actors.push_back(std::make_unique<cartpole_actor_thread>(transport, endpoint, 2));
    }
  }

  std::vector<float> parameters(std::size_t k) const {
    net_t copy(nc);
    learners[k]->copy_parameters(copy);
    return {copy.parameters().begin(), copy.parameters().end()};
  }

  ~rank_learners() {
    for (auto& l : learners)
      l->stop();
    actors.clear();
  }
};

}  // namespace

TEST_CASE("learner ranks train every step together, stop together and stay identical",
          "[learner][distributed]") {
  rank_learners run(2);
  const auto initial = run.parameters(0);
  run.start();
  REQUIRE(seedrl_test::wait_for([&] { return run.learners[0]->stats().train_steps >= 12; }, 30s));
  CHECK(run.learners[0]->ranks() != nullptr);
  CHECK(run.learners[1]->ranks()->rank() == 1);
  // Rank 1 stops for its own reason; rank 0, still running, learns it at the next step.
  run.learners[1]->request_stop(seedrl::run_stop::solved);
  run.learners[1]->stop();
  REQUIRE(seedrl_test::wait_for(
      [&] { return run.learners[0]->stats().ranks_stopped != seedrl::run_stop::none; }, 30s));
  run.learners[0]->stop();
  const auto s0 = run.learners[0]->stats(), s1 = run.learners[1]->stats();
  CHECK(s0.ranks_stopped == seedrl::run_stop::solved);
  CHECK(s1.ranks_stopped == seedrl::run_stop::solved);
  CHECK(s0.stopping_rank == 1);
  CHECK(s0.trainer_error.empty());
  CHECK(s1.trainer_error.empty());
  CHECK(s0.rank == 0);
  CHECK(s1.rank == 1);
  // Every step was trained by both, with the same averaged gradient.
  CHECK(s0.train_steps == s1.train_steps);
  const auto p0 = run.parameters(0), p1 = run.parameters(1);
  CHECK(p0 == p1);  // bit for bit
  CHECK(p0 != initial);
  // Both see every rank's counters from the last agreement, and the totals add them up.
  REQUIRE(s0.ranks.size() == 2);
  CHECK(s0.ranks[0].frames > 0);
  CHECK(s0.ranks[1].frames > 0);
  CHECK(seedrl::over_all_ranks(s0).frames == s0.ranks[0].frames + s0.ranks[1].frames);
  CHECK(s1.ranks.size() == 2);
  CHECK(s0.seconds_waiting_for_ranks > 0.0);
}

TEST_CASE("learner ranks with other settings or parameters are refused when they meet",
          "[learner][distributed]") {
  using seedrl::distributed::hash_text;
  SECTION("settings: both hashes printed") {
    rank_learners run(
        2, [](int k, seedrl::learner_config& lc, net_t&) { lc.run_hash = k == 0 ? 11 : 22; });
    run.start(false);
    for (auto& l : run.learners) {
      REQUIRE(seedrl_test::wait_for([&] { return !l->stats().trainer_error.empty(); }, 30s));
      const auto s = l->stats();
      CHECK_THAT(s.trainer_error,
                 Catch::Contains("run settings differ when they met: rank 1 (" + hash_text(22) +
                                 ") differs from rank 0 (" + hash_text(11)));
      CHECK(s.ranks_stopped == seedrl::run_stop::failed);
      CHECK(s.train_steps == 0);
    }
  }
  SECTION("parameters: a rank initialised differently") {
    rank_learners run(2, [](int k, seedrl::learner_config&, net_t& net) {
      if (k == 1)
        net.parameters()[3] += 0.25f;
    });
    run.start(false);
    for (auto& l : run.learners) {
      REQUIRE(seedrl_test::wait_for([&] { return !l->stats().trainer_error.empty(); }, 30s));
      CHECK_THAT(l->stats().trainer_error,
                 Catch::Contains("parameters and optimizer state differ when they met (a rank "
                                 "initialised or restored differently): rank 1 ("));
    }
  }
}

TEST_CASE("the ranks' totals: frames and episodes summed, returns weighted, the slowest rank",
          "[learner][distributed]") {
  seedrl::learner_stats before, after;
  before.rank = after.rank = 0;
  before.frames = 7;  // this rank's own counters are not what the totals read
  seedrl::rank_figures a0, a1;
  a0.frames = 1000;
  a0.episodes = 10;
  a0.returns_counted = 100;
  a0.mean_return = 400.0;
  a1.frames = 3000;
  a1.episodes = 30;
  a1.returns_counted = 50;
  a1.mean_return = 500.0;
  seedrl::rank_figures b0{}, b1{};
  b0.seconds_since_start = b1.seconds_since_start = 10.0;
  a0.seconds_since_start = a1.seconds_since_start = 20.0;
  a0.seconds_waiting_for_ranks = 4.0;  // rank 0 waited 40% of the window for rank 1
  a0.seconds_training = 5.0;
  a1.seconds_waiting_for_ranks = 0.5;  // rank 1 is the one the others wait for
  a1.seconds_training = 9.0;
  a1.seconds_inference = 2.0;
  before.ranks = {b0, b1};
  after.ranks = {a0, a1};
  const auto all = seedrl::over_all_ranks(after);
  CHECK(all.frames == 4000);
  CHECK(all.episodes == 40);
  CHECK(all.returns_counted == 50);  // the target counts once every rank has 100
  CHECK(all.mean_return == Approx((400.0 * 100 + 500.0 * 50) / 150));
  // One rank: its own counters, untouched.
  seedrl::learner_stats lone;
  lone.frames = 5;
  lone.mean_return = 3.0;
  CHECK(seedrl::over_all_ranks(lone).frames == 5);
  CHECK(seedrl::over_all_ranks(lone).mean_return == 3.0);
  const auto p = seedrl::progress_between(seedrl::over_all_ranks(before), all, 10.0, 16);
  CHECK(p.frames_per_second == Approx(400.0));
  CHECK(p.slowest_rank == 1);
  CHECK(p.slowest_training_busy == Approx(0.9));
  CHECK(p.slowest_inference_busy == Approx(0.2));
  CHECK_THAT(seedrl::progress_line(p), Catch::Contains("ranks 2 (slowest 1: inference  20% "
                                                       "training  90%)"));
}
