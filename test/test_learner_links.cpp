// One learner, written once against the Transport concept, trains over TCP (plain and TLS 1.3),
// Unix sockets and the in-process pipes alike: actors connect, are answered, unrolls reach the
// trainer, and stop() ends everything.
#include <poll.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "learner_bad_input.hpp"
#include "seedrl/env/cartpole.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/protocol/frame.hpp"
#include "seedrl/runtime/actor.hpp"
#include "seedrl/runtime/learner.hpp"
#include "seedrl/transport/in_process.hpp"
#include "seedrl/transport/tcp.hpp"
#include "seedrl/transport/unix_socket.hpp"
#include "skip.hpp"
#include "tls_fixtures.hpp"

namespace {

using namespace std::chrono_literals;

std::string unique_suffix() {
  static std::atomic<int> counter{0};
  return std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1));
}

struct tcp_link {
  using transport_type = seedrl::tcp_transport;
  static seedrl::tcp_endpoint listen_at() { return {"127.0.0.1", 0}; }
};
struct tls_link {
  using transport_type = seedrl::test::tls_tcp_transport;
  static seedrl::tcp_endpoint listen_at() { return {"127.0.0.1", 0}; }
};
struct unix_link {
  using transport_type = seedrl::unix_transport;
  static seedrl::unix_endpoint listen_at() {
    return {
        (std::filesystem::temp_directory_path() / ("seedrl-learner-" + unique_suffix() + ".sock"))
            .string()};
  }
};
struct in_process_link {
  using transport_type = seedrl::in_process_transport;
  static seedrl::in_process_endpoint listen_at() { return {"learner-" + unique_suffix()}; }
};

/// What a raw client's read of one frame found.
enum class read_outcome { frame, closed, timeout };

/// Reads one whole frame from `c` into `h` and `payload`, waiting at most `timeout` for it to
/// start (on a socket): a learner that neither answers nor closes turns into a failed check,
/// not a hang.
template <class C>
read_outcome read_frame_within(C& c, std::chrono::milliseconds timeout,
                               seedrl::protocol::frame_header& h, std::vector<std::byte>& payload) {
  if constexpr (requires { c.native_handle(); }) {
    // A TLS link may hold a frame it decrypted already: the socket has nothing more then.
    const bool buffered =
        c.native_tls_handle() != nullptr && SSL_pending(c.native_tls_handle()) > 0;
    pollfd p{c.native_handle(), POLLIN, 0};
    if (!buffered && ::poll(&p, 1, static_cast<int>(timeout.count())) <= 0)
      return read_outcome::timeout;
  }  // else (in-process pipes) a blocking read: the learner under test answers or closes
  try {
    std::array<std::byte, seedrl::protocol::header_size> header{};
    c.read(header);
    if (seedrl::protocol::decode_header(header, seedrl::protocol::default_max_payload, h) !=
        seedrl::protocol::error_code::none)
      return read_outcome::closed;
    payload.resize(h.payload_length);
    if (h.payload_length > 0)
      c.read(payload);
    return read_outcome::frame;
  } catch (const seedrl::transport_error&) {
    return read_outcome::closed;
  }
}

/// Says hello for `num_envs` cartpole envs; true once the welcome came back.
template <class C>
bool handshake(C& c, std::uint32_t num_envs, const std::string& name) {
  std::vector<std::byte> hello;
  seedrl::protocol::encode_hello(
      {1, num_envs, seedrl::cartpole::observation_spec(), seedrl::cartpole::action_spec(), name},
      hello);
  const std::span<const std::byte> bufs[] = {hello};
  c.write(bufs);
  seedrl::protocol::frame_header h{};
  std::vector<std::byte> payload;
  return read_frame_within(c, 5s, h, payload) == read_outcome::frame &&
         h.type == seedrl::protocol::message_type::welcome;
}

/// A whole step frame for `num_envs` cartpole envs (zero observations, no episode ends).
std::vector<std::byte> cartpole_step_frame(std::size_t num_envs) {
  const std::size_t obs_bytes = seedrl::cartpole::observation_spec().num_bytes();
  const std::vector<std::uint64_t> run_ids(num_envs, 7);
  const std::vector<float> rewards(num_envs, 1.0f);
  const std::vector<std::uint8_t> flags(num_envs, 0);
  const std::vector<std::byte> observations(num_envs * obs_bytes, std::byte{0});
  std::vector<std::byte> frame(seedrl::protocol::step_frame_size(num_envs, obs_bytes));
  seedrl::protocol::encode_step(frame, seedrl::dtype::float32,
                                {run_ids, rewards, flags, flags, observations});
  return frame;
}

/// One lock-step round trip of a well-behaved raw actor: true when actions came back.
template <class C>
bool step_and_read_actions(C& c, const std::vector<std::byte>& step) {
  const std::span<const std::byte> bufs[] = {step};
  c.write(bufs);
  seedrl::protocol::frame_header h{};
  std::vector<std::byte> payload;
  return read_frame_within(c, 5s, h, payload) == read_outcome::frame &&
         h.type == seedrl::protocol::message_type::actions;
}

}  // namespace

TEMPLATE_TEST_CASE("the learner trains with actors over each transport", "[learner][links]",
                   tcp_link, tls_link, unix_link, in_process_link) {
  using transport_t = typename TestType::transport_type;
  using net_t = seedrl::mlp_lstm_agent<float>;
  using learner_t = seedrl::learner<net_t, seedrl::adam<float>, transport_t>;
  seedrl::mlp_lstm_agent_config nc;
  nc.hidden_sizes = {16};
  nc.lstm_size = 16;
  seedrl::learner_config lc;
  lc.unroll_length = 5;
  lc.batch_size = 4;
  lc.batching.max_batch = 8;
  lc.batching.deadline = 1ms;
  lc.batching.max_request_rows = 8;
  learner_t learner(lc, net_t(nc), seedrl::adam<float>(), seedrl::impala_loss<float>(),
                    seedrl::cartpole::observation_spec(), seedrl::cartpole::action_spec());
  transport_t transport;
  auto listener = transport.listen(TestType::listen_at());
  const auto endpoint = listener.local_endpoint();
  learner.start();
  learner.serve(std::move(listener));

  std::atomic<bool> stop{false};
  std::vector<std::thread> actors;
  for (int i = 0; i < 2; ++i) {
    actors.emplace_back([&, i] {
      seedrl::actor_config ac;
      ac.num_envs = 3;
      ac.seed = static_cast<std::uint64_t>(i) + 1;
      seedrl::actor<seedrl::cartpole, std::function<typename transport_t::connection_type()>> a(
          ac, [](std::size_t) { return seedrl::cartpole{}; },
          [&] { return transport.connect(endpoint); });
      a.run(stop);
    });
  }
  const auto until = std::chrono::steady_clock::now() + 20s;
  while (std::chrono::steady_clock::now() < until &&
         (learner.stats().train_steps < 5 || learner.stats().connected_actors < 2))
    std::this_thread::sleep_for(1ms);
  const auto s = learner.stats();
  CHECK(s.connected_actors == 2);
  CHECK(s.train_steps >= 5);
  // Every unroll holds T steps of 6 envs; 5 training steps of 4 unrolls need >= 100 frames.
  CHECK(s.frames >= 100);
  CHECK(learner.parameter_version() > 1);
  stop = true;
  for (auto& t : actors)
    t.join();
  learner.stop();
  CHECK(learner.stats().connected_actors == 0);
}

TEST_CASE("a thousand idle actor connections are held while one actor is served without stalls",
          "[learner][links][many]") {
  constexpr std::size_t idle = 1000;
  // Both ends of every connection live in this process: about 2 descriptors per link.
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  if (limit.rlim_cur < 2 * idle + 64) {
    limit.rlim_cur = std::min<rlim_t>(limit.rlim_max, 2 * idle + 256);
    ::setrlimit(RLIMIT_NOFILE, &limit);
    ::getrlimit(RLIMIT_NOFILE, &limit);
  }
  if (limit.rlim_cur < 2 * idle + 64) {
    SEEDRL_SKIP_TEST("this process may open only " << limit.rlim_cur << " files");
  }
  using net_t = seedrl::mlp_lstm_agent<float>;
  using learner_t = seedrl::learner<net_t, seedrl::adam<float>, seedrl::tcp_transport>;
  seedrl::mlp_lstm_agent_config nc;
  nc.hidden_sizes = {16};
  nc.lstm_size = 0;
  seedrl::learner_config lc;
  lc.max_envs = idle + 8;
  lc.max_connections = idle + 8;
  lc.unroll_length = 5;
  lc.batch_size = 4;
  lc.batching.max_batch = 64;
  lc.batching.deadline = 1ms;
  learner_t learner(lc, net_t(nc), seedrl::adam<float>(), seedrl::impala_loss<float>(),
                    seedrl::cartpole::observation_spec(), seedrl::cartpole::action_spec());
  seedrl::tcp_transport transport;
  auto listener = transport.listen({"127.0.0.1", 0});
  const auto endpoint = listener.local_endpoint();
  learner.start();
  learner.serve(std::move(listener));

  // Connections that say hello and then never step.
  std::vector<seedrl::tcp_connection> held;
  held.reserve(idle);
  std::vector<std::byte> hello;
  seedrl::protocol::encode_hello(
      {1, 1, seedrl::cartpole::observation_spec(), seedrl::cartpole::action_spec(), "idle"}, hello);
  std::array<std::byte, seedrl::protocol::header_size + 16> welcome{};
  for (std::size_t i = 0; i < idle; ++i) {
    held.push_back(transport.connect(endpoint));
    const std::span<const std::byte> bufs[] = {hello};
    held.back().write(bufs);
    held.back().read(welcome);
  }
  CHECK(learner.stats().connected_actors == idle);

  // One real actor: with a thousand silent envs "everyone is waiting" never holds, so only the
  // deadline flushes its batches. It must keep stepping, a batch every ~1 ms.
  std::atomic<bool> stop{false};
  std::thread actor_thread([&] {
    seedrl::actor_config ac;
    ac.num_envs = 1;
    seedrl::actor<seedrl::cartpole, std::function<seedrl::tcp_connection()>> a(
        ac, [](std::size_t) { return seedrl::cartpole{}; },
        [&] { return transport.connect(endpoint); });
    a.run(stop);
  });
  const auto until = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < until && learner.stats().frames < 300)
    std::this_thread::sleep_for(5ms);
  CHECK(learner.stats().frames >= 300);
  CHECK(learner.stats().connected_actors == idle + 1);
  stop = true;
  actor_thread.join();
  learner.stop();
  CHECK(learner.stats().connected_actors == 0);
}

/// Threads of this process now (/proc/self/task).
std::size_t thread_count() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/task"))
    ++n;
  return n;
}

TEST_CASE(
    "a thousand silent connections, before and after their handshake, hold no thread each "
    "while one actor trains",
    "[learner][links][many][threads]") {
  constexpr std::size_t silent = 1000;  // half say nothing at all, half stop after hello
  constexpr std::size_t io_threads = 2;
  // Both ends of every link live in this process: 2 descriptors each, and some to spare.
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
    ::getrlimit(RLIMIT_NOFILE, &limit);
  }
  if (limit.rlim_cur < 2 * silent + 256) {
    SEEDRL_SKIP_TEST("this process may open only " << limit.rlim_cur << " files, the test needs "
                                                   << 2 * silent + 256);
  }
  const std::size_t threads_before = thread_count();
  using net_t = seedrl::mlp_lstm_agent<float>;
  using learner_t = seedrl::learner<net_t, seedrl::adam<float>, seedrl::tcp_transport>;
  seedrl::mlp_lstm_agent_config nc;
  nc.hidden_sizes = {16};
  nc.lstm_size = 0;
  seedrl::learner_config lc;
  lc.max_envs = silent + 8;
  lc.max_connections = silent + 8;
  lc.io_threads = io_threads;
  lc.handshake_timeout = 60s;  // the silent peers stay for the whole test
  lc.unroll_length = 5;
  lc.batch_size = 4;
  lc.batching.max_batch = 64;
  lc.batching.deadline = 1ms;
  learner_t learner(lc, net_t(nc), seedrl::adam<float>(), seedrl::impala_loss<float>(),
                    seedrl::cartpole::observation_spec(), seedrl::cartpole::action_spec());
  seedrl::tcp_transport transport;
  auto listener = transport.listen({"127.0.0.1", 0});
  const auto endpoint = listener.local_endpoint();
  learner.start();
  learner.serve(std::move(listener));

  std::vector<seedrl::tcp_connection> held;
  held.reserve(silent);
  std::vector<std::byte> hello;
  seedrl::protocol::encode_hello(
      {1, 1, seedrl::cartpole::observation_spec(), seedrl::cartpole::action_spec(), "silent"},
      hello);
  for (std::size_t i = 0; i < silent; ++i) {
    held.push_back(transport.connect(endpoint));
    if (i % 2 == 1) {
      REQUIRE(handshake(held.back(), 1, "silent"));
    }
  }
  auto until = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < until && learner.held_connections() < silent)
    std::this_thread::sleep_for(1ms);
  REQUIRE(learner.held_connections() == silent);
  CHECK(learner.stats().connected_actors == silent / 2);

  std::atomic<bool> stop{false};
  std::thread actor_thread([&] {
    seedrl::actor_config ac;
    ac.num_envs = 1;
    seedrl::actor<seedrl::cartpole, std::function<seedrl::tcp_connection()>> a(
        ac, [](std::size_t) { return seedrl::cartpole{}; },
        [&] { return transport.connect(endpoint); });
    a.run(stop);
  });
  // CartPole's random-ish episodes last tens of steps: 10 of them need a few hundred answers.
  until = std::chrono::steady_clock::now() + 8s;
  std::size_t threads_during = 0;
  while (std::chrono::steady_clock::now() < until && learner.stats().episodes < 10) {
    threads_during = std::max(threads_during, thread_count());
    std::this_thread::sleep_for(5ms);
  }
  const auto s = learner.stats();
  CHECK(s.episodes >= 10);
  CHECK(s.frames >= 100);
  CHECK(s.connected_actors == silent / 2 + 1);
  CHECK(learner.held_connections() == silent + 1);
  // The learner's own threads: inference, trainer, watchdog, one accept thread per listener
  // and the I/O pool; plus this test's actor thread. One thread per connection would be 1,000.
  INFO("threads before the learner: " << threads_before << ", while serving: " << threads_during);
  CHECK(threads_during >= threads_before + io_threads);
  CHECK(threads_during <= threads_before + io_threads + 8);
  // Every silent connection still holds: the learner neither wrote to nor closed any of them.
  std::size_t quiet = 0;
  for (auto& c : held) {
    pollfd p{c.native_handle(), POLLIN, 0};
    quiet += ::poll(&p, 1, 0) == 0 ? 1 : 0;
  }
  CHECK(quiet == silent);
  stop = true;
  actor_thread.join();
  learner.stop();
  CHECK(learner.stats().connected_actors == 0);
  // Silent peers, before and after their handshake, are told that the learner stops.
  for (std::size_t i : {std::size_t{0}, std::size_t{1}}) {
    seedrl::protocol::frame_header h{};
    std::vector<std::byte> payload;
    REQUIRE(read_frame_within(held[i], 2s, h, payload) == read_outcome::frame);
    CHECK(h.type == seedrl::protocol::message_type::close);
    seedrl::protocol::status_message m;
    REQUIRE(seedrl::protocol::decode_status(payload, m) == seedrl::protocol::error_code::none);
    CHECK(m.code == seedrl::protocol::error_code::shutting_down);
  }
}

TEST_CASE("a second step sent before the first one's actions closes only that actor",
          "[learner][links][in_flight]") {
  // docs/protocol.md: one step in flight per actor; a second one before its actions is
  // unexpected_message. Accepting it would race on the connection's state with the inference
  // thread and put the same env slots twice into one batch.
  using net_t = seedrl::mlp_lstm_agent<float>;
  using learner_t = seedrl::learner<net_t, seedrl::adam<float>, seedrl::tcp_transport>;
  seedrl::mlp_lstm_agent_config nc;
  nc.hidden_sizes = {16};
  nc.lstm_size = 16;
  seedrl::learner_config lc;
  lc.unroll_length = 5;
  lc.batch_size = 4;
  lc.batching.max_batch = 64;
  // While the good actor is not waiting, "every env is waiting" cannot hold, so the pipelining
  // actor's first step waits this long in its batch: its second step surely arrives first.
  lc.batching.deadline = 500ms;
  lc.batching.max_request_rows = 8;
  learner_t learner(lc, net_t(nc), seedrl::adam<float>(), seedrl::impala_loss<float>(),
                    seedrl::cartpole::observation_spec(), seedrl::cartpole::action_spec());
  seedrl::tcp_transport transport;
  auto listener = transport.listen({"127.0.0.1", 0});
  const auto endpoint = listener.local_endpoint();
  learner.start();
  learner.serve(std::move(listener));

  auto good = transport.connect(endpoint);
  REQUIRE(handshake(good, 2, "good"));
  const auto good_step = cartpole_step_frame(2);
  REQUIRE(step_and_read_actions(good, good_step));

  auto bad = transport.connect(endpoint);
  REQUIRE(handshake(bad, 1, "pipelining"));
  const auto bad_step = cartpole_step_frame(1);
  {
    const std::span<const std::byte> bufs[] = {bad_step, bad_step};  // two steps, no read between
    bad.write(bufs);
  }
  // The first step's actions may come before the error or not at all; then the link ends.
  int actions = 0, errors = 0;
  seedrl::protocol::status_message error;
  read_outcome last = read_outcome::frame;
  for (int i = 0; i < 4 && last == read_outcome::frame; ++i) {
    seedrl::protocol::frame_header h{};
    std::vector<std::byte> payload;
    last = read_frame_within(bad, 3s, h, payload);
    if (last != read_outcome::frame)
      break;
    if (h.type == seedrl::protocol::message_type::actions) {
      ++actions;
    } else if (h.type == seedrl::protocol::message_type::error) {
      ++errors;
      REQUIRE(seedrl::protocol::decode_status(payload, error) ==
              seedrl::protocol::error_code::none);
    } else {
      FAIL("unexpected " << seedrl::protocol::to_string(h.type) << " frame");
    }
  }
  CHECK(errors == 1);
  CHECK(error.code == seedrl::protocol::error_code::unexpected_message);
  CHECK_THAT(error.message, Catch::Contains("one request in flight per actor"));
  CHECK(actions <= 1);
  CHECK(last == read_outcome::closed);

  // The other actor is still served, during and after the pipelining actor's cleanup.
  for (int i = 0; i < 20; ++i)
    REQUIRE(step_and_read_actions(good, good_step));
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < until && learner.stats().connected_actors != 1)
    std::this_thread::sleep_for(5ms);
  CHECK(learner.stats().connected_actors == 1);
  for (int i = 0; i < 5; ++i)
    REQUIRE(step_and_read_actions(good, good_step));
  learner.stop();
  CHECK(learner.stats().connected_actors == 0);
}

TEMPLATE_TEST_CASE("replies larger than the socket buffer arrive whole and in order",
                   "[learner][links][replies]", tcp_link, unix_link) {
  // The inference thread sends a reply itself when the socket is free (direct_replies); what
  // the kernel does not take at once goes to the I/O thread, which writes the rest. 2^16 envs
  // make a 256 KiB actions frame, more than a Unix socket's 208 KiB send buffer, so part of it
  // takes that path. Frames that lost or doubled bytes would not parse, and the next round trip
  // would read from the middle of one. Both settings run: without, every reply goes through
  // the I/O thread.
  const bool direct = GENERATE(true, false);
  CAPTURE(direct);
  using transport_t = typename TestType::transport_type;
  using net_t = seedrl::mlp_lstm_agent<float>;
  using learner_t = seedrl::learner<net_t, seedrl::adam<float>, transport_t>;
  constexpr std::uint32_t num_envs = 1u << 16;
  seedrl::mlp_lstm_agent_config nc;
  nc.hidden_sizes = {4};
  nc.lstm_size = 0;
  seedrl::learner_config lc;
  lc.direct_replies = direct;
  lc.unroll_length = 20;  // no unroll completes in the round trips below: the trainer idles
  lc.max_envs = num_envs;
  lc.batching.max_batch = num_envs;
  lc.batching.max_request_rows = num_envs;
  learner_t learner(lc, net_t(nc), seedrl::adam<float>(), seedrl::impala_loss<float>(),
                    seedrl::cartpole::observation_spec(), seedrl::cartpole::action_spec());
  transport_t transport;
  auto listener = transport.listen(TestType::listen_at());
  const auto endpoint = listener.local_endpoint();
  learner.start();
  learner.serve(std::move(listener));

  auto c = transport.connect(endpoint);
  REQUIRE(handshake(c, num_envs, "large"));
  const auto step = cartpole_step_frame(num_envs);
  std::vector<std::int32_t> actions(num_envs);
  for (int i = 0; i < 3; ++i) {
    const std::span<const std::byte> bufs[] = {step};
    c.write(bufs);
    seedrl::protocol::frame_header h{};
    std::vector<std::byte> payload;
    REQUIRE(read_frame_within(c, 10s, h, payload) == read_outcome::frame);
    REQUIRE(h.type == seedrl::protocol::message_type::actions);
    std::string why;
    CHECK(seedrl::protocol::parse_actions(payload, num_envs, seedrl::cartpole::action_spec(),
                                          actions, &why) == seedrl::protocol::error_code::none);
    CHECK(why.empty());
  }
  CHECK(learner.stats().connected_actors == 1);
  learner.stop();
}

namespace {

/// Sends `c` cartpole steps for `num_envs` envs without ever reading the replies, each once the
/// learner answered the one before (its frame count grew), until a write fails or a step goes
/// unanswered for 10 s (the cut-off), at most `max_steps`; then waits up to 10 s for
/// `connected_after` actors to remain. Returns how many steps were answered.
template <class Learner, class C>
std::int64_t step_without_reading(Learner& learner, C& c, std::size_t num_envs, int max_steps,
                                  std::size_t connected_after) {
  const auto step = cartpole_step_frame(num_envs);
  const std::span<const std::byte> bufs[] = {step};
  const auto frames = [&] { return static_cast<std::size_t>(learner.stats().frames); };
  const std::size_t connected_before = learner.stats().connected_actors;
  std::int64_t answered = 0;
  for (int i = 0; i < max_steps; ++i) {
    try {
      c.write(bufs);
    } catch (const seedrl::transport_error&) {
      break;  // cut off
    }
    const std::size_t want = static_cast<std::size_t>(answered + 1) * num_envs;
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < until && frames() < want &&
           learner.stats().connected_actors == connected_before)
      std::this_thread::sleep_for(1ms);
    if (frames() < want)
      break;  // not answered: cut off (or stuck, which the caller's checks catch)
    ++answered;
  }
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < until &&
         learner.stats().connected_actors != connected_after)
    std::this_thread::sleep_for(1ms);
  return answered;
}

/// The learner of the cut-off tests: a tiny MLP whose unrolls never complete before the
/// cut-off (the trainer idles), batches as large as one actor's step, every log line kept.
struct cut_off_setup {
  template <class Tr>
  using learner_type = seedrl::learner<seedrl::mlp_lstm_agent<float>, seedrl::adam<float>, Tr>;

  cut_off_setup(std::size_t num_envs, std::size_t max_envs) {
    net.hidden_sizes = {4};
    net.lstm_size = 0;
    config.unroll_length = 200;
    config.max_envs = max_envs;
    config.batching.max_batch = num_envs;
    config.batching.max_request_rows = num_envs;
    config.log = [this](const std::string& line) {
      std::lock_guard lock(mutex);
      lines.push_back(line);
    };
  }
  cut_off_setup(const cut_off_setup&) = delete;

  template <class Tr>
  learner_type<Tr> make_learner() const {
    return learner_type<Tr>(config, seedrl::mlp_lstm_agent<float>(net), seedrl::adam<float>(),
                            seedrl::impala_loss<float>(), seedrl::cartpole::observation_spec(),
                            seedrl::cartpole::action_spec());
  }

  /// Whether a line holding both `a` and `b` was logged.
  bool logged(const std::string& a, const std::string& b = {}) {
    std::lock_guard lock(mutex);
    return std::any_of(lines.begin(), lines.end(), [&](const std::string& line) {
      return line.find(a) != std::string::npos && line.find(b) != std::string::npos;
    });
  }

  seedrl::mlp_lstm_agent_config net;
  seedrl::learner_config config;
  std::mutex mutex;
  std::vector<std::string> lines;
};

}  // namespace

TEST_CASE("an actor that steps without reading its actions is cut off once 4 MiB of them wait",
          "[learner][links][replies]") {
  // Hostile input: an actor may step again before reading its actions, so one that never
  // reads would grow the learner's queue of unsent replies without bound. Each step here is
  // sent only once the previous one was answered (learner_stats::frames), as a well-behaved
  // actor would, but nothing is read. 2^14 envs make 64 KiB replies: a Unix socket's send
  // buffer takes about three, and the queue's 4 MiB about 64 more. With direct replies, the
  // inference thread's sends find the buffer full, so the queue grows behind a write that
  // never completes; it must be cut off all the same.
  const bool direct = GENERATE(true, false);
  CAPTURE(direct);
  using transport_t = seedrl::unix_transport;
  constexpr std::uint32_t num_envs = 1u << 14;
  cut_off_setup setup(num_envs, num_envs);
  setup.config.direct_replies = direct;
  cut_off_setup::learner_type<transport_t> learner = setup.make_learner<transport_t>();
  transport_t transport;
  auto listener = transport.listen(unix_link::listen_at());
  const auto endpoint = listener.local_endpoint();
  learner.start();
  learner.serve(std::move(listener));

  auto c = transport.connect(endpoint);
  REQUIRE(handshake(c, num_envs, "deaf"));
  const std::int64_t answered = step_without_reading(learner, c, num_envs, 400, 0);
  CHECK(learner.stats().connected_actors == 0);
  // At least the queue's worth was answered first: 4 MiB of 64 KiB replies.
  CHECK(answered >= 64);
  CHECK(answered < 400);
  CHECK(setup.logged("bytes of replies unread"));
  learner.stop();
}

TEST_CASE(
    "an in-process actor that steps without reading its actions is cut off, and stop() "
    "returns",
    "[learner][links]") {
  // The in-process pipes block a writer once they are full. The learner's inference thread
  // answers from there, so an actor that never reads used to stall every actor's inference
  // and make stop() wait forever; it is cut off once its reply no longer fits, as on sockets.
  using transport_t = seedrl::in_process_transport;
  constexpr std::uint32_t num_envs = 1024;  // replies of 4 KiB: a 64 KiB pipe holds 15
  cut_off_setup setup(num_envs, 2 * num_envs);
  cut_off_setup::learner_type<transport_t> learner = setup.make_learner<transport_t>();
  transport_t transport(64 * 1024);
  auto listener = transport.listen(in_process_link::listen_at());
  const auto endpoint = listener.local_endpoint();
  learner.start();
  learner.serve(std::move(listener));

  auto deaf = transport.connect(endpoint);
  REQUIRE(handshake(deaf, num_envs, "deaf"));
  auto good = transport.connect(endpoint);
  REQUIRE(handshake(good, num_envs, "good"));
  const std::int64_t answered = step_without_reading(learner, deaf, num_envs, 100, 1);
  CHECK(learner.stats().connected_actors == 1);
  CHECK(answered >= 14);  // the pipe's worth was answered first
  CHECK(answered < 100);
  CHECK(setup.logged("(deaf): it leaves", "bytes of replies unread"));
  // The other actor is still served: its step is answered.
  const auto step = cartpole_step_frame(num_envs);
  const std::span<const std::byte> step_bufs[] = {step};
  good.write(step_bufs);
  seedrl::protocol::frame_header h{};
  std::vector<std::byte> actions;
  REQUIRE(read_frame_within(good, 5s, h, actions) == read_outcome::frame);
  CHECK(h.type == seedrl::protocol::message_type::actions);
  learner.stop();  // returns: nothing waits for the deaf actor
  CHECK(learner.stats().connected_actors == 0);
}

// The bad-input checks of test_learner.cpp (learner_bad_input.hpp) on the socket transports,
// whose connections the I/O pool serves: whole frames, then every frame a few bytes at a time
// (the parser waits for the rest of a header or payload across reads).
TEMPLATE_TEST_CASE("the I/O pool refuses malformed frames and keeps serving other actors",
                   "[learner][links][bad_input]", tcp_link, tls_link, unix_link) {
  seedrl_test::served_learner<typename TestType::transport_type> s(TestType::listen_at());
  SECTION("whole frames") {
    seedrl_test::check_malformed_frames_are_refused(s);
  }
  SECTION("three bytes at a time") {
    seedrl_test::check_malformed_frames_are_refused(s, 3);
  }
}

TEMPLATE_TEST_CASE(
    "the I/O pool refuses a silent peer after the handshake timeout and holds "
    "the connection limit",
    "[learner][links][bad_input]", tcp_link, unix_link) {
  seedrl_test::check_handshake_timeout_and_connection_limit<typename TestType::transport_type>(
      TestType::listen_at());
}

TEMPLATE_TEST_CASE("the I/O pool runs the challenge-response: only the right secret is served",
                   "[learner][links][auth]", tcp_link, tls_link, unix_link) {
  seedrl_test::check_authentication<typename TestType::transport_type>(TestType::listen_at());
}

TEST_CASE(
    "a TLS learner refuses actors without a certificate its CA signed, logs them once a minute "
    "and keeps serving the others",
    "[learner][links][tls]") {
  std::mutex log_mutex;
  std::vector<std::string> log;
  seedrl_test::served_learner<seedrl::test::tls_tcp_transport> s({"127.0.0.1", 0},
                                                                 [&](const std::string& line) {
                                                                   std::lock_guard lock(log_mutex);
                                                                   log.push_back(line);
                                                                 });
  REQUIRE(s.still_served());
  // Another CA's certificate, then no TLS at all, twice each from the same address.
  seedrl::tcp_transport rogue(seedrl::test::tls_fixture("rogue"));
  seedrl::tcp_transport plain;
  for (seedrl::tcp_transport* t : {&rogue, &rogue, &plain, &plain}) {
    bool refused = false;
    try {
      auto c = t->connect(s.endpoint);  // TLS 1.3: the client's side completes first
      const auto hello = seedrl_test::cartpole_hello();
      const std::span<const std::byte> bufs[] = {hello};
      c.write(bufs);
      seedrl::protocol::frame_header h{};
      std::vector<std::byte> payload;
      refused = read_frame_within(c, 5s, h, payload) == read_outcome::closed;
    } catch (const seedrl::transport_error&) {
      refused = true;
    }
    CHECK(refused);
  }
  const auto until = std::chrono::steady_clock::now() + 5s;
  while (s.learner->stats().rejected_connections < 4 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(1ms);
  CHECK(s.learner->stats().rejected_connections == 4);
  CHECK(s.still_served());
  std::lock_guard lock(log_mutex);
  std::size_t refusals = 0;
  for (const auto& line : log) {
    if (line.find("refusing 127.0.0.1:") != std::string::npos) {
      ++refusals;
      CHECK(line.find("TLS handshake failed") != std::string::npos);
    }
  }
  CHECK(refusals == 1);  // one line per address a minute
}
