// End-to-end SEED throughput on CartPole or Pendulum (--env) against each stage run alone, all
// in one run.
//
//   1 env-only        A threads, each stepping an env_batch of K environments with random
//                     actions (uniform over the actions, or uniform in the bounds) and encoding
//                     the step frame: the actors' work without the link.
//   2 inference-only  one thread: mlp_lstm_agent::infer on N rows, action sampling and log
//                     probs: the learner's inference work without the link or bookkeeping.
//   3 training-only   one thread: host_trainer::train_step on a random [T+1, B] batch with the
//                     learner's loss (--algo: one IMPALA step, or PPO's epochs x minibatches
//                     steps), as the learner's trainer does; frames = T * B per batch.
//   4 end-to-end      a real seedrl::learner on loopback TCP with A actor processes (this binary
//                     re-executed with --actor-child; or threads with --actor-threads);
//                     frames/s from learner.stats().frames.
//
// Stages run interleaved (1 2 3 4, 1 2 3 4, ...) so that drift in a shared machine's load hits
// them alike; each figure is the median over --repeats runs, and the headline is the ratio of
// end-to-end frames/s to the slowest stage alone. The end-to-end rows also show where the time
// went: batch fill, inference and trainer busy fractions, and per thread group (inference,
// trainer, connection threads, actors) CPU use, CPU per frame and time spent waiting for a CPU,
// from /proc schedstat. CPU per frame changes least when other work shares the machine.
//
// The learner is the program layer's (app/run_learner.hpp): run_loss_t's loss_choice over
// spec_distribution and run_sampler_t's spec_sampler, so one learner type serves both
// environments; CartPole gets a categorical policy, Pendulum a diagonal Gaussian tanh-squashed
// into [-2, 2]. Each environment takes its program's defaults (seedrl_cartpole_seed: IMPALA;
// seedrl_pendulum: PPO, discount 0.95, no entropy bonus) unless --algo says otherwise.
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "seedrl/app/cli.hpp"
#include "seedrl/app/mlp_recipe.hpp"
#include "seedrl/app/processes.hpp"
#include "seedrl/app/run_actor.hpp"
#include "seedrl/app/run_learner.hpp"
#include "seedrl/app/run_loss.hpp"
#include "seedrl/app/signals.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/env/cartpole.hpp"
#include "seedrl/env/env_batch.hpp"
#include "seedrl/env/pendulum.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"
#include "seedrl/protocol/frame.hpp"
#include "seedrl/runtime/action_sampler.hpp"
#include "seedrl/runtime/actor.hpp"
#include "seedrl/runtime/learner.hpp"
#include "seedrl/runtime/trainer.hpp"
#include "seedrl/transport/tcp.hpp"

#include "random_training_batch.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

struct options {
  std::string env = "cartpole";
  std::string algo;  // empty: the environment's program default
  int actors = 4;
  std::size_t envs_per_actor = 4;
  std::size_t inference_batch = 16;
  std::size_t batch_size = 16;
  std::size_t unroll_length = 20;
  double seconds = 10.0;       // end-to-end measuring window
  double warmup = 2.0;         // end-to-end warm-up before the window
  double stage_seconds = 2.0;  // each stage-alone measurement
  int repeats = 3;
  std::size_t queue_batches = 2;  // learner's training queue, in training batches
  bool lstm = false;
  bool actor_threads = false;
  bool e2e_only = false;       // skip the stages alone, e.g. under perf record
  bool direct_replies = true;  // learner_config::direct_replies
  std::uint64_t seed = 1;
};

/// The flags, through the program layer's CLI11 parser (--help lists them; a bad one exits 2).
std::optional<int> parse(int argc, char** argv, options& o) {
  CLI::App cli("End-to-end SEED throughput on CartPole or Pendulum against each stage run alone",
               "seedrl_bench_e2e");
  cli.option_defaults()->always_capture_default();
  const auto& positive = seedrl::app::positive_number;
  cli.add_option("--env", o.env, "environment")->check(CLI::IsMember({"cartpole", "pendulum"}));
  cli.add_option("--algo", o.algo,
                 "learning algorithm (default: the environment program's, impala for cartpole "
                 "and ppo for pendulum)")
      ->check(CLI::IsMember({"impala", "ppo"}));
  cli.add_option("--actors", o.actors, "actor processes")->check(positive);
  cli.add_option("--envs-per-actor", o.envs_per_actor, "environments per actor")->check(positive);
  cli.add_option("--inference-batch", o.inference_batch, "learner's largest inference batch")
      ->check(positive);
  cli.add_option("--batch-size", o.batch_size, "unrolls per training step")->check(positive);
  cli.add_option("--unroll-length", o.unroll_length, "steps per unroll")->check(positive);
  cli.add_option("--queue-batches", o.queue_batches, "training queue capacity, in training batches")
      ->check(positive);
  cli.add_option("--seconds", o.seconds, "end-to-end measuring window")->check(positive);
  cli.add_option("--warmup", o.warmup, "end-to-end warm-up before the window")
      ->check(seedrl::app::non_negative_number);
  cli.add_option("--stage-seconds", o.stage_seconds, "each stage-alone measurement")
      ->check(positive);
  cli.add_option("--repeats", o.repeats, "runs of every stage; medians are reported")
      ->check(positive);
  cli.add_flag("--lstm", o.lstm, "MLP+LSTM core instead of the MLP (as cartpole_seed --lstm)");
  cli.add_flag("--actor-threads", o.actor_threads,
               "actors as threads of this process instead of processes");
  cli.add_flag("--e2e-only", o.e2e_only, "run only the end-to-end stage (e.g. under perf record)");
  cli.add_option("--seed", o.seed, "seed");
  cli.add_option("--direct-replies", o.direct_replies,
                 "the inference thread writes replies itself when the socket is free "
                 "(learner_config::direct_replies; 0: always through an I/O thread)");
  return seedrl::app::parse_command_line(cli, argc, argv);
}

/// What differs between the environments beyond their specs: the name, and the defaults their
/// programs (examples/cartpole_seed, examples/pendulum) set over seedrl::app::run_options'.
template <class Env>
struct env_traits;

template <>
struct env_traits<seedrl::cartpole> {
  static constexpr const char* name = "cartpole";
  static void program_defaults(seedrl::app::run_options&) {}
};

template <>
struct env_traits<seedrl::pendulum> {
  static constexpr const char* name = "pendulum";
  static void program_defaults(seedrl::app::run_options& r) {
    r.algorithm = "ppo";
    r.discount = 0.95;
    r.entropy_cost = 0.0;
  }
};

/// The environment's program's settings for the shared parts, from the bench's flags.
template <class Env>
seedrl::app::run_options run_settings(const options& o) {
  seedrl::app::run_options r;
  env_traits<Env>::program_defaults(r);
  if (!o.algo.empty())
    r.algorithm = o.algo;
  r.actors = o.actors;
  r.envs_per_actor = o.envs_per_actor;
  r.inference_batch = o.inference_batch;
  r.batch_size = o.batch_size;
  r.unroll_length = o.unroll_length;
  r.queue_batches = o.queue_batches;
  r.seed = o.seed;
  return r;
}

/// The demo's agent: MLP 64-64, with an LSTM 64 core only under --lstm; Adam at the demo's rate.
seedrl::app::mlp_recipe recipe(const options& o) {
  seedrl::app::mlp_recipe r;
  r.lstm = o.lstm;
  return r;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

/// The learner's types, as app::run_learner builds them for the CPU trainer.
using trainer_type = seedrl::host_trainer;
using loss_type = seedrl::app::run_loss_t<trainer_type, float>;
using sampler_type = seedrl::app::run_sampler_t<trainer_type>;
using network_type = seedrl::app::mlp_recipe::network_type;

template <class Env>
seedrl::app::agent_parts<network_type> make_agent(const options& o) {
  return recipe(o).make(run_settings<Env>(o), Env::observation_spec(), Env::action_spec());
}

template <class Env>
loss_type make_loss(const options& o, const seedrl::app::agent_parts<network_type>& agent) {
  return seedrl::app::make_run_loss<loss_type>(run_settings<Env>(o), agent.loss,
                                               Env::action_spec());
}

std::vector<float> random_floats(std::size_t n, seedrl::random_generator& rng, double lo,
                                 double hi) {
  std::vector<float> v(n);
  for (auto& x : v)
    x = static_cast<float>(rng.uniform(lo, hi));
  return v;
}

/// A stage alone: its rate, and the share of its wall time its threads got a CPU (below 1 when
/// other work on a shared machine preempted them).
struct stage_result {
  double frames_per_second = 0;
  double cpu_share = 0;
};

double cpu_clock(clockid_t id) {
  timespec ts{};
  ::clock_gettime(id, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

/// Calls `body()` (which returns frames done) until `seconds` pass, after a short warm-up that
/// fills caches and workspaces.
template <class Body>
stage_result frames_per_second(double seconds, Body&& body) {
  const auto warm = clock_type::now();
  while (seconds_since(warm) < std::min(0.2, seconds / 4))
    body();
  std::int64_t frames = 0;
  const auto t0 = clock_type::now();
  const double cpu0 = cpu_clock(CLOCK_THREAD_CPUTIME_ID);
  double dt = 0.0;
  do {
    for (int i = 0; i < 8; ++i)  // check the clock every few calls only
      frames += body();
    dt = seconds_since(t0);
  } while (dt < seconds);
  return {static_cast<double>(frames) / dt, (cpu_clock(CLOCK_THREAD_CPUTIME_ID) - cpu0) / dt};
}

// ---------------------------------------------------------------------------------------------
// 1. env-only

/// Random actions for `batch`: uniform over a discrete space's actions, uniform within a
/// continuous one's bounds.
template <class Env>
class random_actions {
 public:
  static constexpr bool discrete = seedrl::env_batch<Env>::discrete;
  using element = std::conditional_t<discrete, std::int32_t, float>;

  explicit random_actions(std::size_t envs) : spec_(Env::action_spec()) {
    values_.resize(envs * (discrete ? 1 : seedrl::continuous_action_size(spec_)));
  }

  std::span<const element> draw(seedrl::random_generator& rng) {
    if constexpr (discrete) {
      for (auto& x : values_)
        x = static_cast<std::int32_t>(rng.below(static_cast<std::uint64_t>(spec_.num_actions)));
    } else {
      const std::size_t D = seedrl::continuous_action_size(spec_);
      for (std::size_t i = 0; i < values_.size(); ++i)
        values_[i] = static_cast<float>(rng.uniform(spec_.low_at(i % D), spec_.high_at(i % D)));
    }
    return values_;
  }

 private:
  seedrl::action_spec spec_;
  std::vector<element> values_;
};

template <class Env>
stage_result env_only(const options& o) {
  std::atomic<bool> go{false}, stop{false};
  std::vector<std::int64_t> frames(static_cast<std::size_t>(o.actors), 0);
  std::vector<std::thread> threads;
  for (int a = 0; a < o.actors; ++a) {
    threads.emplace_back([&, a] {
      const std::size_t k = o.envs_per_actor;
      auto batch = seedrl::env_batch<Env>::create(
          k, [](std::size_t) { return Env{}; }, o.seed * 100 + a);
      seedrl::random_generator rng(o.seed * 1000 + static_cast<std::uint64_t>(a));
      const auto spec = batch.observation_spec();
      // The actor also encodes every step into a frame; count that as its work.
      std::vector<std::byte> frame(seedrl::protocol::step_frame_size(k, spec.num_bytes()));
      std::vector<std::uint64_t> run_ids(k, 7);
      random_actions<Env> actions(k);
      std::int64_t n = 0;
      while (!go)
        std::this_thread::yield();
      while (!stop) {
        batch.step(actions.draw(rng));
        const auto obs = batch.observations();
        seedrl::protocol::encode_step(
            frame, spec.type,
            {run_ids, batch.rewards(), batch.dones(), batch.truncated(),
             std::as_bytes(std::span<const float>(obs.data(), obs.size()))});
        ++n;
      }
      frames[static_cast<std::size_t>(a)] = n * static_cast<std::int64_t>(k);
    });
  }
  const auto t0 = clock_type::now();
  const double cpu0 = cpu_clock(CLOCK_PROCESS_CPUTIME_ID);
  go = true;
  std::this_thread::sleep_for(std::chrono::duration<double>(o.stage_seconds));
  stop = true;
  const double dt = seconds_since(t0);
  const double cpu = cpu_clock(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
  for (auto& t : threads)
    t.join();
  std::int64_t total = 0;
  for (auto f : frames)
    total += f;
  const double usable = std::min<double>(o.actors, std::thread::hardware_concurrency());
  return {static_cast<double>(total) / dt, cpu / dt / usable};
}

// ---------------------------------------------------------------------------------------------
// 2. inference-only

template <class Env>
stage_result inference_only(const options& o) {
  const auto agent = make_agent<Env>(o);
  network_type net(agent.network);
  const auto obs_spec = Env::observation_spec();
  const auto act_spec = Env::action_spec();
  const auto sampler = seedrl::app::make_run_sampler<sampler_type>(run_settings<Env>(o));
  const std::size_t B = o.inference_batch, A = sampler.outputs_per_row(act_spec),
                    D = seedrl::continuous_action_size(act_spec);
  seedrl::random_generator rng(o.seed);
  const auto obs = random_floats(B * static_cast<std::size_t>(obs_spec.num_elements()), rng, -1, 1);
  const auto rewards = random_floats(B, rng, 0, 1);
  std::vector<std::uint8_t> dones(B, 0);
  std::vector<std::int32_t> prev_actions(B, 0), actions(D == 0 ? B : 0);
  std::vector<float> prev_env_actions(B * D), env_actions(B * D), raw_actions(B * D);
  std::vector<float> low(D), high(D);
  for (std::size_t i = 0; i < D; ++i) {
    low[i] = static_cast<float>(act_spec.low_at(i));
    high[i] = static_cast<float>(act_spec.high_at(i));
  }
  std::vector<float> logits(B * A), values(B), logp(B);
  auto state = net.initial_state(B);
  return frames_per_second(o.stage_seconds, [&] {
    seedrl::agent_step_output<float> out{logits, values};
    net.infer({obs, rewards, dones, prev_actions, prev_env_actions}, state, out);
    sampler.sample(std::span<const float>(logits), B, A, rng,
                   seedrl::action_buffers<float>{actions, env_actions, raw_actions, low, high, D},
                   std::span<float>(logp));
    if (D == 0)
      prev_actions.swap(actions);
    else
      prev_env_actions.swap(env_actions);
    return static_cast<std::int64_t>(B);
  });
}

// ---------------------------------------------------------------------------------------------
// 3. training-only

template <class Env>
stage_result training_only(const options& o) {
  const auto agent = make_agent<Env>(o);
  network_type net(agent.network);
  auto optimizer = agent.optimizer;
  const auto loss = make_loss<Env>(o, agent);
  const double max_grad_norm = seedrl::app::make_learner_config(run_settings<Env>(o)).max_grad_norm;
  trainer_type trainer(o.seed);
  const auto act_spec = Env::action_spec();
  seedrl_bench::batch_shape shape;
  shape.T = o.unroll_length;
  shape.B = o.batch_size;
  shape.observation_size = static_cast<std::size_t>(Env::observation_spec().num_elements());
  shape.num_actions =
      seedrl::app::make_run_sampler<sampler_type>(run_settings<Env>(o)).outputs_per_row(act_spec);
  shape.action_dim = seedrl::continuous_action_size(act_spec);
  shape.state_width = static_cast<std::size_t>(net.state_size());
  if (shape.action_dim > 0) {  // Pendulum: torques within [-2, 2], 200-step episodes
    shape.action_bound = static_cast<float>(act_spec.high_at(0));
    shape.episode_length = 200;
    shape.ends_are_time_limits = true;
  }
  const seedrl_bench::random_training_batch data(shape, o.seed);
  const auto batch = data.view();
  return frames_per_second(o.stage_seconds, [&] {
    const auto r = trainer.train_step(batch, net, optimizer, loss, max_grad_norm);
    if (!r.applied)  // a skipped step would time less work than it claims
      throw std::runtime_error("training-only: the update was skipped: " + r.skipped);
    return static_cast<std::int64_t>(o.unroll_length * o.batch_size);
  });
}

// ---------------------------------------------------------------------------------------------
// 4. end-to-end

/// A thread's CPU time and time spent runnable but waiting for a CPU, from schedstat: on a
/// shared 2-core machine the second tells preemption apart from work.
struct sched_time {
  double cpu = 0;
  double wait = 0;
};

sched_time read_schedstat(const std::string& path) {
  std::ifstream f(path);
  double run_ns = 0, wait_ns = 0;
  if (!(f >> run_ns >> wait_ns))
    return {};  // gone
  return {run_ns * 1e-9, wait_ns * 1e-9};
}

std::vector<long> own_threads() {
  std::vector<long> tids;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/task"))
    tids.push_back(std::stol(e.path().filename().string()));
  std::sort(tids.begin(), tids.end());
  return tids;
}

seedrl::actor_config actor_settings(std::size_t envs, std::uint64_t seed) {
  seedrl::actor_config c;
  c.num_envs = envs;
  c.seed = seed;
  c.actor_id = seed;
  c.name = "bench-actor:" + std::to_string(seed);
  return c;
}

template <class Env>
using tcp_actor = seedrl::actor<Env, std::function<seedrl::tcp_connection()>>;

/// `seedrl_bench_e2e --actor-child ENV PORT K SEED`: one actor process (the programs' actor
/// mode), stopped by SIGTERM.
template <class Env>
int actor_child(std::uint16_t port, std::size_t envs, std::uint64_t seed) {
  seedrl::app::install_stop_handlers();
  seedrl::app::run_options r;
  r.mode = seedrl::app::run_mode::actor;
  r.port = port;
  r.envs_per_actor = envs;
  r.seed = seed;
  try {
    return seedrl::app::run_actor<Env>(
        r, nullptr, [](std::size_t) { return Env{}; }, "bench-actor");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench actor: %s\n", e.what());
    return 1;
  }
}

struct e2e_result {
  double frames_per_second = 0;
  double train_frames_per_second = 0;  // train steps * T * B per second
  double batch_fill = 0;               // mean rows per inference batch / max batch
  double inference_busy = 0;           // fraction of the window
  double training_busy = 0;
  double trainer_waiting = 0;
  // CPU seconds and run-queue waiting seconds per second of the window, by thread group.
  sched_time inference, trainer, link;  // link: connection, accept and main threads
  sched_time actors;
  int connected = 0;
};

template <class Env>
e2e_result end_to_end(const options& o, const char* self) {
  // The program's learner and agent (seedrl_cartpole_seed / seedrl_pendulum local), built by
  // the program layer as app::run_learner builds them.
  const auto settings = run_settings<Env>(o);
  const auto agent = make_agent<Env>(o);
  auto config = seedrl::app::make_learner_config(settings);
  config.direct_replies = o.direct_replies;
  seedrl::learner<network_type, seedrl::adam<float>, seedrl::tcp_transport, trainer_type, loss_type,
                  sampler_type>
      learner(config, agent.network, agent.optimizer, make_loss<Env>(o, agent),
              Env::observation_spec(), Env::action_spec(), trainer_type(),
              seedrl::app::make_run_sampler<sampler_type>(settings));
  seedrl::tcp_transport transport;
  auto listener = transport.listen({"127.0.0.1", 0});
  const std::uint16_t port = listener.local_port();
  // The first two threads start() adds are, in creation (and so tid) order, the trainer and
  // inference (learner::start starts the training loop first, since it may refuse); a sanitizer
  // may add a helper thread of its own after them.
  const auto before = own_threads();
  learner.start();
  std::vector<long> started;
  for (long t : own_threads()) {
    if (!std::binary_search(before.begin(), before.end(), t))
      started.push_back(t);
  }
  const long trainer_tid = started.size() >= 2 ? started[0] : -1;
  const long inference_tid = started.size() >= 2 ? started[1] : -1;
  learner.serve(std::move(listener));

  std::vector<pid_t> children;
  std::vector<std::thread> threads;
  std::vector<std::atomic<long>> tids(static_cast<std::size_t>(o.actors));
  std::atomic<bool> stop_threads{false};
  for (int i = 0; i < o.actors; ++i) {
    const std::uint64_t seed = o.seed * 1000 + static_cast<std::uint64_t>(i) + 1;
    if (o.actor_threads) {
      threads.emplace_back([&, i, seed] {
        tids[static_cast<std::size_t>(i)] = ::syscall(SYS_gettid);
        seedrl::tcp_transport t;
        tcp_actor<Env> a(
            actor_settings(o.envs_per_actor, seed), [](std::size_t) { return Env{}; },
            [&] {
              return t.connect({"127.0.0.1", port});
            });
        a.run(stop_threads);
      });
      continue;
    }
    children.push_back(
        seedrl::app::spawn({self, "--actor-child", env_traits<Env>::name, std::to_string(port),
                            std::to_string(o.envs_per_actor), std::to_string(seed)}));
  }

  struct snapshot {
    sched_time inference, trainer, link, actors;
  };
  const auto sample = [&] {
    snapshot x;
    std::vector<long> actor_tids;
    for (auto& t : tids)
      actor_tids.push_back(t.load());
    const auto add = [](sched_time& to, const sched_time& v) {
      to.cpu += v.cpu;
      to.wait += v.wait;
    };
    for (long t : own_threads()) {
      const auto v = read_schedstat("/proc/self/task/" + std::to_string(t) + "/schedstat");
      if (t == inference_tid)
        x.inference = v;
      else if (t == trainer_tid)
        x.trainer = v;
      else if (std::find(actor_tids.begin(), actor_tids.end(), t) != actor_tids.end())
        add(x.actors, v);
      else
        add(x.link, v);
    }
    for (pid_t pid : children)
      add(x.actors, read_schedstat("/proc/" + std::to_string(pid) + "/schedstat"));
    return x;
  };

  std::this_thread::sleep_for(std::chrono::duration<double>(o.warmup));
  const auto s0 = learner.stats();
  const auto t0 = clock_type::now();
  const auto c0 = sample();
  std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
  const auto s1 = learner.stats();
  const double dt = seconds_since(t0);
  const auto c1 = sample();

  for (pid_t pid : children)
    ::kill(pid, SIGTERM);
  stop_threads = true;
  learner.stop();
  for (pid_t pid : children)
    ::waitpid(pid, nullptr, 0);
  for (auto& t : threads)
    t.join();

  e2e_result r;
  const auto T = static_cast<double>(o.unroll_length), B = static_cast<double>(o.batch_size);
  r.frames_per_second = static_cast<double>(s1.frames - s0.frames) / dt;
  r.train_frames_per_second = static_cast<double>(s1.train_steps - s0.train_steps) * T * B / dt;
  if (s1.batches > s0.batches) {
    r.batch_fill = static_cast<double>(s1.batch_rows - s0.batch_rows) /
                   static_cast<double>(s1.batches - s0.batches) /
                   static_cast<double>(o.inference_batch);
  }
  r.inference_busy = (s1.seconds_inference - s0.seconds_inference) / dt;
  r.training_busy = (s1.seconds_training - s0.seconds_training) / dt;
  r.trainer_waiting = (s1.seconds_waiting_for_data - s0.seconds_waiting_for_data) / dt;
  const auto rate = [dt](const sched_time& a, const sched_time& b) {
    return sched_time{(b.cpu - a.cpu) / dt, (b.wait - a.wait) / dt};
  };
  r.inference = rate(c0.inference, c1.inference);
  r.trainer = rate(c0.trainer, c1.trainer);
  r.link = rate(c0.link, c1.link);
  r.actors = rate(c0.actors, c1.actors);
  r.connected = static_cast<int>(s1.connected_actors);
  return r;
}

std::string si(double v) {
  char buf[32];
  if (v >= 1e6)
    std::snprintf(buf, sizeof buf, "%.2f M", v / 1e6);
  else if (v >= 1e3)
    std::snprintf(buf, sizeof buf, "%.1f k", v / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

/// The whole run on environment `Env`: stages interleaved, then the tables.
template <class Env>
int run(const options& o, const std::string& self) {
  const auto settings = run_settings<Env>(o);
  std::printf(
      "seedrl_bench_e2e: %s, %s, %d actor %s x %zu envs, inference batch %zu, training batch "
      "%zu x T %zu, %s core, %d repeats (stages %.1f s, end-to-end %.1f s after %.1f s "
      "warm-up), %u CPUs\n",
      env_traits<Env>::name, seedrl::app::algorithm_summary(settings).c_str(), o.actors,
      o.actor_threads ? "threads" : "processes", o.envs_per_actor, o.inference_batch, o.batch_size,
      o.unroll_length, o.lstm ? "MLP+LSTM" : "MLP", o.repeats, o.stage_seconds, o.seconds, o.warmup,
      std::thread::hardware_concurrency());
  std::fflush(stdout);

  std::vector<stage_result> env, inf, train;
  std::vector<double> e2e;
  std::vector<e2e_result> runs;
  for (int r = 0; r < o.repeats; ++r) {
    env.push_back(o.e2e_only ? stage_result{} : env_only<Env>(o));
    inf.push_back(o.e2e_only ? stage_result{} : inference_only<Env>(o));
    train.push_back(o.e2e_only ? stage_result{} : training_only<Env>(o));
    runs.push_back(end_to_end<Env>(o, self.c_str()));
    e2e.push_back(runs.back().frames_per_second);
    std::printf(
        "  run %d: env %s  inference %s  training %s  end-to-end %s f/s (fill %.0f%%, inference "
        "%.0f%%, training %.0f%% busy, trainer CPU %.2f, %d actors connected)\n",
        r + 1, si(env.back().frames_per_second).c_str(), si(inf.back().frames_per_second).c_str(),
        si(train.back().frames_per_second).c_str(), si(e2e.back()).c_str(),
        100 * runs.back().batch_fill, 100 * runs.back().inference_busy,
        100 * runs.back().training_busy, runs.back().trainer.cpu, runs.back().connected);
    std::fflush(stdout);
  }
  const auto rate = [](const std::vector<stage_result>& v) {
    std::vector<double> x;
    for (const auto& r : v)
      x.push_back(r.frames_per_second);
    return median(x);
  };
  const auto share = [](const std::vector<stage_result>& v) {
    std::vector<double> x;
    for (const auto& r : v)
      x.push_back(r.cpu_share);
    return median(x);
  };
  const double m_env = rate(env), m_inf = rate(inf), m_train = rate(train), m_e2e = median(e2e);
  const double slowest = std::min({m_env, m_inf, m_train});
  const char* slowest_name = slowest == m_train ? "training"
                             : slowest == m_inf ? "inference"
                                                : "env";
  auto field = [&](auto get) {
    std::vector<double> v;
    for (const auto& x : runs)
      v.push_back(get(x));
    return median(v);
  };

  if (o.e2e_only) {
    std::printf("\nend-to-end: %s frames/s (median of %d; stages alone skipped)\n",
                si(m_e2e).c_str(), o.repeats);
  } else {
    // CPU share: how much of the wall time the stage's threads ran; below 1, other work on the
    // machine took the rest and the stage-alone figure is low by that much.
    std::printf(
        "\n| stage | frames/s (median of %d) | CPU share while measured | / slowest stage alone "
        "|\n",
        o.repeats);
    std::printf("| --- | ---: | ---: | ---: |\n");
    std::printf("| 1 env-only (%d threads x %zu envs) | %s | %.2f | %.2f |\n", o.actors,
                o.envs_per_actor, si(m_env).c_str(), share(env), m_env / slowest);
    std::printf("| 2 inference-only (%zu rows) | %s | %.2f | %.2f |\n", o.inference_batch,
                si(m_inf).c_str(), share(inf), m_inf / slowest);
    std::printf("| 3 training-only (T %zu x B %zu) | %s | %.2f | %.2f |\n", o.unroll_length,
                o.batch_size, si(m_train).c_str(), share(train), m_train / slowest);
    std::printf("| 4 end-to-end (%d x %zu, %s) | %s | | **%.2f** |\n", o.actors, o.envs_per_actor,
                o.actor_threads ? "threads" : "processes", si(m_e2e).c_str(), m_e2e / slowest);
    std::printf("\nend-to-end / %s-only = %.2f (target >= 0.7)\n", slowest_name, m_e2e / slowest);
    std::printf("end-to-end / env-only = %.3f\n", m_e2e / m_env);
  }
  std::printf(
      "\nend-to-end, medians over runs: trained frames/s %s, inference batch fill %.0f%%; busy "
      "(wall) inference %.0f%%, trainer %.0f%%, trainer waiting for data %.0f%%\n",
      si(field([](const e2e_result& r) { return r.train_frames_per_second; })).c_str(),
      100 * field([](const e2e_result& r) { return r.batch_fill; }),
      100 * field([](const e2e_result& r) { return r.inference_busy; }),
      100 * field([](const e2e_result& r) { return r.training_busy; }),
      100 * field([](const e2e_result& r) { return r.trainer_waiting; }));
  // CPU per frame is what a busy shared machine changes least; from it follow the bounds an
  // idle machine would set: all CPUs shared by every thread, and the trainer's single thread.
  std::printf(
      "\n| threads (end-to-end) | CPU, cores | CPU per frame, us | runnable, waiting for a CPU, "
      "cores |\n");
  std::printf("| --- | ---: | ---: | ---: |\n");
  const std::pair<const char*, sched_time e2e_result::*> groups[] = {
      {"learner inference thread", &e2e_result::inference},
      {"learner trainer thread", &e2e_result::trainer},
      {"learner connection + accept + main threads", &e2e_result::link},
      {"actors", &e2e_result::actors}};
  double total_cpu = 0, total_per_frame = 0, trainer_per_frame = 0;
  for (const auto& [name, member] : groups) {
    const double cpu = field([m = member](const e2e_result& r) { return (r.*m).cpu; });
    const double per_frame =
        field([m = member](const e2e_result& r) { return 1e6 * (r.*m).cpu / r.frames_per_second; });
    const double wait = field([m = member](const e2e_result& r) { return (r.*m).wait; });
    total_cpu += cpu;
    total_per_frame += per_frame;
    if (member == &e2e_result::trainer)
      trainer_per_frame = per_frame;
    std::printf("| %s | %.2f | %.2f | %.2f |\n", name, cpu, per_frame, wait);
  }
  const unsigned cpus = std::thread::hardware_concurrency();
  std::printf("| total | %.2f of %u | %.2f | |\n", total_cpu, cpus, total_per_frame);
  std::printf(
      "\nbounds from CPU per frame: all %u CPUs busy at %s frames/s; the trainer thread alone at "
      "%s frames/s\n",
      cpus, si(1e6 * cpus / total_per_frame).c_str(),
      trainer_per_frame > 0 ? si(1e6 / trainer_per_frame).c_str() : "n/a");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 6 && std::string(argv[1]) == "--actor-child") {
    const auto port = static_cast<std::uint16_t>(std::stoi(argv[3]));
    const std::size_t envs = std::stoul(argv[4]);
    const std::uint64_t seed = std::stoull(argv[5]);
    return std::string(argv[2]) == "pendulum" ? actor_child<seedrl::pendulum>(port, envs, seed)
                                              : actor_child<seedrl::cartpole>(port, envs, seed);
  }
  ::signal(SIGPIPE, SIG_IGN);  // a vanished actor shows up as a write error instead
  options o;
  if (const auto rc = parse(argc, argv, o))
    return *rc;
  // The real path, not /proc/self/exe, so that actor processes show under our name in perf.
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  try {
    return o.env == "pendulum" ? run<seedrl::pendulum>(o, self) : run<seedrl::cartpole>(o, self);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "seedrl_bench_e2e: %s\n", e.what());
    return 1;
  }
}
