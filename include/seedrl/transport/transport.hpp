#pragma once
/// \file
/// The Transport plug point: how actors and the learner exchange frames (the frame format
/// itself is the wire protocol, to be documented in docs/protocol.md with the TCP transport).
///
/// A type `C` models `seedrl::Connection` when it provides:
///   - `void write(std::span<const std::span<const std::byte>> buffers);` sends the buffers as
///     one frame with a gather write; throws on a broken link;
///   - `void read(std::span<std::byte> buffer);` fills `buffer` exactly; throws on a broken
///     link or end of stream;
///   - `void close() noexcept;` and `bool is_open() const noexcept;`.
/// A type `T` models `seedrl::Transport` when it provides:
///   - `using endpoint_type = ...;` where a learner listens (host and port, a socket path, an
///     in-process channel name);
///   - `using connection_type = ...;` a Connection;
///   - `using listener_type = ...;` with `connection_type accept();`;
///   - `connection_type connect(const endpoint_type&);` (the actor side) and
///     `listener_type listen(const endpoint_type&);` (the learner side).
/// The learner's code is written against these names only, so TCP, Unix sockets and the
/// in-process transport are interchangeable.

#include <concepts>
#include <cstddef>
#include <span>
#include <string>

namespace seedrl {

namespace detail {

/// How an asynchronous read or write of a transport that serves the learner's connections on
/// an I/O pool ended (see actor_server's async_transport; TCP and Unix sockets provide one).
struct io_result {
  std::size_t bytes = 0;     ///< bytes moved
  bool ok = true;            ///< false: the link failed, was closed, or the operation was cancelled
  bool peer_gone = false;    ///< the other end closed or reset the link
  std::string error;         ///< what failed, when !ok
  bool tls_refused = false;  ///< the TLS handshake failed: a wrong certificate or key, or no TLS
};

}  // namespace detail

/// One bidirectional, ordered, reliable byte stream between an actor and the learner.
template <class C>
concept Connection = std::move_constructible<C> &&
    requires(C& c, const C& cc, std::span<const std::span<const std::byte>> buffers,
             std::span<std::byte> buffer) {
  c.write(buffers);
  c.read(buffer);
  { c.close() }
  noexcept;
  { cc.is_open() }
  noexcept->std::convertible_to<bool>;
};

/// A way to reach the learner; see the file comment for what it needs.
template <class T>
concept Transport = Connection<typename T::connection_type> &&
    requires(T& t, const typename T::endpoint_type& endpoint, typename T::listener_type& listener) {
  { t.connect(endpoint) } -> std::same_as<typename T::connection_type>;
  { t.listen(endpoint) } -> std::same_as<typename T::listener_type>;
  { listener.accept() } -> std::same_as<typename T::connection_type>;
};

}  // namespace seedrl
