// The transports. The learner is written against the Transport concept only, so the same
// checks run on TCP, TCP with TLS 1.3, Unix sockets and the in-process pipes
// (TEMPLATE_TEST_CASE over one "case" type each); what a transport adds of its own follows. Catch2
// is not thread-safe: worker threads hand their results back through futures and only the main
// thread asserts.

// GCC 12 warns under -fsanitize=thread that TSan does not model the std::atomic_thread_fence in
// Asio's std_fenced_block, which any Asio socket instantiates. Asio only fences around handler
// invocation on a running io_context, which blocking sockets never do, so the warning says
// nothing about this code; it must be off before <atomic> is first included. (A tsan build of
// other code that uses seedrl::asio needs -Wno-tsan likewise.)
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#pragma GCC diagnostic ignored "-Wtsan"
#endif

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "seedrl/distributed/tcp_bootstrap.hpp"
#include "seedrl/transport/in_process.hpp"
#include "seedrl/transport/tcp.hpp"
#include "seedrl/transport/transport.hpp"
#include "seedrl/transport/transport_error.hpp"
#include "seedrl/transport/unix_socket.hpp"
#include "tls_fixtures.hpp"

static_assert(seedrl::Transport<seedrl::tcp_transport>);
static_assert(seedrl::Transport<seedrl::unix_transport>);
static_assert(seedrl::Transport<seedrl::in_process_transport>);

namespace {

using namespace std::chrono_literals;
using seedrl::transport_error;
using seedrl::transport_failure;

// How long a call that close() should unblock may take to return. Generous: the point is
// "returns at all", and sanitizer builds are slow.
constexpr auto unblock_limit = 1s;

// Names that no other test, or another test process run by ctest in parallel, uses.
std::string unique_name() {
  static std::atomic<int> counter{0};
  return std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1));
}

// --- one case per transport: how to make endpoints for it ------------------------------------

struct tcp_case {
  using transport_type = seedrl::tcp_transport;
  static constexpr const char* peer_prefix = "127.0.0.1:";
  static seedrl::tcp_endpoint fresh_endpoint() { return {"127.0.0.1", 0}; }
  // An endpoint nobody listens on, and what an error about it must name: a port that was just
  // free (another process taking it in between is vanishingly unlikely).
  static std::pair<seedrl::tcp_endpoint, std::string> dead_endpoint(transport_type& transport) {
    const std::uint16_t port = transport.listen(fresh_endpoint()).local_port();
    return {{"127.0.0.1", port}, "127.0.0.1:" + std::to_string(port)};
  }
};

struct tls_case {
  using transport_type = seedrl::test::tls_tcp_transport;
  static constexpr const char* peer_prefix = "127.0.0.1:";
  static seedrl::tcp_endpoint fresh_endpoint() { return tcp_case::fresh_endpoint(); }
  static std::pair<seedrl::tcp_endpoint, std::string> dead_endpoint(transport_type& transport) {
    return tcp_case::dead_endpoint(transport);
  }
};

struct unix_case {
  using transport_type = seedrl::unix_transport;
  static constexpr const char* peer_prefix = "unix:";
  static seedrl::unix_endpoint fresh_endpoint() {
    return {
        (std::filesystem::temp_directory_path() / ("seedrl-" + unique_name() + ".sock")).string()};
  }
  static std::pair<seedrl::unix_endpoint, std::string> dead_endpoint(transport_type&) {
    auto endpoint = fresh_endpoint();
    return {endpoint, endpoint.path};
  }
};

struct in_process_case {
  using transport_type = seedrl::in_process_transport;
  static constexpr const char* peer_prefix = "inproc:";
  static seedrl::in_process_endpoint fresh_endpoint() { return {"test-" + unique_name()}; }
  static std::pair<seedrl::in_process_endpoint, std::string> dead_endpoint(transport_type&) {
    auto endpoint = fresh_endpoint();
    return {endpoint, endpoint.name};
  }
};

// Connects a client and accepts it, the accepting side on another thread: a TLS client's
// connect() runs the handshake, which needs the server's side running. Returns {client, server}.
template <class Transport, class Listener>
auto connect_and_accept(Transport& transport, Listener& listener) {
  auto accepted = std::async(std::launch::async, [&listener] {
    auto c = listener.accept();
    if constexpr (requires { c.handshake(); })
      c.handshake();
    return c;
  });
  try {
    auto client = transport.connect(listener.local_endpoint());
    return std::pair{std::move(client), accepted.get()};
  } catch (...) {
    listener.close();  // or the accepting thread would wait forever
    throw;
  }
}

// A listener and one connected pair.
template <class Case>
struct connected_pair {
  using transport_type = typename Case::transport_type;
  using connection_type = typename transport_type::connection_type;
  transport_type transport;
  typename transport_type::listener_type listener = transport.listen(Case::fresh_endpoint());
  std::pair<connection_type, connection_type> both = connect_and_accept(transport, listener);
  connection_type& client = both.first;
  connection_type& server = both.second;
};

// Runs `f` on scope exit: closes connections before the futures that use them are destroyed
// (a future from std::async joins its thread), so a failing check cannot hang the test.
class scope_exit {
 public:
  explicit scope_exit(std::function<void()> f) : f_(std::move(f)) {}
  scope_exit(const scope_exit&) = delete;
  scope_exit& operator=(const scope_exit&) = delete;
  ~scope_exit() { f_(); }

 private:
  std::function<void()> f_;
};

template <class F>
std::optional<transport_error> error_of(F&& f) {
  try {
    std::forward<F>(f)();
  } catch (const transport_error& e) {
    return e;
  }
  return std::nullopt;
}

// The message of whatever `f` throws, or nullopt.
template <class F>
std::optional<std::string> error_of_any(F&& f) {
  try {
    std::forward<F>(f)();
  } catch (const std::exception& e) {
    return std::string(e.what());
  }
  return std::nullopt;
}

std::vector<std::byte> pattern(std::size_t size, unsigned seed) {
  std::vector<std::byte> bytes(size);
  for (std::size_t i = 0; i < size; ++i) {
    bytes[i] = static_cast<std::byte>((i * 131 + seed * 7 + (i >> 8)) & 0xff);
  }
  return bytes;
}

// A test frame: an 8-byte length, then the payload in two parts: three buffers, one write.
template <class C>
void write_frame(C& connection, std::span<const std::byte> payload) {
  const std::uint64_t size = payload.size();
  const std::size_t half = payload.size() / 2;
  const std::span<const std::byte> parts[] = {std::as_bytes(std::span(&size, 1)),
                                              payload.first(half), payload.subspan(half)};
  connection.write(parts);
}

template <class C>
std::vector<std::byte> read_frame(C& connection) {
  std::uint64_t size = 0;
  connection.read(std::as_writable_bytes(std::span(&size, 1)));
  std::vector<std::byte> payload(size);
  connection.read(payload);
  return payload;
}

template <class C>
void write_value(C& connection, std::uint64_t value) {
  const std::span<const std::byte> parts[] = {std::as_bytes(std::span(&value, 1))};
  connection.write(parts);
}

template <class C>
std::uint64_t read_value(C& connection) {
  std::uint64_t value = 0;
  connection.read(std::as_writable_bytes(std::span(&value, 1)));
  return value;
}

// Echoes frames until the peer closes; returns how many it echoed.
template <class C>
std::size_t echo_until_eof(C& connection) {
  std::size_t frames = 0;
  try {
    for (;;) {
      const auto payload = read_frame(connection);
      write_frame(connection, payload);
      ++frames;
    }
  } catch (const transport_error& e) {
    if (e.failure() != transport_failure::peer_closed) {
      throw;
    }
  }
  return frames;
}

}  // namespace

#define SEEDRL_TRANSPORT_CASES tcp_case, tls_case, unix_case, in_process_case

TEMPLATE_TEST_CASE("a connect is accepted and both ends are open and named", "[transport]",
                   SEEDRL_TRANSPORT_CASES) {
  connected_pair<TestType> l;
  CHECK(l.listener.is_open());
  CHECK(l.client.is_open());
  CHECK(l.server.is_open());
  CHECK_THAT(l.client.peer(), Catch::StartsWith(TestType::peer_prefix));
  CHECK_THAT(l.server.peer(), Catch::StartsWith(TestType::peer_prefix));
  write_value(l.client, 41);
  CHECK(read_value(l.server) == 41);
  write_value(l.server, 42);
  CHECK(read_value(l.client) == 42);
}

TEMPLATE_TEST_CASE("frames of several sizes up to 1 MiB echo intact through gather writes",
                   "[transport]", SEEDRL_TRANSPORT_CASES) {
  connected_pair<TestType> l;
  auto echoed = std::async(std::launch::async, [&] { return echo_until_eof(l.server); });
  scope_exit unblock([&] {
    l.client.close();
    l.server.close();
  });
  const std::vector<std::size_t> sizes = {0, 1, 3, 1000, 65536 + 7, 1 << 20};
  for (const std::size_t size : sizes) {
    const auto sent = pattern(size, static_cast<unsigned>(size));
    write_frame(l.client, sent);
    CHECK(read_frame(l.client) == sent);
  }
  l.client.close();
  CHECK(echoed.get() == sizes.size());
}

TEMPLATE_TEST_CASE("a thousand round trips between two threads", "[transport]",
                   SEEDRL_TRANSPORT_CASES) {
  constexpr std::uint64_t round_trips = 1000;
  connected_pair<TestType> l;
  auto ponger = std::async(std::launch::async, [&] {
    for (std::uint64_t i = 0; i < round_trips; ++i) {
      write_value(l.server, read_value(l.server) + 1);
    }
  });
  scope_exit unblock([&] {
    l.client.close();
    l.server.close();
  });
  std::uint64_t value = 0;
  std::uint64_t wrong = 0;
  for (std::uint64_t i = 0; i < round_trips; ++i) {
    write_value(l.client, value);
    const std::uint64_t answer = read_value(l.client);
    wrong += answer != value + 1 ? 1 : 0;
    value = answer;
  }
  ponger.get();
  CHECK(wrong == 0);
  CHECK(value == round_trips);
}

TEMPLATE_TEST_CASE("reading past what a closed peer sent throws transport_error", "[transport]",
                   SEEDRL_TRANSPORT_CASES) {
  connected_pair<TestType> l;
  const auto sent = pattern(3, 1);
  const std::span<const std::byte> parts[] = {sent};
  l.server.write(parts);
  l.server.close();

  // What was sent before the close still arrives.
  std::vector<std::byte> received(3);
  l.client.read(received);
  CHECK(received == sent);

  std::byte more[1];
  const auto error = error_of([&] { l.client.read(more); });
  REQUIRE(error);
  CHECK(error->failure() == transport_failure::peer_closed);
  CHECK_THAT(error->what(), Catch::Contains(l.client.peer()));
  CHECK_FALSE(l.client.is_open());
}

TEMPLATE_TEST_CASE("a peer destroyed mid-frame ends the read with transport_error", "[transport]",
                   SEEDRL_TRANSPORT_CASES) {
  connected_pair<TestType> l;
  {
    auto server = std::move(l.server);
    const auto half = pattern(2, 2);
    const std::span<const std::byte> parts[] = {half};
    server.write(parts);
  }  // destroyed with two of the four bytes sent
  std::byte frame[4];
  const auto error = error_of([&] { l.client.read(frame); });
  REQUIRE(error);
  CHECK(error->failure() == transport_failure::peer_closed);
}

TEMPLATE_TEST_CASE("writing to a closed peer fails with transport_error", "[transport]",
                   SEEDRL_TRANSPORT_CASES) {
  connected_pair<TestType> l;
  l.server.close();
  const auto chunk = pattern(64 * 1024, 3);
  const std::span<const std::byte> parts[] = {chunk};
  // TCP may take the first write into the kernel's buffer before the peer's reset arrives.
  std::optional<transport_error> error;
  for (int i = 0; i < 1000 && !error; ++i) {
    error = error_of([&] { l.client.write(parts); });
  }
  REQUIRE(error);
  CHECK(error->failure() == transport_failure::peer_closed);
  CHECK_FALSE(l.client.is_open());
}

TEMPLATE_TEST_CASE("after close on this side calls throw and the peer sees end of stream",
                   "[transport]", SEEDRL_TRANSPORT_CASES) {
  connected_pair<TestType> l;
  l.client.close();
  l.client.close();  // a second close does nothing
  CHECK_FALSE(l.client.is_open());

  std::byte byte[1];
  const std::span<const std::byte> parts[] = {std::span<const std::byte>(byte)};
  const auto read_error = error_of([&] { l.client.read(byte); });
  REQUIRE(read_error);
  CHECK(read_error->failure() == transport_failure::closed);
  const auto write_error = error_of([&] { l.client.write(parts); });
  REQUIRE(write_error);
  CHECK(write_error->failure() == transport_failure::closed);

  const auto peer_error = error_of([&] { l.server.read(byte); });
  REQUIRE(peer_error);
  CHECK(peer_error->failure() == transport_failure::peer_closed);
}

TEMPLATE_TEST_CASE("close from another thread unblocks a blocked read", "[transport]",
                   SEEDRL_TRANSPORT_CASES) {
  connected_pair<TestType> l;
  std::promise<void> reading;
  auto reader = std::async(std::launch::async, [&] {
    reading.set_value();
    return error_of([&] {
      std::byte frame[8];
      l.client.read(frame);  // nothing is ever sent
    });
  });
  reading.get_future().wait();
  // Not synchronisation: it only makes it likely that the read is parked in the kernel (or on
  // the condition variable) when close() comes, which is the case under test. A close() that
  // comes first must fail the read just the same.
  std::this_thread::sleep_for(20ms);
  l.client.close();
  const auto status = reader.wait_for(unblock_limit);
  CHECK(status == std::future_status::ready);
  if (status != std::future_status::ready) {
    l.server.close();  // unblock it through end of stream so that the test can end
  }
  const auto error = reader.get();
  REQUIRE(error);
  CHECK(error->failure() == transport_failure::closed);
}

TEMPLATE_TEST_CASE("close from another thread unblocks a blocked write", "[transport]",
                   SEEDRL_TRANSPORT_CASES) {
  connected_pair<TestType> l;
  const auto chunk = pattern(1 << 20, 4);
  std::promise<void> writing;
  auto writer = std::async(std::launch::async, [&] {
    writing.set_value();
    const std::span<const std::byte> parts[] = {chunk};
    // The peer never reads: the buffers fill and a write blocks, until close() fails it.
    return error_of([&] {
      for (;;) {
        l.client.write(parts);
      }
    });
  });
  writing.get_future().wait();
  std::this_thread::sleep_for(50ms);  // as above: lets the writer fill the buffers and block
  l.client.close();
  const auto status = writer.wait_for(unblock_limit);
  CHECK(status == std::future_status::ready);
  if (status != std::future_status::ready) {
    l.server.close();
  }
  const auto error = writer.get();
  REQUIRE(error);
  CHECK(error->failure() == transport_failure::closed);
}

TEMPLATE_TEST_CASE("close from another thread unblocks a blocked accept", "[transport]",
                   SEEDRL_TRANSPORT_CASES) {
  typename TestType::transport_type transport;
  auto listener = transport.listen(TestType::fresh_endpoint());
  const auto endpoint = listener.local_endpoint();
  std::promise<void> accepting;
  auto acceptor = std::async(std::launch::async, [&] {
    accepting.set_value();
    return error_of([&] { listener.accept(); });
  });
  accepting.get_future().wait();
  std::this_thread::sleep_for(20ms);  // as for the blocked read
  listener.close();
  const auto status = acceptor.wait_for(unblock_limit);
  CHECK(status == std::future_status::ready);
  if (status != std::future_status::ready) {
    error_of([&] { transport.connect(endpoint); });  // give the accept what it waits for
  }
  const auto error = acceptor.get();
  REQUIRE(error);
  CHECK(error->failure() == transport_failure::closed);
  CHECK_FALSE(listener.is_open());

  const auto again = error_of([&] { listener.accept(); });
  REQUIRE(again);
  CHECK(again->failure() == transport_failure::closed);
  const auto refused = error_of([&] { transport.connect(endpoint); });
  REQUIRE(refused);
  CHECK(refused->failure() == transport_failure::refused);
}

TEMPLATE_TEST_CASE("sixteen clients are served concurrently by a thread each", "[transport]",
                   SEEDRL_TRANSPORT_CASES) {
  constexpr std::size_t clients = 16;
  constexpr std::size_t frames = 50;
  typename TestType::transport_type transport;
  auto listener = transport.listen(TestType::fresh_endpoint());
  const auto endpoint = listener.local_endpoint();

  auto served = std::async(std::launch::async, [&] {
    std::vector<std::future<std::size_t>> handlers;
    for (std::size_t i = 0; i < clients; ++i) {
      handlers.push_back(std::async(std::launch::async, [connection = listener.accept()]() mutable {
        return echo_until_eof(connection);
      }));
    }
    std::size_t total = 0;
    for (auto& handler : handlers) {
      total += handler.get();
    }
    return total;
  });
  scope_exit unblock([&] { listener.close(); });

  std::vector<std::future<std::size_t>> actors;
  for (std::size_t i = 0; i < clients; ++i) {
    actors.push_back(std::async(std::launch::async, [&transport, endpoint, i] {
      auto connection = transport.connect(endpoint);
      std::size_t intact = 0;
      for (std::size_t f = 0; f < frames; ++f) {
        const auto sent = pattern(100 + 37 * i + 911 * f, static_cast<unsigned>(i));
        write_frame(connection, sent);
        intact += read_frame(connection) == sent ? 1 : 0;
      }
      return intact;
    }));
  }
  for (auto& actor : actors) {
    CHECK(actor.get() == frames);
  }
  CHECK(served.get() == clients * frames);
}

TEMPLATE_TEST_CASE("connecting where nobody listens fails with a message naming the endpoint",
                   "[transport]", SEEDRL_TRANSPORT_CASES) {
  typename TestType::transport_type transport;
  // Not a structured binding: Clang 14 cannot capture one in the lambda.
  const auto dead = TestType::dead_endpoint(transport);
  const auto& name = dead.second;
  const auto error = error_of([&] { transport.connect(dead.first); });
  REQUIRE(error);
  CHECK(error->failure() == transport_failure::refused);
  CHECK_THAT(error->what(), Catch::Contains(name));
}

// Not TLS: its connect() waits for the handshake, which a connection never accepted never gets
// (the handshake deadline covers that; the TLS tests below check it).
TEMPLATE_TEST_CASE("a connection never accepted ends when its listener goes", "[transport]",
                   tcp_case, unix_case, in_process_case) {
  typename TestType::transport_type transport;
  std::optional<typename TestType::transport_type::listener_type> listener(
      transport.listen(TestType::fresh_endpoint()));
  const auto endpoint = listener->local_endpoint();
  auto client = transport.connect(endpoint);
  listener.reset();
  std::byte byte[1];
  const auto error = error_of([&] { client.read(byte); });
  REQUIRE(error);
  CHECK(error->failure() == transport_failure::peer_closed);
  const auto refused = error_of([&] { transport.connect(endpoint); });
  REQUIRE(refused);
  CHECK(refused->failure() == transport_failure::refused);
}

TEMPLATE_TEST_CASE("connections and listeners move", "[transport]", SEEDRL_TRANSPORT_CASES) {
  connected_pair<TestType> l;
  auto client = std::move(l.client);
  CHECK(client.is_open());
  CHECK_FALSE(l.client.is_open());  // NOLINT(bugprone-use-after-move): moved-from is closed
  write_value(client, 7);
  CHECK(read_value(l.server) == 7);

  // Move assignment closes the link the target held: its peer sees end of stream.
  auto listener = std::move(l.listener);
  // Not a structured binding: Clang 14 cannot capture one in the lambda below.
  auto both = connect_and_accept(l.transport, listener);
  auto& other = both.first;
  auto& other_server = both.second;
  other = std::move(client);
  write_value(other, 8);
  CHECK(read_value(l.server) == 8);
  std::byte byte[1];
  const auto error = error_of([&] { other_server.read(byte); });
  REQUIRE(error);
  CHECK(error->failure() == transport_failure::peer_closed);
}

TEMPLATE_TEST_CASE("a write takes up to eight buffers", "[transport]", SEEDRL_TRANSPORT_CASES) {
  connected_pair<TestType> l;
  const std::byte one[1] = {std::byte{5}};
  std::vector<std::span<const std::byte>> parts(9, std::span<const std::byte>(one));
  CHECK_THROWS_AS(l.client.write(parts), std::invalid_argument);
  CHECK(l.client.is_open());  // nothing was sent, the link is fine
  parts.resize(8);
  l.client.write(parts);
  std::byte received[8];
  l.server.read(received);
  CHECK(received[7] == std::byte{5});
}

TEMPLATE_TEST_CASE(
    "send_now takes what the socket buffer holds without blocking, in order, and "
    "fails once the peer is gone",
    "[transport]", tcp_case, unix_case) {
  // The learner's inference thread writes replies with it (actor_server's hand_over): it must
  // never block on a peer that does not read, must say how much of a frame the kernel took so
  // that the rest can be queued, and must report a dead link rather than raise SIGPIPE.
  connected_pair<TestType> l;
  seedrl::detail::io_pool pool;  // no threads: send_now runs on the caller's thread
  auto socket = l.server.release_to(pool);
  const auto chunk = pattern(64 << 10, 5);
  std::vector<std::byte> sent;
  const auto start = std::chrono::steady_clock::now();
  std::optional<std::size_t> took;
  for (int i = 0; i < 4096; ++i) {  // at most 256 MiB: far beyond any socket buffer
    took = socket.send_now(chunk);
    REQUIRE(took);
    sent.insert(sent.end(), chunk.begin(), chunk.begin() + static_cast<std::ptrdiff_t>(*took));
    if (*took == 0)
      break;
  }
  CHECK(*took == 0);  // the buffers filled up and it returned instead of blocking
  CHECK(std::chrono::steady_clock::now() - start < 5s);
  REQUIRE(sent.size() > 0);
  // Whatever it took arrives whole and in order: a partial send is a prefix of the chunk.
  std::vector<std::byte> received(sent.size());
  l.client.read(received);
  CHECK(received == sent);
  // Gone peer: the first sends may still land in the kernel, but it fails within a few tries
  // (EPIPE or ECONNRESET), returning nullopt instead of raising SIGPIPE.
  { const auto gone = std::move(l.client); }  // closes the descriptor
  bool failed = false;
  for (int i = 0; i < 100 && !failed; ++i) {
    failed = !socket.send_now(std::span(chunk).first(16));
    std::this_thread::sleep_for(1ms);
  }
  CHECK(failed);
  socket.close();
}

// --- TCP ---------------------------------------------------------------------------------------

TEST_CASE("tcp sets TCP_NODELAY on both ends and reports the picked port", "[transport]") {
  connected_pair<tcp_case> l;
  CHECK(l.listener.local_port() != 0);
  CHECK(l.listener.local_endpoint().port == l.listener.local_port());
  for (const int fd : {l.client.native_handle(), l.server.native_handle()}) {
    int nodelay = 0;
    socklen_t size = sizeof nodelay;
    REQUIRE(::getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &nodelay, &size) == 0);
    CHECK(nodelay != 0);
  }
}

TEST_CASE("tcp listens and connects by host name", "[transport]") {
  seedrl::tcp_transport transport;
  auto listener = transport.listen({"localhost", 0});
  auto client = transport.connect({"localhost", listener.local_port()});
  auto server = listener.accept();
  write_value(client, 3);
  CHECK(read_value(server) == 3);
}

TEST_CASE("tcp refuses a second listener on a port in use and names the port", "[transport]") {
  seedrl::tcp_transport transport;
  auto listener = transport.listen({});
  const auto error = error_of([&] { transport.listen({"127.0.0.1", listener.local_port()}); });
  REQUIRE(error);
  CHECK_THAT(error->what(), Catch::Contains("127.0.0.1:" + std::to_string(listener.local_port())));
}

TEST_CASE("tcp connections outlive their transport", "[transport]") {
  std::optional<seedrl::tcp_transport> transport(std::in_place);
  auto listener = transport->listen({});
  auto client = transport->connect(listener.local_endpoint());
  auto server = listener.accept();
  transport.reset();  // the io_context lives on in the connections
  write_value(client, 9);
  CHECK(read_value(server) == 9);
}

// --- Unix sockets ------------------------------------------------------------------------------

TEST_CASE("unix listen replaces a stale socket file and removes its own", "[transport]") {
  const auto endpoint = unix_case::fresh_endpoint();
  {
    // A socket file left behind by a listener that died without cleaning up.
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_un address{};
    address.sun_family = AF_UNIX;
    endpoint.path.copy(address.sun_path, sizeof address.sun_path - 1);
    REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
    ::close(fd);
  }
  REQUIRE(std::filesystem::is_socket(endpoint.path));
  {
    seedrl::unix_transport transport;
    auto listener = transport.listen(endpoint);
    auto client = transport.connect(endpoint);
    auto server = listener.accept();
    write_value(client, 5);
    CHECK(read_value(server) == 5);
  }
  CHECK_FALSE(std::filesystem::exists(endpoint.path));
}

TEST_CASE("unix listen does not take the path of a live listener", "[transport]") {
  seedrl::unix_transport transport;
  const auto endpoint = unix_case::fresh_endpoint();
  auto listener = transport.listen(endpoint);
  const auto error = error_of([&] { transport.listen(endpoint); });
  REQUIRE(error);
  CHECK_THAT(error->what(), Catch::Contains(endpoint.path));
  // The live listener still has its file. (The probe that found it alive is queued; take it.)
  CHECK(std::filesystem::is_socket(endpoint.path));
  auto probe = listener.accept();
  auto client = transport.connect(endpoint);
  auto server = listener.accept();
  write_value(client, 6);
  CHECK(read_value(server) == 6);
}

TEST_CASE("unix listen leaves a file that is not a socket alone", "[transport]") {
  const auto endpoint = unix_case::fresh_endpoint();
  std::ofstream(endpoint.path) << "not a socket";
  scope_exit remove([&] { std::filesystem::remove(endpoint.path); });
  seedrl::unix_transport transport;
  const auto error = error_of([&] { transport.listen(endpoint); });
  REQUIRE(error);
  CHECK_THAT(error->what(), Catch::Contains(endpoint.path));
  CHECK(std::filesystem::is_regular_file(endpoint.path));
}

TEST_CASE("unix rejects a socket path longer than the kernel takes", "[transport]") {
  seedrl::unix_transport transport;
  const std::string path = "/tmp/" + std::string(200, 'x');
  const auto error = error_of([&] { transport.listen({path}); });
  REQUIRE(error);
  CHECK_THAT(error->what(), Catch::Contains("the limit is"));
}

// --- in-process --------------------------------------------------------------------------------

TEST_CASE("in-process names are unique among live listeners and free again after", "[transport]") {
  seedrl::in_process_transport transport;
  const auto endpoint = in_process_case::fresh_endpoint();
  {
    auto listener = transport.listen(endpoint);
    const auto error = error_of([&] { transport.listen(endpoint); });
    REQUIRE(error);
    CHECK_THAT(error->what(), Catch::Contains(endpoint.name));
  }
  auto listener = transport.listen(endpoint);
  auto client = transport.connect(endpoint);
  auto server = listener.accept();
  CHECK(server.peer() == client.peer());
  write_value(client, 10);
  CHECK(read_value(server) == 10);
}

TEST_CASE("in-process frames far larger than the pipe wrap around intact", "[transport]") {
  seedrl::in_process_transport transport(7);  // odd and tiny: every copy wraps the ring
  auto listener = transport.listen(in_process_case::fresh_endpoint());
  auto client = transport.connect(listener.local_endpoint());
  auto server = listener.accept();
  auto echoed = std::async(std::launch::async, [&] { return echo_until_eof(server); });
  scope_exit unblock([&] {
    client.close();
    server.close();
  });
  for (const std::size_t size : {5, 7, 8, 1000, 100003}) {
    const auto sent = pattern(size, 9);
    write_frame(client, sent);
    CHECK(read_frame(client) == sent);
  }
  client.close();
  CHECK(echoed.get() == 5);
}

TEST_CASE("in-process transport rejects a zero pipe capacity", "[transport]") {
  CHECK_THROWS_AS(seedrl::in_process_transport(0), std::invalid_argument);
}

// --- TLS ---------------------------------------------------------------------------------------

namespace {

using seedrl::tcp_transport;
using seedrl::tls_config;
using seedrl::test::tls_fixture;

// Fixture certificates with a short handshake deadline, so that a failing test fails fast.
tls_config tls_fixture_fast(const std::string& name, const std::string& ca = "ca") {
  auto c = tls_fixture(name, ca);
  c.handshake_timeout = 5s;
  return c;
}

tls_config tls_psk(const std::string& secret) {
  tls_config c;
  c.psk_secret = std::make_shared<const seedrl::security::shared_secret>(
      seedrl::security::shared_secret::from_bytes(
          std::as_bytes(std::span(secret.data(), secret.size())), "test"));
  c.handshake_timeout = 5s;
  return c;
}

// What each end saw of one connection: the learner's side accepts, completes the handshake and
// trades a value; the actor's side connects (its handshake) and trades it back. A TLS 1.3 client
// learns that the server refused its certificate only when it reads, hence the trade.
struct tls_attempt {
  std::optional<transport_error> server;
  std::optional<transport_error> client;
  int tls_version = 0;  // the learner's side, after its handshake
};

tls_attempt attempt(tcp_transport& learner_side, tcp_transport& actor_side,
                    std::string host = "127.0.0.1") {
  auto listener = learner_side.listen({"127.0.0.1", 0});
  tls_attempt a;
  auto served = std::async(std::launch::async, [&] {
    return error_of([&] {
      auto c = listener.accept();
      c.handshake();
      if (SSL* ssl = c.native_tls_handle())
        a.tls_version = SSL_version(ssl);
      write_value(c, 42);
      if (read_value(c) != 43)
        throw transport_error("the actor's value came back wrong");
    });
  });
  a.client = error_of([&] {
    auto c = actor_side.connect({host, listener.local_port()});
    if (read_value(c) != 42)
      throw transport_error("the learner's value came back wrong");
    write_value(c, 43);
  });
  a.server = served.get();
  return a;
}

}  // namespace

TEST_CASE("tls: mutual certificates negotiate TLS 1.3, by address and by host name",
          "[transport][tls]") {
  tcp_transport learner(tls_fixture_fast("learner"));
  tcp_transport actor(tls_fixture_fast("actor"));
  CHECK(learner.uses_tls());
  for (const char* host : {"127.0.0.1", "localhost"}) {
    const auto a = attempt(learner, actor, host);
    CHECK_FALSE(a.server);
    CHECK_FALSE(a.client);
    CHECK(a.tls_version == TLS1_3_VERSION);
  }
}

TEST_CASE("tls: the learner refuses an actor whose certificate another CA signed",
          "[transport][tls]") {
  tcp_transport learner(tls_fixture_fast("learner"));
  tcp_transport actor(tls_fixture_fast("rogue"));  // trusts our CA, but is not signed by it
  const auto a = attempt(learner, actor);
  REQUIRE(a.server);
  CHECK_THAT(a.server->what(),
             Catch::Contains("TLS handshake with 127.0.0.1:") && Catch::Contains("certificate"));
  CHECK(a.client);  // refused: the learner closed the link
}

TEST_CASE("tls: an actor refuses a learner its CA did not sign", "[transport][tls]") {
  tcp_transport learner(tls_fixture_fast("rogue"));  // trusts our CA for actors
  tcp_transport actor(tls_fixture_fast("actor"));
  const auto a = attempt(learner, actor);
  REQUIRE(a.client);
  CHECK_THAT(a.client->what(),
             Catch::Contains("certificate verify failed") && Catch::Contains("local issuer"));
  CHECK(a.server);
}

TEST_CASE("tls: an actor refuses a learner whose certificate names another host",
          "[transport][tls]") {
  tcp_transport learner(tls_fixture_fast("wrong_name"));
  tcp_transport actor(tls_fixture_fast("actor"));
  const auto a = attempt(learner, actor);
  REQUIRE(a.client);
  CHECK_THAT(a.client->what(), Catch::Contains("mismatch"));
  // Told the name the certificate carries, the same actor accepts it.
  auto named = tls_fixture_fast("actor");
  named.server_name = "elsewhere.invalid";
  tcp_transport told(named);
  const auto b = attempt(learner, told);
  CHECK_FALSE(b.client);
  CHECK_FALSE(b.server);
}

TEST_CASE("tls: a pre-shared key admits holders of the secret only", "[transport][tls]") {
  tcp_transport learner(tls_psk("a shared secret of the right length"));
  tcp_transport actor(tls_psk("a shared secret of the right length"));
  const auto a = attempt(learner, actor);
  CHECK_FALSE(a.server);
  CHECK_FALSE(a.client);
  CHECK(a.tls_version == TLS1_3_VERSION);

  tcp_transport guesser(tls_psk("another secret of the right length"));
  const auto b = attempt(learner, guesser);
  CHECK(b.server);
  CHECK(b.client);
  tcp_transport with_certificate(tls_fixture_fast("actor"));
  const auto c = attempt(learner, with_certificate);
  CHECK(c.server);
  CHECK(c.client);
}

TEST_CASE("tls: a plain TCP peer on either side fails with a message saying TLS",
          "[transport][tls]") {
  tcp_transport tls(tls_fixture_fast("learner"));
  tcp_transport plain;
  const auto a = attempt(tls, plain);  // a plain actor at a TLS learner
  REQUIRE(a.server);
  CHECK_THAT(a.server->what(), Catch::Contains("TLS handshake"));
  CHECK(a.client);
  const auto b = attempt(plain, tls);  // a TLS actor at a plain learner
  REQUIRE(b.client);
  CHECK_THAT(b.client->what(), Catch::Contains("TLS handshake"));
}

TEST_CASE("tls: a peer that connects and says nothing is dropped at the handshake deadline",
          "[transport][tls]") {
  auto config = tls_fixture("learner");
  config.handshake_timeout = 200ms;
  tcp_transport learner(config);
  tcp_transport plain;
  auto listener = learner.listen({"127.0.0.1", 0});
  auto silent = plain.connect({"127.0.0.1", listener.local_port()});
  auto server = listener.accept();
  const auto start = std::chrono::steady_clock::now();
  const auto error = error_of([&] { server.handshake(); });
  REQUIRE(error);
  CHECK_THAT(error->what(), Catch::Contains("timed out after 200 ms"));
  CHECK(std::chrono::steady_clock::now() - start < 10s);
  CHECK_FALSE(server.is_open());
}

TEST_CASE("tls: bad configurations are refused up front, naming the file", "[transport][tls]") {
  auto missing = tls_fixture("learner");
  missing.ca_file = "/nonexistent/ca.pem";
  CHECK_THROWS_WITH(tcp_transport(missing), Catch::Contains("/nonexistent/ca.pem"));
  auto mismatched = tls_fixture("learner");
  mismatched.private_key_file = tls_fixture("actor").private_key_file;
  CHECK_THROWS_WITH(tcp_transport(mismatched), Catch::Contains("actor.key (for the certificate") &&
                                                   Catch::Contains("learner.pem") &&
                                                   Catch::Contains("mismatch"));
  auto not_pem = tls_fixture("learner");
  not_pem.certificate_file = not_pem.ca_file.substr(0, not_pem.ca_file.rfind('/')) + "/make.sh";
  CHECK_THROWS_WITH(tcp_transport(not_pem), Catch::Contains("make.sh"));
  auto no_ca = tls_fixture("learner");
  no_ca.ca_file.clear();
  CHECK_THROWS_WITH(tcp_transport(no_ca), Catch::Contains("CA"));
  CHECK_THROWS_AS(tcp_transport(tls_config{}), std::invalid_argument);
  auto both = tls_psk("a shared secret of the right length");
  both.certificate_file = tls_fixture("learner").certificate_file;
  CHECK_THROWS_WITH(tcp_transport(both), Catch::Contains("not both"));
}

// --- the MASTER_ADDR bootstrap (distributed/tcp_bootstrap.hpp) ---------------------------------

namespace {

using seedrl::distributed::share_from_rank0;
using seedrl::distributed::tcp_bootstrap_config;
using seedrl::distributed::world_place;

std::uint16_t free_port() {
  seedrl::tcp_transport t;
  return t.listen({"127.0.0.1", 0}).local_port();  // free again once the listener goes
}

world_place bootstrap_place(int rank, int size, std::uint16_t port) {
  world_place p;
  p.rank = rank;
  p.size = size;
  p.master_addr = "127.0.0.1";
  p.master_port = port;
  p.source = "RANK / WORLD_SIZE";
  return p;
}

tcp_bootstrap_config quick_bootstrap(std::chrono::milliseconds timeout = 5s) {
  tcp_bootstrap_config c;
  c.timeout = timeout;
  c.retry = 20ms;
  c.settings_hash = 42;
  return c;
}

}  // namespace

TEST_CASE("bootstrap: every rank gets rank 0's bytes over MASTER_ADDR:MASTER_PORT",
          "[transport][bootstrap]") {
  const auto port = free_port();
  const auto id = pattern(128, 3);
  std::vector<std::future<std::vector<std::byte>>> ranks;
  for (int r = 3; r >= 1; --r) {  // before rank 0 is up: they retry
    ranks.push_back(std::async(std::launch::async, [r, port] {
      return share_from_rank0(bootstrap_place(r, 4, port), {}, quick_bootstrap());
    }));
  }
  std::this_thread::sleep_for(50ms);
  CHECK(share_from_rank0(bootstrap_place(0, 4, port), id, quick_bootstrap()) == id);
  for (auto& r : ranks)
    CHECK(r.get() == id);
}

TEST_CASE("bootstrap: rank 0 names the ranks that never came and refuses strangers",
          "[transport][bootstrap]") {
  const auto port = free_port();
  std::vector<std::string> log;
  auto root = std::async(std::launch::async, [&] {
    return error_of_any([&] {
      share_from_rank0(bootstrap_place(0, 4, port), pattern(16, 1), quick_bootstrap(1500ms),
                       [&](const std::string& line) { log.push_back(line); });
    });
  });
  // Rank 1 of another run (8 ranks), then rank 1 with other settings, then the real rank 1.
  auto other_run = bootstrap_place(1, 8, port);
  auto other_settings = quick_bootstrap(300ms);
  other_settings.settings_hash = 7;
  CHECK_THROWS(share_from_rank0(other_run, {}, quick_bootstrap(300ms)));
  CHECK_THROWS(share_from_rank0(bootstrap_place(1, 4, port), {}, other_settings));
  auto one = std::async(std::launch::async, [&] {
    return error_of_any(
        [&] { share_from_rank0(bootstrap_place(1, 4, port), {}, quick_bootstrap(3s)); });
  });
  const auto error = root.get();
  REQUIRE(error);
  CHECK_THAT(*error, Catch::Contains("rank(s) 2, 3 of 4 never arrived"));
  CHECK(one.get());  // rank 0 gave up: rank 1 hears of it
  // Each stranger retried until its own deadline: refused (and logged) every time.
  const auto logged = [&](const std::string& what) {
    return std::any_of(log.begin(), log.end(),
                       [&](const std::string& line) { return line.find(what) != line.npos; });
  };
  CHECK(logged("it belongs to a run of 8 ranks, not 4"));
  CHECK(logged("its settings differ"));
}

TEST_CASE("bootstrap: a rank without rank 0 gives up naming MASTER_ADDR:MASTER_PORT",
          "[transport][bootstrap]") {
  const auto port = free_port();
  const auto error = error_of_any(
      [&] { share_from_rank0(bootstrap_place(2, 4, port), {}, quick_bootstrap(200ms)); });
  REQUIRE(error);
  CHECK_THAT(*error, Catch::Contains("rank 2") &&
                         Catch::Contains("127.0.0.1:" + std::to_string(port)) &&
                         Catch::Contains("MASTER_ADDR:MASTER_PORT"));
  world_place no_master = bootstrap_place(1, 2, 0);
  CHECK_THROWS_WITH(share_from_rank0(no_master, {}), Catch::Contains("MASTER_PORT"));
}
