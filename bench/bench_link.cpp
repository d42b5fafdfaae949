// Link costs: one actor step round trip over seedrl's TCP transport, with the learner side
// echoing actions instead of running inference, against a raw blocking-socket ping-pong that
// moves the same bytes each way. One process: each server runs in its own thread on loopback.
//
// Targets (from the issue):
//   (a) k = 1 env per message: our round trip takes at most 1.5x the raw one;
//   (b) k = 64 envs per message: our env-step rate is at least 0.5x the raw one.
//
// BM_raw_socket/k and BM_seedrl_tcp/k: each link alone, wall time per round trip and env steps
// per second. BM_link_paired/k: both links open at once, alternating short blocks of round
// trips, so that other work on this shared machine hits both alike. Its counters are the
// figures the targets are judged on: ours_us and raw_us (wall time per round trip), time_ratio
// = ours/raw (target a) and rate_ratio = raw time / our time = our env-step rate / raw rate
// (target b), plus both env-step rates. On a loaded machine a ping-pong's wall time is mostly
// scheduler latency, and where the scheduler puts each server thread can swing the wall ratio
// either way, so the benchmark also reports the CPU time a round trip costs (client thread plus
// server thread, kernel included): ours_cpu_us, raw_cpu_us and cpu_ratio = ours/raw. On an idle
// machine the two ratios agree.
//
// BM_tls_paired/k: the same step round trip over seedrl's TCP transport with TLS 1.3 (AES-GCM
// records; a pre-shared key, so no certificate files: the per-record cost is the same with
// certificates) against plain seedrl TCP, paired the same way: tls_ratio = TLS / plain wall
// time per round trip (target: at most 1.3), tls_cpu_ratio likewise for CPU time.
//
// Our side does what seedrl's actor and learner do per step, minus stepping environments and
// inference: the client encodes a CartPole step (float32[4] observations) with
// protocol::encode_step and writes it, then reads the reply header, decode_header, reads the
// payload and parse_actions; the server reads the header, decode_header, checks the length,
// reads the payload, parse_step, picks an action per env from its observation and answers with
// encode_discrete_actions. The raw side writes and reads as many bytes with write()/read() and
// looks at none of them.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <benchmark/benchmark.h>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "seedrl/protocol/frame.hpp"
#include "seedrl/security/shared_secret.hpp"
#include "seedrl/transport/tcp.hpp"
#include "seedrl/transport/tls_config.hpp"

namespace {

namespace protocol = seedrl::protocol;

// CartPole: four float32 observations, two discrete actions.
const seedrl::observation_spec obs_spec{seedrl::dtype::float32, seedrl::tensor_shape{4}};
const seedrl::action_spec act_spec = seedrl::action_spec::discrete(2);

std::size_t step_bytes(std::size_t k) {
  return protocol::step_frame_size(k, obs_spec.num_bytes());
}
std::size_t reply_bytes(std::size_t k) {
  return protocol::actions_frame_size(k, act_spec);
}

// The most envs per message these benchmarks use.
constexpr std::size_t max_envs = 1024;

// Round trips run before timing, so that neither link is measured while TCP is still warming
// up (slow start, first page faults in the socket buffers).
constexpr int warmup_round_trips = 200;

// ---------------------------------------------------------------------------------------------
// seedrl's link: tcp_transport, encode/parse on both sides

/// The learner's connection path without inference: read a step, answer actions, until the
/// client goes away (a read then throws) or sends something other than a valid step.
void serve_steps(seedrl::tcp_connection& conn, std::size_t k) {
  // Also bounds k for GCC 12, which otherwise warns that actions(k) might ask for 2^64 bytes.
  if (k == 0 || k > max_envs)
    return;
  const std::size_t obs_bytes = obs_spec.num_bytes();
  const std::size_t expected = protocol::step_payload_size(k, obs_bytes);
  std::vector<std::byte> frame;
  std::vector<std::byte> reply(reply_bytes(k));
  std::vector<std::int32_t> actions(k);
  protocol::step_view step;
  for (;;) {
    std::array<std::byte, protocol::header_size> header{};
    conn.read(header);
    protocol::frame_header h{};
    if (protocol::decode_header(header, protocol::default_max_payload, h) !=
            protocol::error_code::none ||
        h.type != protocol::message_type::step || h.payload_length != expected) {
      return;
    }
    frame.resize(h.payload_length);
    conn.read(frame);
    if (protocol::parse_step(frame, static_cast<std::uint32_t>(k), obs_bytes, step) !=
        protocol::error_code::none) {
      return;
    }
    // Stands in for inference: push the cart towards the side the pole leans to.
    for (std::size_t i = 0; i < step.size(); ++i) {
      const float angle = protocol::detail::load_f32(step.observation(i).data() + 8);
      actions[step.env_index(i)] = angle > 0.0f ? 1 : 0;
    }
    const std::size_t n = protocol::encode_discrete_actions(reply, actions);
    const std::span<const std::byte> bufs[] = {std::span<const std::byte>(reply).first(n)};
    conn.write(bufs);
  }
}

/// TLS 1.3 with a pre-shared key (the same key both ends).
seedrl::tls_config bench_tls() {
  static const std::string secret = "bench_link's pre-shared TLS secret";
  seedrl::tls_config c;
  c.psk_secret = std::make_shared<const seedrl::security::shared_secret>(
      seedrl::security::shared_secret::from_bytes(
          std::as_bytes(std::span(secret.data(), secret.size())), "bench_link"));
  return c;
}

/// The actor's side of one link to a server thread running serve_steps; with `tls`, over TLS.
class seedrl_link {
 public:
  explicit seedrl_link(std::size_t k, bool tls = false)
      : k_(k),
        transport_(tls ? seedrl::tcp_transport(bench_tls()) : seedrl::tcp_transport()),
        listener_(transport_.listen({"127.0.0.1", 0})),
        step_frame_(step_bytes(k)),
        run_ids_(k),
        rewards_(k, 1.0f),
        dones_(k, 0),
        truncateds_(k, 0),
        observations_(4 * k),
        actions_(k) {
    for (std::size_t i = 0; i < k; ++i) {
      run_ids_[i] = 0x5eed0000u + i;
      observations_[4 * i + 2] = (i % 2 == 0) ? 0.01f : -0.01f;  // pole angle
    }
    server_ = std::thread([this] {
      try {
        auto conn = listener_.accept();
        listener_.close();
        serve_steps(conn, k_);
      } catch (const std::exception&) {
        // The client closed the link (the normal end) or never connected.
      }
    });
    pthread_getcpuclockid(server_.native_handle(), &server_clock_);
    try {
      client_.emplace(transport_.connect({"127.0.0.1", listener_.local_port()}));
    } catch (...) {
      listener_.close();  // wakes the accept
      server_.join();
      throw;
    }
  }

  seedrl_link(const seedrl_link&) = delete;
  seedrl_link& operator=(const seedrl_link&) = delete;

  /// Shuts the link down: the server's blocked read throws and its thread ends.
  ~seedrl_link() {
    client_->close();
    listener_.close();
    server_.join();
  }

  void round_trip() {
    const std::span<const std::byte> obs(reinterpret_cast<const std::byte*>(observations_.data()),
                                         observations_.size() * sizeof(float));
    const std::size_t n = protocol::encode_step(step_frame_, obs_spec.type,
                                                {run_ids_, rewards_, dones_, truncateds_, obs});
    const std::span<const std::byte> bufs[] = {std::span<const std::byte>(step_frame_).first(n)};
    client_->write(bufs);
    std::array<std::byte, protocol::header_size> header{};
    client_->read(header);
    protocol::frame_header h{};
    if (protocol::decode_header(header, protocol::default_max_payload, h) !=
            protocol::error_code::none ||
        h.type != protocol::message_type::actions) {
      throw std::runtime_error("bench_link: the server did not answer with actions");
    }
    reply_.resize(h.payload_length);
    client_->read(reply_);
    if (protocol::parse_actions(reply_, static_cast<std::uint32_t>(k_), act_spec,
                                std::span<std::int32_t>(actions_)) != protocol::error_code::none) {
      throw std::runtime_error("bench_link: bad actions");
    }
  }

  const std::vector<std::int32_t>& actions() const noexcept { return actions_; }

  /// The server thread's CPU-time clock.
  clockid_t server_clock() const noexcept { return server_clock_; }

 private:
  std::size_t k_;
  seedrl::tcp_transport transport_;
  seedrl::tcp_listener listener_;
  std::optional<seedrl::tcp_connection> client_;
  std::thread server_;
  clockid_t server_clock_ = CLOCK_THREAD_CPUTIME_ID;
  std::vector<std::byte> step_frame_;
  std::vector<std::byte> reply_;
  std::vector<std::uint64_t> run_ids_;
  std::vector<float> rewards_;
  std::vector<std::uint8_t> dones_, truncateds_;
  std::vector<float> observations_;
  std::vector<std::int32_t> actions_;
};

// ---------------------------------------------------------------------------------------------
// The baseline: POSIX sockets, blocking read()/write() loops, no encoding

[[noreturn]] void throw_errno(const char* what) {
  throw std::system_error(errno, std::generic_category(), std::string("bench_link: ") + what);
}

/// Writes all of `data`; throws on failure.
void write_all(int fd, const std::byte* data, std::size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      throw_errno("write");
    }
    data += w;
    n -= static_cast<std::size_t>(w);
  }
}

/// Reads exactly `n` bytes; false on end of stream or failure (the peer went away).
bool read_all(int fd, std::byte* data, std::size_t n) {
  while (n > 0) {
    const ssize_t r = ::read(fd, data, n);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return false;
    data += r;
    n -= static_cast<std::size_t>(r);
  }
  return true;
}

void set_nodelay(int fd) {
  const int one = 1;
  if (::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
    throw_errno("setsockopt(TCP_NODELAY)");
}

/// Owns a descriptor.
class unique_fd {
 public:
  explicit unique_fd(int fd = -1) noexcept : fd_(fd) {}
  unique_fd(const unique_fd&) = delete;
  unique_fd& operator=(const unique_fd&) = delete;
  ~unique_fd() {
    if (fd_ >= 0)
      ::close(fd_);
  }
  int get() const noexcept { return fd_; }

 private:
  int fd_;
};

/// A ping-pong over raw sockets with the same byte counts as seedrl_link: step_bytes(k) one
/// way, reply_bytes(k) back.
class raw_link {
 public:
  explicit raw_link(std::size_t k) : request_(step_bytes(k), std::byte{1}), reply_(reply_bytes(k)) {
    if (listen_.get() < 0 || client_.get() < 0)
      throw_errno("socket");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof addr;
    if (::bind(listen_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::listen(listen_.get(), 1) != 0 ||
        ::getsockname(listen_.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      throw_errno("bind/listen");
    }
    server_ = std::thread([this] { serve(); });
    pthread_getcpuclockid(server_.native_handle(), &server_clock_);
    if (::connect(client_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      const int e = errno;
      ::shutdown(listen_.get(), SHUT_RDWR);  // wakes the accept
      server_.join();
      errno = e;
      throw_errno("connect");
    }
    set_nodelay(client_.get());
  }

  raw_link(const raw_link&) = delete;
  raw_link& operator=(const raw_link&) = delete;

  /// The server's read sees end of stream and its thread ends.
  ~raw_link() {
    ::shutdown(client_.get(), SHUT_RDWR);
    ::shutdown(listen_.get(), SHUT_RDWR);
    server_.join();
  }

  /// The server thread's CPU-time clock.
  clockid_t server_clock() const noexcept { return server_clock_; }

  void round_trip() {
    write_all(client_.get(), request_.data(), request_.size());
    if (!read_all(client_.get(), reply_.data(), reply_.size()))
      throw std::runtime_error("bench_link: the raw server went away");
  }

 private:
  void serve() noexcept {
    const unique_fd conn(::accept(listen_.get(), nullptr, nullptr));
    if (conn.get() < 0)
      return;
    try {
      set_nodelay(conn.get());
      std::vector<std::byte> in(request_.size()), out(reply_.size(), std::byte{2});
      while (read_all(conn.get(), in.data(), in.size()))
        write_all(conn.get(), out.data(), out.size());
    } catch (const std::exception&) {
      // The client reset the link: the normal end when it shuts down mid-write.
    }
  }

  unique_fd listen_{::socket(AF_INET, SOCK_STREAM, 0)};
  unique_fd client_{::socket(AF_INET, SOCK_STREAM, 0)};
  std::vector<std::byte> request_, reply_;
  std::thread server_;
  clockid_t server_clock_ = CLOCK_THREAD_CPUTIME_ID;
};

// ---------------------------------------------------------------------------------------------
// Benchmarks

template <class Link>
void warm_up(Link& link) {
  for (int i = 0; i < warmup_round_trips; ++i)
    link.round_trip();
}

/// One link alone: time per round trip, env steps per second.
template <class Link>
void BM_round_trip(benchmark::State& state) try {
  const auto k = static_cast<std::size_t>(state.range(0));
  Link link(k);
  warm_up(link);
  for (auto _ : state)
    link.round_trip();
  state.SetItemsProcessed(state.iterations() * state.range(0));
} catch (const std::exception& e) {
  // The links' destructors have closed both ends and joined the server by now.
  state.SkipWithError(e.what());
}

void BM_raw_socket(benchmark::State& state) {
  BM_round_trip<raw_link>(state);
}
void BM_seedrl_tcp(benchmark::State& state) {
  BM_round_trip<seedrl_link>(state);
}
BENCHMARK(BM_raw_socket)->Arg(1)->Arg(64)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_seedrl_tcp)->Arg(1)->Arg(64)->UseRealTime()->Unit(benchmark::kMicrosecond);

double seconds_on(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

/// Wall and CPU seconds spent on one link's round trips.
struct link_time {
  double wall = 0;
  double cpu = 0;
};

/// Runs `n` round trips on `link` and adds their wall time and the CPU time of the client (this
/// thread) and the server thread to `t`.
template <class Link>
void timed_round_trips(Link& link, int n, link_time& t) {
  using clock = std::chrono::steady_clock;
  const double cpu0 = seconds_on(CLOCK_THREAD_CPUTIME_ID) + seconds_on(link.server_clock());
  const auto t0 = clock::now();
  for (int i = 0; i < n; ++i)
    link.round_trip();
  t.wall += std::chrono::duration<double>(clock::now() - t0).count();
  t.cpu += seconds_on(CLOCK_THREAD_CPUTIME_ID) + seconds_on(link.server_clock()) - cpu0;
}

/// Both links at once, alternating blocks of round trips (and which goes first), so that the
/// ratios compare them under the same load. One iteration is a block on each.
void BM_link_paired(benchmark::State& state) try {
  constexpr int block = 16;
  const auto k = static_cast<std::size_t>(state.range(0));
  raw_link raw(k);
  seedrl_link ours(k);
  warm_up(raw);
  warm_up(ours);
  link_time raw_time, our_time;
  bool ours_first = false;
  for (auto _ : state) {
    if (ours_first)
      timed_round_trips(ours, block, our_time);
    timed_round_trips(raw, block, raw_time);
    if (!ours_first)
      timed_round_trips(ours, block, our_time);
    ours_first = !ours_first;
  }
  benchmark::DoNotOptimize(ours.actions().data());
  const double trips = static_cast<double>(state.iterations()) * block;
  const double steps = trips * static_cast<double>(k);
  state.counters["ours_us"] = our_time.wall / trips * 1e6;
  state.counters["raw_us"] = raw_time.wall / trips * 1e6;
  state.counters["time_ratio"] = our_time.wall / raw_time.wall;
  state.counters["rate_ratio"] = raw_time.wall / our_time.wall;
  state.counters["ours_steps_per_s"] = steps / our_time.wall;
  state.counters["raw_steps_per_s"] = steps / raw_time.wall;
  state.counters["ours_cpu_us"] = our_time.cpu / trips * 1e6;
  state.counters["raw_cpu_us"] = raw_time.cpu / trips * 1e6;
  state.counters["cpu_ratio"] = our_time.cpu / raw_time.cpu;
} catch (const std::exception& e) {
  state.SkipWithError(e.what());
}
BENCHMARK(BM_link_paired)->Arg(1)->Arg(64)->UseRealTime()->Unit(benchmark::kMicrosecond);

/// TLS against plain TCP, both seedrl's transport, paired as above.
void BM_tls_paired(benchmark::State& state) try {
  constexpr int block = 16;
  const auto k = static_cast<std::size_t>(state.range(0));
  seedrl_link plain(k);
  seedrl_link tls(k, true);
  warm_up(plain);
  warm_up(tls);
  link_time plain_time, tls_time;
  bool tls_first = false;
  for (auto _ : state) {
    if (tls_first)
      timed_round_trips(tls, block, tls_time);
    timed_round_trips(plain, block, plain_time);
    if (!tls_first)
      timed_round_trips(tls, block, tls_time);
    tls_first = !tls_first;
  }
  const double trips = static_cast<double>(state.iterations()) * block;
  state.counters["tls_us"] = tls_time.wall / trips * 1e6;
  state.counters["tcp_us"] = plain_time.wall / trips * 1e6;
  state.counters["tls_ratio"] = tls_time.wall / plain_time.wall;
  state.counters["tls_cpu_us"] = tls_time.cpu / trips * 1e6;
  state.counters["tcp_cpu_us"] = plain_time.cpu / trips * 1e6;
  state.counters["tls_cpu_ratio"] = tls_time.cpu / plain_time.cpu;
} catch (const std::exception& e) {
  state.SkipWithError(e.what());
}
BENCHMARK(BM_tls_paired)->Arg(1)->Arg(64)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
