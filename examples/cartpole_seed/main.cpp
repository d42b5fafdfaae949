// CartPole trained the SEED way: a learner process that batches inference for many actors and
// trains on their unrolls, and actor processes that only step environments, talking over TCP.
//
//   seedrl_cartpole_seed local   [--actors 4] ...        learner + N actor processes on loopback
//   seedrl_cartpole_seed learner [--host H] [--port P] ... learner only; actors connect to it
//   seedrl_cartpole_seed actor   --learner H:P [--envs-per-actor K] ...
//
// The link is authenticated with a shared secret from SEEDRL_AUTH_SECRET or --auth-secret-file
// (local mode makes one up for its own actors); --logdir writes metrics for TensorBoard;
// --checkpoint-dir saves checkpoints that --resume continues from.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "seedrl/env/cartpole.hpp"
#include "seedrl/io/checkpoint.hpp"
#include "seedrl/metrics/metrics_log.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/runtime/actor.hpp"
#include "seedrl/runtime/learner.hpp"
#include "seedrl/runtime/progress.hpp"
#include "seedrl/security/challenge.hpp"
#include "seedrl/security/shared_secret.hpp"
#include "seedrl/transport/tcp.hpp"
#if defined(SEEDRL_HAS_CUDA)
#include "seedrl/cuda/mlp_lstm_trainer.hpp"  // instantiated in cuda_trainer.cu
#endif

namespace {

std::atomic<bool> stop_requested{false};
// The first SIGINT/SIGTERM asks for a clean stop; a second one, if the stop hangs, exits now.
extern "C" void on_signal(int) {
  if (stop_requested.exchange(true))
    std::_Exit(130);
}

struct options {
  std::string mode;
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
  int actors = 4;
  std::size_t envs_per_actor = 4;
  std::size_t unroll_length = 20;
  std::size_t batch_size = 16;
  std::size_t queue_batches = 2;
  std::size_t inference_batch = 16;
  double learning_rate = 0.0;  // 0: 2e-3 for the MLP core, 5e-4 with --lstm
  double entropy_cost = 0.001;
  std::int64_t total_frames = 8'000'000;
  double target_return = 475.0;
  std::string logdir;
  std::uint64_t seed = 1;
  bool lstm = false;
  std::string checkpoint_dir;
  std::int64_t checkpoint_every_steps = 500;
  double checkpoint_every_seconds = 60.0;
  bool resume = false;
  std::string init_checkpoint;
  std::string auth_secret_file;
  bool no_auth = false;
  std::string device = "cpu";
};

[[noreturn]] void usage(int code) {
  std::printf(
      "usage: seedrl_cartpole_seed local|learner|actor [options]\n"
      "  local    a learner plus --actors actor processes on loopback (the demo)\n"
      "  learner  a learner listening on --host:--port for actors\n"
      "  actor    one actor process connecting to --learner\n"
      "options:\n"
      "  --learner HOST:PORT     learner address (actor mode)\n"
      "  --host HOST --port N    where the learner listens (default 127.0.0.1, 0 = any free port)\n"
      "  --actors N              actor processes in local mode (default 4)\n"
      "  --envs-per-actor K      environments per actor (default 4)\n"
      "  --unroll-length T       steps per unroll (default 20)\n"
      "  --batch-size B          unrolls per training step (default 16)\n"
      "  --inference-batch N     largest inference batch, in envs (default 16)\n"
      "  --queue-batches Q       training queue, in training batches (default 2; hold an unroll\n"
      "                          burst: actors x envs per actor / batch size)\n"
      "  --learning-rate LR      Adam learning rate (default 0.002, or 0.0005 with --lstm)\n"
      "  --entropy-cost C        entropy bonus weight (default 0.001)\n"
      "  --total-frames N        stop after this many env frames (default 8000000)\n"
      "  --target-return R       stop when the mean of the last 100 episodes reaches R (default "
      "475)\n"
      "  --logdir DIR            write metrics there: metrics.jsonl and TensorBoard event files\n"
      "  --seed S                random seed (default 1)\n"
      "  --lstm                  use the MLP+LSTM network instead of the MLP\n"
      "  --device cpu|cuda       where the learner trains (default cpu; cuda: the first GPU)\n"
      "checkpoints (learner and local modes):\n"
      "  --checkpoint-dir DIR    save checkpoints there (one directory per run: a new run\n"
      "                          refuses one that holds checkpoints; --resume continues it)\n"
      "  --checkpoint-every-steps N    every N training steps (default 500; 0 = off)\n"
      "  --checkpoint-every-seconds S  every S seconds (default 60; 0 = off); always at exit\n"
      "  --resume                continue from the newest good checkpoint in --checkpoint-dir\n"
      "  --init-checkpoint PATH  start from a checkpoint's weights only (file or directory)\n"
      "authentication:\n"
      "  the shared secret comes from the SEEDRL_AUTH_SECRET environment variable, or\n"
      "  --auth-secret-file FILE (mode 0600), never from the command line. Local mode makes a\n"
      "  random one for its actors when neither is given.\n"
      "  --no-auth               run the link without authentication\n");
  std::exit(code);
}

options parse(int argc, char** argv) {
  if (argc < 2)
    usage(2);
  options o;
  o.mode = argv[1];
  if (o.mode == "--help" || o.mode == "-h")
    usage(0);
  if (o.mode != "local" && o.mode != "learner" && o.mode != "actor")
    usage(2);
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--help" || a == "-h")
      usage(0);
    else if (a == "--learner") {
      const std::string v = next();
      const auto colon = v.rfind(':');
      if (colon == std::string::npos) {
        std::fprintf(stderr, "--learner needs HOST:PORT\n");
        std::exit(2);
      }
      o.host = v.substr(0, colon);
      o.port = static_cast<std::uint16_t>(std::stoi(v.substr(colon + 1)));
    } else if (a == "--host")
      o.host = next();
    else if (a == "--port")
      o.port = static_cast<std::uint16_t>(std::stoi(next()));
    else if (a == "--actors")
      o.actors = std::stoi(next());
    else if (a == "--envs-per-actor")
      o.envs_per_actor = std::stoul(next());
    else if (a == "--unroll-length")
      o.unroll_length = std::stoul(next());
    else if (a == "--batch-size")
      o.batch_size = std::stoul(next());
    else if (a == "--queue-batches")
      o.queue_batches = std::stoul(next());
    else if (a == "--inference-batch")
      o.inference_batch = std::stoul(next());
    else if (a == "--learning-rate")
      o.learning_rate = std::stod(next());
    else if (a == "--entropy-cost")
      o.entropy_cost = std::stod(next());
    else if (a == "--total-frames")
      o.total_frames = std::stoll(next());
    else if (a == "--target-return")
      o.target_return = std::stod(next());
    else if (a == "--logdir")
      o.logdir = next();
    else if (a == "--seed")
      o.seed = std::stoull(next());
    else if (a == "--lstm")
      o.lstm = true;
    else if (a == "--checkpoint-dir")
      o.checkpoint_dir = next();
    else if (a == "--checkpoint-every-steps")
      o.checkpoint_every_steps = std::stoll(next());
    else if (a == "--checkpoint-every-seconds")
      o.checkpoint_every_seconds = std::stod(next());
    else if (a == "--resume")
      o.resume = true;
    else if (a == "--init-checkpoint")
      o.init_checkpoint = next();
    else if (a == "--auth-secret-file")
      o.auth_secret_file = next();
    else if (a == "--no-auth")
      o.no_auth = true;
    else if (a == "--device")
      o.device = next();
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      usage(2);
    }
  }
  if (o.actors < 1 || o.envs_per_actor < 1 || o.unroll_length < 1 || o.batch_size < 1 ||
      o.inference_batch < 1 || o.queue_batches < 1) {
    std::fprintf(stderr, "counts and sizes must be positive\n");
    std::exit(2);
  }
  if (o.resume && o.checkpoint_dir.empty()) {
    std::fprintf(stderr, "--resume needs --checkpoint-dir\n");
    std::exit(2);
  }
  if (o.resume && !o.init_checkpoint.empty()) {
    std::fprintf(stderr, "--resume and --init-checkpoint exclude each other\n");
    std::exit(2);
  }
  if (o.device != "cpu" && o.device != "cuda") {
    std::fprintf(stderr, "--device takes cpu or cuda, got %s\n", o.device.c_str());
    std::exit(2);
  }
  return o;
}

void log_line(const std::string& s) {
  std::fprintf(stderr, "%s\n", s.c_str());
}

using secret_ptr = std::shared_ptr<const seedrl::security::shared_secret>;

/// The link's shared secret: --auth-secret-file, else SEEDRL_AUTH_SECRET, else (local mode) a
/// random one handed to the actor processes through their environment, never their argv.
secret_ptr load_secret(const options& o) {
  namespace sec = seedrl::security;
  if (o.no_auth)
    return nullptr;
  if (!o.auth_secret_file.empty())
    return std::make_shared<const sec::shared_secret>(
        sec::shared_secret::from_file(o.auth_secret_file));
  if (std::getenv(sec::default_secret_env) != nullptr)
    return std::make_shared<const sec::shared_secret>(
        sec::shared_secret::from_env(sec::default_secret_env));
  if (o.mode != "local")
    return nullptr;
  // Inherited by the actors we start.
  ::setenv(sec::default_secret_env, sec::random_secret_hex().c_str(), 1);
  return std::make_shared<const sec::shared_secret>(
      sec::shared_secret::from_env(sec::default_secret_env));
}

int run_actor(const options& o, secret_ptr secret) {
  seedrl::actor_config c;
  c.auth_secret = std::move(secret);
  c.num_envs = o.envs_per_actor;
  c.seed = o.seed;
  c.actor_id = o.seed;
  c.name = "cartpole-actor:" + std::to_string(::getpid());
  c.log = log_line;
  seedrl::tcp_transport transport;
  const seedrl::tcp_endpoint endpoint{o.host, o.port};
  seedrl::actor<seedrl::cartpole, std::function<seedrl::tcp_connection()>> a(
      c, [](std::size_t) { return seedrl::cartpole{}; },
      [&] { return transport.connect(endpoint); });
  try {
    a.run(stop_requested);
  } catch (const seedrl::actor_rejected& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}

template <class Trainer>
int run_learner(const options& o, secret_ptr secret, Trainer trainer) {
  seedrl::mlp_lstm_agent_config net_config;  // MLP 64-64, LSTM 64
  net_config.seed = o.seed;
  // CartPole is Markov: a feed-forward core (SEED's MuJoCo setting) learns it fastest; the LSTM
  // core (--lstm) learns too, more slowly and at a smaller learning rate.
  if (!o.lstm)
    net_config.lstm_size = 0;
  seedrl::mlp_lstm_agent<float> net(net_config);
  seedrl::adam_config adam;
  adam.learning_rate = o.learning_rate > 0.0 ? o.learning_rate : (o.lstm ? 5e-4 : 2e-3);
  seedrl::impala_loss_config<float> loss;
  loss.entropy_cost = static_cast<float>(o.entropy_cost);
  seedrl::learner_config lc;
  lc.unroll_length = o.unroll_length;
  lc.batch_size = o.batch_size;
  lc.queue_batches = o.queue_batches;
  lc.batching.max_batch = o.inference_batch;
  lc.batching.max_request_rows = std::max<std::size_t>(o.envs_per_actor, 256);
  lc.seed = o.seed;
  lc.log = log_line;
  const bool loopback = o.host == "127.0.0.1" || o.host == "localhost" || o.host == "::1";
  if (!secret && !loopback) {
    std::fprintf(stderr,
                 "warning: listening on %s without authentication: anyone who reaches it can "
                 "join; set SEEDRL_AUTH_SECRET or --auth-secret-file\n",
                 o.host.c_str());
  }
  lc.auth_secret = secret;
  lc.checkpoint_dir = o.checkpoint_dir;
  lc.checkpointing.every_steps = o.checkpoint_every_steps > 0
                                     ? std::optional<std::int64_t>(o.checkpoint_every_steps)
                                     : std::nullopt;
  lc.checkpointing.every_seconds = o.checkpoint_every_seconds > 0
                                       ? std::optional<double>(o.checkpoint_every_seconds)
                                       : std::nullopt;
  lc.checkpoint_meta["network"] = seedrl::describe(net_config);
  lc.checkpoint_meta["environment"] = "cartpole";
  using learner_t = seedrl::learner<seedrl::mlp_lstm_agent<float>, seedrl::adam<float>,
                                    seedrl::tcp_transport, Trainer>;
  learner_t learner(lc, net, seedrl::adam<float>(adam), seedrl::impala_loss<float>(loss),
                    seedrl::cartpole::observation_spec(), seedrl::cartpole::action_spec(),
                    std::move(trainer));
  if (o.resume || !o.init_checkpoint.empty()) {
    const auto report = [](const std::filesystem::path& f, const std::string& why) {
      std::fprintf(stderr, "skipping checkpoint %s: %s\n", f.c_str(), why.c_str());
    };
    std::optional<seedrl::checkpoint> c;
    const std::filesystem::path from = o.resume ? o.checkpoint_dir : o.init_checkpoint;
    if (std::filesystem::is_directory(from))
      c = seedrl::read_latest_checkpoint(from, report);
    else if (!o.resume)
      c = seedrl::read_checkpoint(from);
    if (!c && !o.resume) {
      std::fprintf(stderr, "no valid checkpoint in %s\n", from.c_str());
      return 2;
    }
    if (c) {
      const auto held = c->meta_value("network");
      if (held && *held != seedrl::describe(net_config)) {
        std::fprintf(stderr,
                     "%s holds a different network:\n  checkpoint: %s\n  this run:   %s\n"
                     "(was it trained with%s --lstm?)\n",
                     c->source.c_str(), held->c_str(), seedrl::describe(net_config).c_str(),
                     o.lstm ? "out" : "");
        return 2;
      }
      learner.restore(*c, !o.resume);
      std::printf("%s %s: training step %lld, %lld frames\n",
                  o.resume ? "resumed from" : "initial weights from", c->source.c_str(),
                  static_cast<long long>(c->step),
                  static_cast<long long>(o.resume ? c->int_counter("frames") : 0));
    } else {
      std::printf("no checkpoint in %s yet: starting afresh\n", from.c_str());
    }
  }
  // Before listening: start() refuses a checkpoint directory that holds another run's.
  learner.start();
  seedrl::tcp_transport transport;
  auto listener = transport.listen({o.host, o.port});
  const auto port = listener.local_port();
  std::printf("learner listening on %s:%u\n", o.host.c_str(), static_cast<unsigned>(port));
  std::fflush(stdout);
  learner.serve(std::move(listener));
  std::vector<pid_t> kids;
  if (o.mode == "local") {
    for (int i = 0; i < o.actors; ++i) {
      const pid_t pid = ::fork();
      if (pid == 0) {
        const std::string addr = o.host + ":" + std::to_string(port);
        const std::string envs = std::to_string(o.envs_per_actor),
                          seed = std::to_string(o.seed * 1000 + static_cast<std::uint64_t>(i) + 1);
        ::execl("/proc/self/exe", "seedrl_cartpole_seed", "actor", "--learner", addr.c_str(),
                "--envs-per-actor", envs.c_str(), "--seed", seed.c_str(),
                static_cast<char*>(nullptr));
        std::_Exit(127);
      }
      kids.push_back(pid);
    }
    std::printf("started %d actor processes with %zu envs each\n", o.actors, o.envs_per_actor);
  }
  std::unique_ptr<seedrl::metrics_log> metrics;
  if (!o.logdir.empty())
    metrics = std::make_unique<seedrl::metrics_log>(o.logdir);
  const auto t0 = std::chrono::steady_clock::now();
  seedrl::learner_stats last = learner.stats();  // a resumed run starts from its counters
  auto last_time = t0;
  int rc = 1;
  while (!stop_requested) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const auto s = learner.stats();
    const auto now = std::chrono::steady_clock::now();
    if (!s.trainer_error.empty()) {
      std::fprintf(stderr, "training failed: %s\n", s.trainer_error.c_str());
      break;
    }
    const bool solved = s.returns_counted == 100 && s.mean_return >= o.target_return;
    const bool out_of_frames = s.frames >= o.total_frames;
    if (now - last_time >= std::chrono::seconds(2) || solved || out_of_frames) {
      const double dt = std::chrono::duration<double>(now - last_time).count();
      const auto p = seedrl::progress_between(last, s, dt, o.inference_batch);
      std::printf("%s\n", seedrl::progress_line(p).c_str());
      std::fflush(stdout);
      if (metrics)
        seedrl::log_progress(*metrics, p);
      last = s;
      last_time = now;
    }
    if (solved) {
      std::printf(
          "solved: mean return %.1f over the last 100 episodes after %lld frames in %.0f s\n",
          s.mean_return, static_cast<long long>(s.frames),
          std::chrono::duration<double>(now - t0).count());
      rc = 0;
      break;
    }
    if (out_of_frames) {
      std::printf("stopped after %lld frames: mean return %.1f is below %.1f\n",
                  static_cast<long long>(s.frames), s.mean_return, o.target_return);
      break;
    }
  }
  if (stop_requested)
    rc = 130;
  for (pid_t pid : kids)
    ::kill(pid, SIGTERM);
  learner.stop();
  for (pid_t pid : kids)
    ::waitpid(pid, nullptr, 0);
  return rc;
}

/// The learner on the CPU, or with --device cuda its training steps on the first GPU (the
/// network is small, so inference stays on the CPU next to the actors' link).
int run_learner(const options& o, secret_ptr secret) {
  if (o.device == "cpu")
    return run_learner(o, std::move(secret), seedrl::host_trainer{});
#if defined(SEEDRL_HAS_CUDA)
  std::optional<seedrl::cuda::mlp_lstm_trainer<float>> gpu;
  try {
    gpu.emplace(0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "--device cuda: %s\n", e.what());  // the message says what to do
    return 2;
  }
  return run_learner(o, std::move(secret), std::move(*gpu));
#else
  std::fprintf(stderr,
               "--device cuda: this seedrl_cartpole_seed was built without CUDA (configure with "
               "nvcc on PATH, or -DSEEDRL_ENABLE_CUDA=ON); use --device cpu\n");
  return 2;
#endif
}

}  // namespace

int main(int argc, char** argv) {
  const options o = parse(argc, argv);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  // Restart interrupted socket calls: an actor then finishes its round trip and says goodbye
  // instead of seeing its link fail.
  sa.sa_flags = SA_RESTART;
  ::sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);  // a vanished peer shows up as a write error instead
  secret_ptr secret;
  try {
    secret = load_secret(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  try {
    if (o.mode == "actor")
      return run_actor(o, secret);
    return run_learner(o, secret);
  } catch (const seedrl::checkpoint_error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}
