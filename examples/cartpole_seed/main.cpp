// CartPole trained the SEED way: a learner process that batches inference for many actors and
// trains on their unrolls, and actor processes that only step environments, talking over TCP.
//
//   seedrl_cartpole_seed local   [--actors 4] ...        learner + N actor processes on loopback
//   seedrl_cartpole_seed learner [--host H] [--port P] ... learner only; actors connect to it
//   seedrl_cartpole_seed actor   --learner H:P [--envs-per-actor K] ...
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "seedrl/env/cartpole.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/runtime/actor.hpp"
#include "seedrl/runtime/learner.hpp"
#include "seedrl/transport/tcp.hpp"

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
  std::size_t inference_batch = 16;
  double learning_rate = 0.0;  // 0: 2e-3 for the MLP core, 5e-4 with --lstm
  double entropy_cost = 0.001;
  std::int64_t total_frames = 8'000'000;
  double target_return = 475.0;
  std::string logdir;
  std::uint64_t seed = 1;
  bool lstm = false;
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
      "  --learning-rate LR      Adam learning rate (default 0.002, or 0.0005 with --lstm)\n"
      "  --entropy-cost C        entropy bonus weight (default 0.001)\n"
      "  --total-frames N        stop after this many env frames (default 8000000)\n"
      "  --target-return R       stop when the mean of the last 100 episodes reaches R (default "
      "475)\n"
      "  --logdir DIR            also write progress.csv there\n"
      "  --seed S                random seed (default 1)\n"
      "  --lstm                  use the MLP+LSTM network instead of the MLP\n");
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
    else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      usage(2);
    }
  }
  if (o.actors < 1 || o.envs_per_actor < 1 || o.unroll_length < 1 || o.batch_size < 1 ||
      o.inference_batch < 1) {
    std::fprintf(stderr, "counts and sizes must be positive\n");
    std::exit(2);
  }
  return o;
}

void log_line(const std::string& s) {
  std::fprintf(stderr, "%s\n", s.c_str());
}

int run_actor(const options& o) {
  seedrl::actor_config c;
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

int run_learner(const options& o, const std::vector<pid_t>& children) {
  seedrl::mlp_lstm_agent_config net_config;  // MLP 64-64, LSTM 64
  net_config.seed = o.seed;
  // CartPole is Markov: a feed-forward core (SEED's MuJoCo setting) learns it fastest. The LSTM
  // core trains in examples/cartpole_train but not yet through this learner (see docs).
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
  lc.batching.max_batch = o.inference_batch;
  lc.batching.max_request_rows = std::max<std::size_t>(o.envs_per_actor, 256);
  lc.seed = o.seed;
  lc.log = log_line;
  using learner_t =
      seedrl::learner<seedrl::mlp_lstm_agent<float>, seedrl::adam<float>, seedrl::tcp_transport>;
  learner_t learner(lc, net, seedrl::adam<float>(adam), seedrl::impala_loss<float>(loss),
                    seedrl::cartpole::observation_spec(), seedrl::cartpole::action_spec());
  seedrl::tcp_transport transport;
  auto listener = transport.listen({o.host, o.port});
  const auto port = listener.local_port();
  std::printf("learner listening on %s:%u\n", o.host.c_str(), static_cast<unsigned>(port));
  std::fflush(stdout);
  learner.start();
  learner.serve(std::move(listener));
  std::vector<pid_t> kids = children;
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
  std::ofstream csv;
  if (!o.logdir.empty()) {
    csv.open(o.logdir + "/progress.csv");
    csv << "seconds,frames,frames_per_second,episodes,mean_return,loss,policy_loss,baseline_loss,"
           "entropy_loss,batch_fill,queue_depth,env_us,link_us,batching_us,inference_us,"
           "inference_busy,training_busy,bound\n";
  }
  const auto t0 = std::chrono::steady_clock::now();
  seedrl::learner_stats last{};
  auto last_time = t0;
  int rc = 1;
  while (!stop_requested) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const auto s = learner.stats();
    const auto now = std::chrono::steady_clock::now();
    const bool solved = s.returns_counted == 100 && s.mean_return >= o.target_return;
    const bool out_of_frames = s.frames >= o.total_frames;
    if (now - last_time >= std::chrono::seconds(2) || solved || out_of_frames) {
      const double dt = std::chrono::duration<double>(now - last_time).count();
      const double fps = static_cast<double>(s.frames - last.frames) / dt;
      const double fill = s.batches > last.batches
                              ? static_cast<double>(s.batch_rows - last.batch_rows) /
                                    static_cast<double>(s.batches - last.batches) /
                                    static_cast<double>(o.inference_batch)
                              : 0.0;
      const auto st = seedrl::stage_times_between(last, s, dt);
      std::printf(
          "frames %9lld  %6.0f f/s  episodes %6lld  return %6.1f  loss %7.3f (pg %6.3f v %6.3f ent "
          "%7.4f)  batch fill %3.0f%%  queue %zu  actors %zu  per step: env %.0f us link %.0f us "
          "batching %.0f us inference %.0f us  busy: inference %3.0f%% training %3.0f%%  %s\n",
          static_cast<long long>(s.frames), fps, static_cast<long long>(s.episodes), s.mean_return,
          s.last_loss.total, s.last_loss.policy, s.last_loss.baseline, s.last_loss.entropy,
          100 * fill, s.queue_depth, s.connected_actors, 1e6 * st.env, 1e6 * st.link,
          1e6 * st.batching, 1e6 * st.inference, 100 * st.inference_busy, 100 * st.training_busy,
          seedrl::to_string(seedrl::binding_stage(st)));
      std::fflush(stdout);
      if (csv) {
        csv << std::chrono::duration<double>(now - t0).count() << ',' << s.frames << ',' << fps
            << ',' << s.episodes << ',' << s.mean_return << ',' << s.last_loss.total << ','
            << s.last_loss.policy << ',' << s.last_loss.baseline << ',' << s.last_loss.entropy
            << ',' << fill << ',' << s.queue_depth << ',' << 1e6 * st.env << ',' << 1e6 * st.link
            << ',' << 1e6 * st.batching << ',' << 1e6 * st.inference << ',' << st.inference_busy
            << ',' << st.training_busy << ',' << seedrl::to_string(seedrl::binding_stage(st))
            << '\n';
      }
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
  if (o.mode == "actor")
    return run_actor(o);
  return run_learner(o, {});
}
