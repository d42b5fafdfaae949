// Many actor connections against one real seedrl::learner on loopback TCP (issue target (e)).
//
// One client thread simulates N actors of one CartPole env each with Boost.Asio asynchronous
// sockets, so the client needs no thread per actor; the learner serves them all from its I/O
// pool (--io-threads, 1 by default), so the process's thread count does not grow with N. Every
// simulated actor does the real handshake (hello, welcome), then steps its own
// seedrl::env_batch<cartpole> in lock-step with the learner: send a step frame, wait for the
// actions, step the env. The round trip of each step is timed from just before the write to the end
// of the reply. After a warm-up the window measures round trips (p50 / p99 / max), frames/s and the
// learner's inference batch fill; then every actor says goodbye with a close frame and the learner
// stops. Runs for --connections 1,64,512 by default, --repeats times each; the table shows medians
// over the repeats.
#include <pthread.h>
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/env/cartpole.hpp"
#include "seedrl/env/env_batch.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/protocol/frame.hpp"
#include "seedrl/runtime/learner.hpp"
#include "seedrl/transport/tcp.hpp"

namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using clock_type = std::chrono::steady_clock;
namespace proto = seedrl::protocol;

struct options {
  std::vector<std::size_t> connections{1, 64, 512};
  double seconds = 5.0;
  double warmup = 1.0;
  int repeats = 3;
  std::size_t max_batch = 64;
  std::chrono::microseconds deadline{2000};
  std::size_t batch_size = 16;
  std::size_t unroll_length = 20;
  std::uint64_t seed = 1;
  std::size_t io_threads = 1;
  bool direct_replies = true;
};

[[noreturn]] void usage(int code) {
  std::printf(
      "usage: seedrl_bench_many_actors [options]\n"
      "  --connections LIST   simulated actors per run, comma-separated (default 1,64,512)\n"
      "  --seconds S          measuring window (default 5)\n"
      "  --warmup S           after every actor got its welcome (default 1)\n"
      "  --repeats R          runs per connection count; medians are reported (default 3)\n"
      "  --max-batch N        learner's inference batch size (default 64)\n"
      "  --deadline-us U      learner's batching deadline (default 2000)\n"
      "  --batch-size B       unrolls per training step (default 16)\n"
      "  --unroll-length T    steps per unroll (default 20)\n"
      "  --seed S             seed (default 1)\n"
      "  --io-threads N       learner's I/O threads (default 1)\n"
      "  --direct-replies 0|1 inference thread writes replies itself when it can (default 1)\n");
  std::exit(code);
}

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      usage(0);
    } else if (a == "--connections") {
      o.connections.clear();
      std::stringstream list(next());
      std::string item;
      while (std::getline(list, item, ','))
        o.connections.push_back(std::stoul(item));
    } else if (a == "--seconds") {
      o.seconds = std::stod(next());
    } else if (a == "--warmup") {
      o.warmup = std::stod(next());
    } else if (a == "--repeats") {
      o.repeats = std::stoi(next());
    } else if (a == "--max-batch") {
      o.max_batch = std::stoul(next());
    } else if (a == "--deadline-us") {
      o.deadline = std::chrono::microseconds(std::stoll(next()));
    } else if (a == "--batch-size") {
      o.batch_size = std::stoul(next());
    } else if (a == "--unroll-length") {
      o.unroll_length = std::stoul(next());
    } else if (a == "--seed") {
      o.seed = std::stoull(next());
    } else if (a == "--io-threads") {
      o.io_threads = std::stoul(next());
    } else if (a == "--direct-replies") {
      o.direct_replies = next() != "0";
    } else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      usage(2);
    }
  }
  if (o.connections.empty() || o.repeats < 1 || o.seconds <= 0 || o.max_batch < 1 ||
      std::find(o.connections.begin(), o.connections.end(), 0u) != o.connections.end()) {
    std::fprintf(stderr, "counts, sizes and times must be positive\n");
    std::exit(2);
  }
  return o;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double thread_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double process_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

/// "Threads:" from /proc/self/status: the learner's thread per connection shows here.
int thread_count() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("Threads:", 0) == 0)
      return std::stoi(line.substr(8));
  }
  return -1;
}

/// One simulated actor: a socket, one CartPole env and its frame buffers.
struct sim_actor {
  sim_actor(asio::io_context& io, std::uint64_t seed)
      : socket(io),
        env(seedrl::env_batch<seedrl::cartpole>::create(
            1, [](std::size_t) { return seedrl::cartpole{}; }, seed)),
        run_id{seed} {}
  tcp::socket socket;
  seedrl::env_batch<seedrl::cartpole> env;
  std::array<std::uint64_t, 1> run_id;
  std::array<float, 1> reward{0.0f};
  std::array<std::uint8_t, 1> done{1};  // the first observation starts an episode
  std::array<std::uint8_t, 1> truncated{0};
  std::array<std::int32_t, 1> action{0};
  std::array<std::byte, proto::header_size> header{};
  proto::frame_header h{};
  std::vector<std::byte> payload;
  std::vector<std::byte> out;
  clock_type::time_point sent{};
  std::int64_t window_steps = 0;
};

struct run_result {
  std::size_t connections = 0;
  std::size_t welcomed = 0;
  std::size_t failed = 0;
  double connect_seconds = 0;  // until every actor had its welcome
  double p50_us = 0, p99_us = 0, max_us = 0;
  double frames_per_second = 0;  // replies the client received in the window
  double learner_frames_per_second = 0;
  double batch_fill = 0;
  double mean_batch_rows = 0;
  std::int64_t min_steps = 0, max_steps = 0;  // per actor, in the window: fairness
  double client_cores = 0, process_cores = 0;
  int threads = 0;
};

/// The client side of one run: N simulated actors on one io_context, driven by callbacks.
class swarm {
 public:
  template <class Learner>
  swarm(asio::io_context& io, const options& o, std::size_t n, std::uint16_t port, Learner& learner)
      : o_(o),
        endpoint_(asio::ip::make_address("127.0.0.1"), port),
        warm_timer_(io),
        window_timer_(io),
        guard_timer_(io),
        stats_([&learner] { return learner.stats(); }) {
    result_.connections = n;
    for (std::size_t i = 0; i < n; ++i)
      actors_.push_back(std::make_unique<sim_actor>(io, o.seed * 100000 + i + 1));
  }

  void start() {
    t_start_ = clock_type::now();
    for (auto& a : actors_)
      connect(*a);
    // A handshake that never completes must not hang the benchmark.
    guard_timer_.expires_after(std::chrono::seconds(60));
    guard_timer_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec && !window_started_) {
        std::fprintf(stderr, "bench: only %zu of %zu actors were welcomed after 60 s\n",
                     result_.welcomed, actors_.size());
        stopping_ = true;
        for (auto& a : actors_) {
          boost::system::error_code ignored;
          a->socket.close(ignored);
        }
      }
    });
  }

  run_result finish() {
    std::vector<std::int64_t> rtts = std::move(rtt_ns_);
    run_result& r = result_;
    if (!rtts.empty()) {
      auto at = [&](double q) {
        const auto k = static_cast<std::size_t>(q * static_cast<double>(rtts.size() - 1));
        std::nth_element(rtts.begin(), rtts.begin() + static_cast<std::ptrdiff_t>(k), rtts.end());
        return 1e-3 * static_cast<double>(rtts[k]);
      };
      r.p50_us = at(0.50);
      r.p99_us = at(0.99);
      r.max_us = 1e-3 * static_cast<double>(*std::max_element(rtts.begin(), rtts.end()));
    }
    r.frames_per_second = static_cast<double>(window_replies_) / window_seconds_;
    r.min_steps = r.max_steps = actors_.empty() ? 0 : actors_.front()->window_steps;
    for (const auto& a : actors_) {
      r.min_steps = std::min(r.min_steps, a->window_steps);
      r.max_steps = std::max(r.max_steps, a->window_steps);
    }
    return r;
  }

 private:
  void fail(sim_actor& a, const std::string& why) {
    if (!stopping_ || result_.failed < 3)
      std::fprintf(stderr, "bench: simulated actor failed: %s\n", why.c_str());
    ++result_.failed;
    boost::system::error_code ignored;
    a.socket.close(ignored);
    maybe_all_welcomed();
  }

  void connect(sim_actor& a) {
    a.socket.async_connect(endpoint_, [this, &a](const boost::system::error_code& ec) {
      if (ec)
        return fail(a, "connect: " + ec.message());
      a.socket.set_option(tcp::no_delay(true));
      proto::encode_hello({a.run_id[0], 1, seedrl::cartpole::observation_spec(),
                           seedrl::cartpole::action_spec(), "sim-actor"},
                          a.out);
      asio::async_write(a.socket, asio::buffer(a.out),
                        [this, &a](const boost::system::error_code& e, std::size_t) {
                          if (e)
                            return fail(a, "hello: " + e.message());
                          read_frame(a, [this, &a] { on_welcome(a); });
                        });
    });
  }

  /// Reads a header and its payload into `a`, then calls `then`.
  template <class Then>
  void read_frame(sim_actor& a, Then then) {
    asio::async_read(a.socket, asio::buffer(a.header),
                     [this, &a, then](const boost::system::error_code& ec, std::size_t) {
                       if (ec)
                         return fail(a, "read: " + ec.message());
                       std::string why;
                       if (proto::decode_header(a.header, proto::default_max_payload, a.h, &why) !=
                           proto::error_code::none)
                         return fail(a, "bad header: " + why);
                       a.payload.resize(a.h.payload_length);
                       if (a.payload.empty())
                         return then();
                       asio::async_read(
                           a.socket, asio::buffer(a.payload),
                           [this, &a, then](const boost::system::error_code& e, std::size_t) {
                             if (e)
                               return fail(a, "read: " + e.message());
                             then();
                           });
                     });
  }

  void on_welcome(sim_actor& a) {
    proto::welcome w;
    std::string why;
    if (a.h.type != proto::message_type::welcome) {
      proto::status_message m;
      proto::decode_status(a.payload, m);
      return fail(
          a, std::string("expected welcome, got ") + proto::to_string(a.h.type) + ": " + m.message);
    }
    if (proto::decode_welcome(a.payload, w, &why) != proto::error_code::none)
      return fail(a, "bad welcome: " + why);
    ++result_.welcomed;
    a.out.resize(proto::step_frame_size(1, seedrl::cartpole::observation_spec().num_bytes()));
    maybe_all_welcomed();
    send_step(a);
  }

  /// Once every actor is welcomed (or failed), the warm-up starts, then the window.
  void maybe_all_welcomed() {
    if (warm_started_ || result_.welcomed + result_.failed < actors_.size())
      return;
    warm_started_ = true;
    result_.connect_seconds = std::chrono::duration<double>(clock_type::now() - t_start_).count();
    guard_timer_.cancel();
    warm_timer_.expires_after(
        std::chrono::duration_cast<clock_type::duration>(std::chrono::duration<double>(o_.warmup)));
    warm_timer_.async_wait([this](const boost::system::error_code&) { open_window(); });
  }

  void open_window() {
    window_started_ = true;
    s0_ = stats_();
    t0_ = clock_type::now();
    cpu0_ = thread_cpu_seconds();
    pcpu0_ = process_cpu_seconds();
    measuring_ = true;
    window_timer_.expires_after(std::chrono::duration_cast<clock_type::duration>(
        std::chrono::duration<double>(o_.seconds)));
    window_timer_.async_wait([this](const boost::system::error_code&) { close_window(); });
  }

  void close_window() {
    measuring_ = false;
    const auto s1 = stats_();
    window_seconds_ = std::chrono::duration<double>(clock_type::now() - t0_).count();
    result_.client_cores = (thread_cpu_seconds() - cpu0_) / window_seconds_;
    result_.process_cores = (process_cpu_seconds() - pcpu0_) / window_seconds_;
    result_.threads = thread_count();
    result_.learner_frames_per_second =
        static_cast<double>(s1.frames - s0_.frames) / window_seconds_;
    if (s1.batches > s0_.batches) {
      result_.mean_batch_rows = static_cast<double>(s1.batch_rows - s0_.batch_rows) /
                                static_cast<double>(s1.batches - s0_.batches);
      result_.batch_fill = result_.mean_batch_rows / static_cast<double>(o_.max_batch);
    }
    stopping_ = true;  // each actor says goodbye at its next turn
  }

  void send_step(sim_actor& a) {
    if (stopping_)
      return goodbye(a);
    const auto obs = a.env.observations();
    const std::size_t n =
        proto::encode_step(a.out, seedrl::dtype::float32,
                           {a.run_id, a.reward, a.done, a.truncated,
                            std::as_bytes(std::span<const float>(obs.data(), obs.size()))});
    a.sent = clock_type::now();
    asio::async_write(a.socket, asio::buffer(a.out.data(), n),
                      [this, &a](const boost::system::error_code& ec, std::size_t) {
                        if (ec)
                          return fail(a, "step: " + ec.message());
                        read_frame(a, [this, &a] { on_actions(a); });
                      });
  }

  void on_actions(sim_actor& a) {
    const auto now = clock_type::now();
    if (a.h.type != proto::message_type::actions)
      return fail(a, std::string("expected actions, got ") + proto::to_string(a.h.type));
    std::string why;
    if (proto::parse_actions(a.payload, 1, seedrl::cartpole::action_spec(), a.action, &why) !=
        proto::error_code::none)
      return fail(a, "bad actions: " + why);
    if (measuring_) {
      rtt_ns_.push_back(std::chrono::duration_cast<std::chrono::nanoseconds>(now - a.sent).count());
      ++window_replies_;
      ++a.window_steps;
    }
    a.env.step(a.action);
    a.reward[0] = a.env.rewards()[0];
    a.done[0] = a.env.dones()[0];
    a.truncated[0] = a.env.truncated()[0];
    send_step(a);
  }

  /// A close frame, then shutdown: the learner logs a goodbye and frees the env slot.
  void goodbye(sim_actor& a) {
    proto::encode_close({proto::error_code::none, "benchmark done"}, a.out);
    asio::async_write(a.socket, asio::buffer(a.out),
                      [&a](const boost::system::error_code&, std::size_t) {
                        boost::system::error_code ignored;
                        a.socket.shutdown(tcp::socket::shutdown_both, ignored);
                        a.socket.close(ignored);
                      });
  }

  const options& o_;
  tcp::endpoint endpoint_;
  asio::steady_timer warm_timer_, window_timer_, guard_timer_;
  std::function<seedrl::learner_stats()> stats_;
  std::vector<std::unique_ptr<sim_actor>> actors_;
  clock_type::time_point t_start_{}, t0_{};
  seedrl::learner_stats s0_{};
  double cpu0_ = 0, pcpu0_ = 0, window_seconds_ = 1;
  bool warm_started_ = false, window_started_ = false, measuring_ = false, stopping_ = false;
  std::vector<std::int64_t> rtt_ns_;
  std::int64_t window_replies_ = 0;
  run_result result_;
};

using learner_type =
    seedrl::learner<seedrl::mlp_lstm_agent<float>, seedrl::adam<float>, seedrl::tcp_transport>;

run_result run_once(const options& o, std::size_t n) {
  seedrl::mlp_lstm_agent_config nc;  // the demo's MLP 64-64 core
  nc.lstm_size = 0;
  nc.seed = o.seed;
  const seedrl::mlp_lstm_agent<float> net(nc);
  seedrl::adam_config adam;
  adam.learning_rate = 2e-3;
  seedrl::learner_config lc;
  lc.max_envs = std::max<std::size_t>(4096, n);
  lc.unroll_length = o.unroll_length;
  lc.batch_size = o.batch_size;
  lc.batching.max_batch = o.max_batch;
  lc.batching.deadline = o.deadline;
  lc.seed = o.seed;
  lc.io_threads = o.io_threads;
  lc.direct_replies = o.direct_replies;
  lc.max_connections = std::max<std::size_t>(lc.max_connections, n);
  // Connect and goodbye lines come once per actor; show only the unexpected ones.
  lc.log = [](const std::string& s) {
    if (s.find(" connected with ") == std::string::npos &&
        s.find("said goodbye") == std::string::npos)
      std::fprintf(stderr, "%s\n", s.c_str());
  };
  learner_type learner(lc, net, seedrl::adam<float>(adam),
                       seedrl::impala_loss<float>(seedrl::impala_loss_config<float>{}),
                       seedrl::cartpole::observation_spec(), seedrl::cartpole::action_spec());
  seedrl::tcp_transport transport;
  auto listener = transport.listen({"127.0.0.1", 0});
  const std::uint16_t port = listener.local_port();
  learner.start();
  learner.serve(std::move(listener));

  run_result r;
  {
    asio::io_context io;
    swarm s(io, o, n, port, learner);
    s.start();
    io.run();  // returns once every actor said goodbye (or failed)
    r = s.finish();
  }  // client sockets closed here
  learner.stop();
  return r;
}

/// Both ends of every connection live in this process: 2 descriptors per actor.
void raise_fd_limit(std::size_t max_connections) {
  rlimit rl{};
  ::getrlimit(RLIMIT_NOFILE, &rl);
  const rlim_t need = 2 * max_connections + 64;
  std::printf("ulimit -n: soft %llu, hard %llu; this run needs about %llu\n",
              static_cast<unsigned long long>(rl.rlim_cur),
              static_cast<unsigned long long>(rl.rlim_max), static_cast<unsigned long long>(need));
  if (rl.rlim_cur < need) {
    rl.rlim_cur = std::min(need, rl.rlim_max);
    if (::setrlimit(RLIMIT_NOFILE, &rl) == 0)
      std::printf("raised the soft limit to %llu\n", static_cast<unsigned long long>(rl.rlim_cur));
    if (rl.rlim_cur < need)
      std::printf("warning: the hard limit is too low for %zu connections\n", max_connections);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);  // a vanished peer shows up as a write error instead
  const options o = parse(argc, argv);
  raise_fd_limit(*std::max_element(o.connections.begin(), o.connections.end()));
  std::printf(
      "seedrl_bench_many_actors: MLP learner, inference batch %zu, deadline %lld us, training "
      "%zu x T %zu; window %.1f s after %.1f s warm-up, %d repeats; one client thread\n",
      o.max_batch, static_cast<long long>(o.deadline.count()), o.batch_size, o.unroll_length,
      o.seconds, o.warmup, o.repeats);
  std::fflush(stdout);
  std::vector<std::vector<run_result>> all;
  for (const std::size_t n : o.connections) {
    all.emplace_back();
    for (int rep = 0; rep < o.repeats; ++rep) {
      const run_result r = run_once(o, n);
      std::printf(
          "  %4zu connections, run %d: welcomed %zu (failed %zu) in %.2f s, rtt p50 %.0f us p99 "
          "%.0f us max %.0f us, %.0f f/s, batch %.1f rows (fill %.0f%%), steps per actor "
          "%lld..%lld, client %.2f cores, process %.2f cores, %d threads\n",
          n, rep + 1, r.welcomed, r.failed, r.connect_seconds, r.p50_us, r.p99_us, r.max_us,
          r.frames_per_second, r.mean_batch_rows, 100 * r.batch_fill,
          static_cast<long long>(r.min_steps), static_cast<long long>(r.max_steps), r.client_cores,
          r.process_cores, r.threads);
      std::fflush(stdout);
      all.back().push_back(r);
    }
  }
  std::printf(
      "\n| connections | welcomed | handshakes | rtt p50 | rtt p99 | rtt max | frames/s | "
      "batch rows (fill) | steps per actor min..max | client cores | process cores | threads "
      "|\n");
  std::printf(
      "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  for (const auto& runs : all) {
    auto med = [&](auto member) {
      std::vector<double> v;
      for (const auto& r : runs)
        v.push_back(static_cast<double>(r.*member));
      return median(v);
    };
    std::printf(
        "| %zu | %.0f | %.2f s | %.0f us | %.0f us | %.0f us | %.0f | %.1f (%.0f%%) | %.0f..%.0f | "
        "%.2f | %.2f | %.0f |\n",
        runs.front().connections, med(&run_result::welcomed), med(&run_result::connect_seconds),
        med(&run_result::p50_us), med(&run_result::p99_us), med(&run_result::max_us),
        med(&run_result::frames_per_second), med(&run_result::mean_batch_rows),
        100 * med(&run_result::batch_fill), med(&run_result::min_steps),
        med(&run_result::max_steps), med(&run_result::client_cores),
        med(&run_result::process_cores), med(&run_result::threads));
  }
  return 0;
}
