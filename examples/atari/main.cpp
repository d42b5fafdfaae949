// Pixel agents trained the SEED way: one learner with a CNN+LSTM network and learner-side frame
// stacking, and actor processes that send single 84x84 uint8 frames over TCP.
//
//   seedrl_atari local --game Pong [--actors 4] ...   learner + N Python actors on loopback
//                                                     (ALE through ale-py, python/seedrl_actor)
//   seedrl_atari local --game catch ...               learner + N C++ actors playing Catch
//   seedrl_atari learner --game Pong --port P ...     learner only; actors connect to it
//   seedrl_atari actor --game catch --learner H:P     one C++ Catch actor
//
// Python actors for ALE games can also be started by hand on other machines:
//   python -m seedrl_actor --learner HOST:PORT --env ALE/Pong-v5 --envs 8
// docs/atari.md says how to run a full training and what to expect.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "seedrl/env/catch.hpp"
#include "seedrl/io/checkpoint.hpp"
#include "seedrl/net/frame_stack.hpp"
#include "seedrl/net/impala_resnet_lstm_agent.hpp"
#include "seedrl/net/nature_cnn_lstm_agent.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/runtime/actor.hpp"
#include "seedrl/runtime/learner.hpp"
#include "seedrl/runtime/progress.hpp"
#include "seedrl/security/challenge.hpp"
#include "seedrl/security/shared_secret.hpp"
#include "seedrl/transport/tcp.hpp"
#if defined(SEEDRL_HAS_CUDA)
#include "seedrl/cuda/pixel_lstm_trainer.hpp"  // instantiated in cuda_trainer.cu
#endif

#ifndef SEEDRL_PYTHON_PACKAGE_DIR
#define SEEDRL_PYTHON_PACKAGE_DIR ""
#endif

namespace {

std::atomic<bool> stop_requested{false};
extern "C" void on_signal(int) {
  if (stop_requested.exchange(true))
    std::_Exit(130);
}

struct options {
  std::string mode;
  std::string game = "Pong";
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;
  int actors = 4;
  std::size_t envs_per_actor = 8;
  std::size_t unroll_length = 20;
  std::size_t batch_size = 32;
  std::size_t queue_batches = 2;
  std::size_t inference_batch = 32;
  std::size_t max_envs = 256;
  std::string network = "nature";
  std::string device = "cpu";
  std::ptrdiff_t lstm_size = 0;   // 0: the network's default (Nature 512, ResNet 256)
  std::ptrdiff_t dense_size = 0;  // 0: the network's default
  std::ptrdiff_t frame_stack = 4;
  std::vector<std::ptrdiff_t> conv_channels;  // empty: the network's default
  double learning_rate = 4.8e-4;
  double entropy_cost = 0.01;
  std::int64_t total_frames = 50'000'000;
  std::optional<double> target_return;
  double sticky_actions = 0.0;
  bool full_action_space = false;
  std::string python;
  std::string logdir;
  std::string checkpoint_dir;
  bool resume = false;
  std::uint64_t seed = 1;
  bool no_auth = false;
};

[[noreturn]] void usage(int code) {
  std::printf(
      "usage: seedrl_atari local|learner|actor [options]\n"
      "  local    a learner plus --actors actor processes on loopback\n"
      "  learner  a learner listening on --host:--port\n"
      "  actor    one C++ actor (Catch only; ALE actors are python -m seedrl_actor)\n"
      "options:\n"
      "  --game NAME             an ALE game (Pong, Breakout, ...: ALE/NAME-v5 through the Python\n"
      "                          actor) or catch (a C++ pixel game); default Pong\n"
      "  --learner HOST:PORT     learner address (actor mode)\n"
      "  --host HOST --port N    where the learner listens (default 127.0.0.1, 0 = any free port)\n"
      "  --actors N              actor processes in local mode (default 4)\n"
      "  --envs-per-actor K      environments per actor (default 8)\n"
      "  --max-envs N            environments the learner holds state for (default 256; local\n"
      "                          mode: actors x envs)\n"
      "  --network nature|resnet Nature CNN + LSTM 512, or IMPALA ResNet + LSTM 256\n"
      "  --device cpu|cuda       where the learner trains (default cpu; cuda: the first GPU)\n"
      "  --lstm-size N --dense-size N   override the network's sizes\n"
      "  --conv-channels A,B,C   convolution widths (Nature: 3 values, default 32,64,64; ResNet:\n"
      "                          one per stack, default 16,32,32)\n"
      "  --frame-stack N         frames per stack, kept on the learner (default 4)\n"
      "  --unroll-length T       steps per unroll (default 20)\n"
      "  --batch-size B          unrolls per training step (default 32)\n"
      "  --inference-batch N     largest inference batch, in envs (default 32)\n"
      "  --queue-batches Q       training queue, in training batches (default 2; hold an unroll\n"
      "                          burst: actors x envs per actor / batch size)\n"
      "  --learning-rate LR      Adam learning rate (default 0.00048)\n"
      "  --entropy-cost C        entropy bonus weight (default 0.01)\n"
      "  --total-frames N        stop after this many agent steps (default 50000000)\n"
      "  --target-return R       stop when the mean of the last 100 episodes reaches R\n"
      "  --sticky-actions P      ALE repeat_action_probability (default 0)\n"
      "  --full-action-space     all 18 ALE actions instead of the game's minimal set\n"
      "  --python PATH           Python for the ALE actors (default $SEEDRL_PYTHON or python3)\n"
      "  --logdir DIR            metrics.jsonl and TensorBoard event files\n"
      "  --checkpoint-dir DIR    save checkpoints there (every 10 minutes and at exit)\n"
      "  --resume                continue from the newest good checkpoint in --checkpoint-dir\n"
      "  --seed S                random seed (default 1)\n"
      "  --no-auth               no shared secret on the link (local mode makes one up otherwise;\n"
      "                          learner mode reads SEEDRL_AUTH_SECRET)\n");
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
  if (const char* p = std::getenv("SEEDRL_PYTHON"))
    o.python = p;
  if (o.python.empty())
    o.python = "python3";
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
    else if (a == "--game")
      o.game = next();
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
    else if (a == "--max-envs")
      o.max_envs = std::stoul(next());
    else if (a == "--network")
      o.network = next();
    else if (a == "--device")
      o.device = next();
    else if (a == "--lstm-size")
      o.lstm_size = std::stol(next());
    else if (a == "--dense-size")
      o.dense_size = std::stol(next());
    else if (a == "--conv-channels") {
      const std::string v = next();
      for (std::size_t at = 0; at <= v.size();) {
        const auto comma = std::min(v.find(',', at), v.size());
        o.conv_channels.push_back(std::stol(v.substr(at, comma - at)));
        at = comma + 1;
      }
    } else if (a == "--frame-stack")
      o.frame_stack = std::stol(next());
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
    else if (a == "--sticky-actions")
      o.sticky_actions = std::stod(next());
    else if (a == "--full-action-space")
      o.full_action_space = true;
    else if (a == "--python")
      o.python = next();
    else if (a == "--logdir")
      o.logdir = next();
    else if (a == "--checkpoint-dir")
      o.checkpoint_dir = next();
    else if (a == "--resume")
      o.resume = true;
    else if (a == "--seed")
      o.seed = std::stoull(next());
    else if (a == "--no-auth")
      o.no_auth = true;
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      usage(2);
    }
  }
  if (o.actors < 1 || o.envs_per_actor < 1 || o.unroll_length < 1 || o.batch_size < 1 ||
      o.inference_batch < 1 || o.queue_batches < 1 || o.max_envs < 1 || o.frame_stack < 1 ||
      o.lstm_size < 0 || o.dense_size < 0) {
    std::fprintf(stderr, "counts and sizes must be positive\n");
    std::exit(2);
  }
  for (const auto c : o.conv_channels) {
    if (c < 1) {
      std::fprintf(stderr, "--conv-channels must be positive\n");
      std::exit(2);
    }
  }
  if (o.network == "nature" && !o.conv_channels.empty() && o.conv_channels.size() != 3) {
    std::fprintf(stderr, "--conv-channels needs 3 values for the Nature CNN\n");
    std::exit(2);
  }
  if (o.network != "nature" && o.network != "resnet") {
    std::fprintf(stderr, "--network is nature or resnet, not %s\n", o.network.c_str());
    std::exit(2);
  }
  if (o.device != "cpu" && o.device != "cuda") {
    std::fprintf(stderr, "--device takes cpu or cuda, got %s\n", o.device.c_str());
    std::exit(2);
  }
  if (o.resume && o.checkpoint_dir.empty()) {
    std::fprintf(stderr, "--resume needs --checkpoint-dir\n");
    std::exit(2);
  }
  if (o.mode == "actor" && o.game != "catch") {
    std::fprintf(stderr,
                 "actor mode plays catch; for ALE games run: %s -m seedrl_actor --learner "
                 "HOST:PORT --env ALE/%s-v5 --envs K\n",
                 o.python.c_str(), o.game.c_str());
    std::exit(2);
  }
  if (o.mode == "local")
    o.max_envs = static_cast<std::size_t>(o.actors) * o.envs_per_actor;
  return o;
}

bool is_catch(const options& o) {
  return o.game == "catch";
}
std::string ale_id(const options& o) {
  return "ALE/" + o.game + "-v5";
}

void log_line(const std::string& s) {
  std::fprintf(stderr, "%s\n", s.c_str());
}

using secret_ptr = std::shared_ptr<const seedrl::security::shared_secret>;

/// SEEDRL_AUTH_SECRET when set; in local mode otherwise a random one, handed to the actors
/// through their environment (never their argv).
secret_ptr load_secret(const options& o) {
  namespace sec = seedrl::security;
  if (o.no_auth)
    return nullptr;
  if (std::getenv(sec::default_secret_env) == nullptr) {
    if (o.mode != "local")
      return nullptr;
    ::setenv(sec::default_secret_env, sec::random_secret_hex().c_str(), 1);
  }
  return std::make_shared<const sec::shared_secret>(
      sec::shared_secret::from_env(sec::default_secret_env));
}

/// The Python actor package: from this source tree unless it is installed.
void point_python_at_package() {
  const std::string dir = SEEDRL_PYTHON_PACKAGE_DIR;
  if (dir.empty() || !std::filesystem::exists(dir + "/seedrl_actor"))
    return;
  const char* old = std::getenv("PYTHONPATH");
  const std::string path = old && *old ? dir + ":" + old : dir;
  ::setenv("PYTHONPATH", path.c_str(), 1);
}

std::vector<std::string> python_actor_args(const options& o) {
  std::vector<std::string> args{o.python, "-m", "seedrl_actor", "--env", ale_id(o)};
  if (o.sticky_actions > 0.0)
    args.insert(args.end(), {"--sticky-actions", std::to_string(o.sticky_actions)});
  if (o.full_action_space)
    args.emplace_back("--full-action-space");
  return args;
}

/// Runs `args` and returns its stdout, or nullopt when it fails.
std::optional<std::string> capture(const std::vector<std::string>& args) {
  int fds[2];
  if (::pipe(fds) != 0)
    return std::nullopt;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], 1);
    ::close(fds[0]);
    ::close(fds[1]);
    std::vector<char*> argv;
    for (const auto& a : args)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    std::_Exit(127);
  }
  ::close(fds[1]);
  std::string out;
  char buf[256];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;)
    out.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return std::nullopt;
  return out;
}

/// The action count of an ALE game, asked of the Python actor (`--print-spec`), so that the
/// learner's network matches what the actors will send.
std::optional<std::int32_t> ale_action_count(const options& o) {
  auto args = python_actor_args(o);
  args.emplace_back("--print-spec");
  const auto out = capture(args);
  if (!out)
    return std::nullopt;
  const auto at = out->find("\"actions\":");
  if (at == std::string::npos)
    return std::nullopt;
  return static_cast<std::int32_t>(std::stoi(out->substr(at + 10)));
}

int run_actor(const options& o, secret_ptr secret) {
  seedrl::actor_config c;
  c.auth_secret = std::move(secret);
  c.num_envs = o.envs_per_actor;
  c.seed = o.seed;
  c.actor_id = o.seed;
  c.name = "catch-actor:" + std::to_string(::getpid());
  c.log = log_line;
  seedrl::tcp_transport transport;
  const seedrl::tcp_endpoint endpoint{o.host, o.port};
  const std::uint64_t seed = o.seed;
  seedrl::actor<seedrl::catch_game, std::function<seedrl::tcp_connection()>> a(
      c, [seed](std::size_t i) { return seedrl::catch_game({}, seed * 7919 + i); },
      [&] { return transport.connect(endpoint); });
  try {
    a.run(stop_requested);
  } catch (const seedrl::actor_rejected& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}

pid_t spawn(const std::vector<std::string>& args) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::vector<char*> argv;
    for (const auto& a : args)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "cannot start %s\n", argv[0]);
    std::_Exit(127);
  }
  return pid;
}

template <class Agent, class Trainer = seedrl::host_trainer>
int train(const options& o, secret_ptr secret, const Agent& net, const std::string& description,
          seedrl::observation_spec obs_spec, seedrl::action_spec act_spec,
          Trainer trainer = Trainer()) {
  seedrl::adam_config adam;
  adam.learning_rate = o.learning_rate;
  seedrl::impala_loss_config<float> loss;
  loss.entropy_cost = static_cast<float>(o.entropy_cost);
  loss.max_abs_reward = 1.0f;  // SEED clips Atari rewards on the learner
  seedrl::learner_config lc;
  lc.max_envs = o.max_envs;
  lc.unroll_length = o.unroll_length;
  lc.batch_size = o.batch_size;
  lc.queue_batches = o.queue_batches;
  lc.batching.max_batch = o.inference_batch;
  lc.batching.max_request_rows = std::max<std::size_t>(o.envs_per_actor, 256);
  lc.seed = o.seed;
  lc.log = log_line;
  lc.auth_secret = secret;
  lc.checkpoint_dir = o.checkpoint_dir;
  lc.checkpointing.every_steps = std::nullopt;
  lc.checkpointing.every_seconds = 600.0;
  lc.checkpoint_meta["network"] = description;
  lc.checkpoint_meta["environment"] = is_catch(o) ? "catch" : ale_id(o);
  using learner_t = seedrl::learner<Agent, seedrl::adam<float>, seedrl::tcp_transport, Trainer>;
  learner_t learner(lc, net, seedrl::adam<float>(adam), seedrl::impala_loss<float>(loss), obs_spec,
                    act_spec, std::move(trainer));
  if (o.resume) {
    auto c = seedrl::read_latest_checkpoint(
        o.checkpoint_dir, [](const std::filesystem::path& f, const std::string& why) {
          std::fprintf(stderr, "skipping checkpoint %s: %s\n", f.c_str(), why.c_str());
        });
    if (c) {
      const auto held = c->meta_value("network");
      if (held && *held != description) {
        std::fprintf(stderr, "%s holds a different network:\n  checkpoint: %s\n  this run:   %s\n",
                     c->source.c_str(), held->c_str(), description.c_str());
        return 2;
      }
      learner.restore(*c);
      std::printf("resumed from %s: %lld frames\n", c->source.c_str(),
                  static_cast<long long>(c->int_counter("frames")));
    }
  }
  // Before listening: start() refuses a checkpoint directory that holds another run's.
  learner.start();
  seedrl::tcp_transport transport;
  auto listener = transport.listen({o.host, o.port});
  const auto port = listener.local_port();
  std::printf("learner listening on %s:%u; actions: %d; network: %s\n", o.host.c_str(),
              static_cast<unsigned>(port), act_spec.num_actions, description.c_str());
  std::fflush(stdout);
  learner.serve(std::move(listener));

  std::vector<pid_t> kids;
  if (o.mode == "local") {
    const std::string addr = o.host + ":" + std::to_string(port);
    for (int i = 0; i < o.actors; ++i) {
      const std::string seed = std::to_string(o.seed * 1000 + static_cast<std::uint64_t>(i) + 1);
      const std::string envs = std::to_string(o.envs_per_actor);
      std::vector<std::string> args;
      if (is_catch(o)) {
        args = {"/proc/self/exe",   "actor", "--game", "catch", "--learner", addr,
                "--envs-per-actor", envs,    "--seed", seed};
      } else {
        args = python_actor_args(o);
        args.insert(args.end(), {"--learner", addr, "--envs", envs, "--seed", seed});
      }
      kids.push_back(spawn(args));
    }
    std::printf("started %d %s actor processes with %zu envs each\n", o.actors,
                is_catch(o) ? "C++ catch" : ale_id(o).c_str(), o.envs_per_actor);
  }
  std::unique_ptr<seedrl::metrics_log> metrics;
  if (!o.logdir.empty())
    metrics = std::make_unique<seedrl::metrics_log>(o.logdir);
  const auto t0 = std::chrono::steady_clock::now();
  seedrl::learner_stats last = learner.stats();
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
    const bool solved =
        o.target_return && s.returns_counted == 100 && s.mean_return >= *o.target_return;
    const bool out_of_frames = s.frames >= o.total_frames;
    // Actors that all died (e.g. ale-py missing) would leave the learner waiting forever.
    const bool actors_gone = !kids.empty() && s.connected_actors == 0 &&
                             now - t0 > std::chrono::seconds(60) && s.frames == last.frames;
    if (now - last_time >= std::chrono::seconds(5) || solved || out_of_frames || actors_gone) {
      const double dt = std::chrono::duration<double>(now - last_time).count();
      const auto p = seedrl::progress_between(last, s, dt, o.inference_batch);
      std::printf("%s\n", seedrl::progress_line(p).c_str());
      std::fflush(stdout);
      if (metrics)
        seedrl::log_progress(*metrics, p);
      last = s;
      last_time = now;
    }
    const double elapsed = std::chrono::duration<double>(now - t0).count();
    if (solved) {
      std::printf(
          "solved: mean return %.2f over the last 100 episodes after %lld frames in %.0f s\n",
          s.mean_return, static_cast<long long>(s.frames), elapsed);
      rc = 0;
      break;
    }
    if (out_of_frames) {
      std::printf(
          "done: %lld frames in %.0f s, %lld training steps, %lld episodes, mean return "
          "%.2f\n",
          static_cast<long long>(s.frames), elapsed, static_cast<long long>(s.train_steps),
          static_cast<long long>(s.episodes), s.mean_return);
      rc = o.target_return ? 1 : 0;
      break;
    }
    if (actors_gone) {
      std::fprintf(stderr, "no actor connected for a minute: giving up (see their errors above)\n");
      rc = 1;
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

template <class TorsoConfig>
void size_network(seedrl::pixel_lstm_agent_config<TorsoConfig>& c, const options& o,
                  std::int32_t num_actions) {
  c.height = c.width = 84;
  c.channels = o.frame_stack;
  c.num_actions = num_actions;
  c.seed = o.seed;
  if (o.lstm_size > 0)
    c.lstm_size = o.lstm_size;
  if (o.dense_size > 0)
    c.dense_size = o.dense_size;
}

/// train() with the trainer --device asks for: host_trainer, or the GPU trainer of the agent's
/// torso (exit 2 with the reason when no GPU can be used).
template <class Agent>
int train_on_device(const options& o, secret_ptr secret, const Agent& net,
                    const std::string& description, const seedrl::observation_spec& obs_spec,
                    const seedrl::action_spec& act_spec) {
  if (o.device == "cpu")
    return train(o, std::move(secret), net, description, obs_spec, act_spec);
#if defined(SEEDRL_HAS_CUDA)
  using torso_config = std::remove_cvref_t<decltype(net.inner().config().torso)>;
  std::optional<seedrl::cuda::pixel_lstm_trainer<float, torso_config>> gpu;
  try {
    gpu.emplace(0);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "--device cuda: %s\n", e.what());  // the message says what to do
    return 2;
  }
  return train(o, std::move(secret), net, description, obs_spec, act_spec, std::move(*gpu));
#else
  std::fprintf(stderr,
               "--device cuda: this seedrl_atari was built without CUDA (configure with nvcc "
               "on PATH, or -DSEEDRL_ENABLE_CUDA=ON); use --device cpu\n");
  return 2;
#endif
}

int run_learner(const options& o, secret_ptr secret) {
  std::int32_t num_actions = 3;
  seedrl::observation_spec obs_spec = seedrl::catch_game::observation_spec();
  if (!is_catch(o)) {
    point_python_at_package();
    const auto n = ale_action_count(o);
    if (!n) {
      std::fprintf(stderr,
                   "cannot ask the Python actor for %s's action count: is ale-py installed for %s?"
                   " (pip install ale-py gymnasium numpy; or --python PATH)\n",
                   ale_id(o).c_str(), o.python.c_str());
      return 3;
    }
    num_actions = *n;
  }
  const seedrl::action_spec act_spec = seedrl::action_spec::discrete(num_actions);
  seedrl::frame_stack_config stack;
  stack.depth = o.frame_stack;
  if (o.network == "nature") {
    seedrl::nature_cnn_lstm_agent_config c;
    size_network(c, o, num_actions);
    if (!o.conv_channels.empty())
      std::copy_n(o.conv_channels.begin(), 3, c.torso.channels.begin());
    using agent = seedrl::frame_stacked<seedrl::nature_cnn_lstm_agent<float>>;
    return train_on_device(o, std::move(secret), agent(stack, c), seedrl::describe(c), obs_spec,
                           act_spec);
  }
  auto c = seedrl::impala_resnet_lstm_agent_defaults();
  size_network(c, o, num_actions);
  if (!o.conv_channels.empty())
    c.torso.channels = o.conv_channels;
  using agent = seedrl::frame_stacked<seedrl::impala_resnet_lstm_agent<float>>;
  return train_on_device(o, std::move(secret), agent(stack, c), seedrl::describe(c), obs_spec,
                         act_spec);
}

}  // namespace

int main(int argc, char** argv) {
  const options o = parse(argc, argv);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESTART;  // an actor finishes its round trip and says goodbye
  ::sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  try {
    secret_ptr secret = load_secret(o);
    if (o.mode == "actor")
      return run_actor(o, secret);
    return run_learner(o, secret);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}
