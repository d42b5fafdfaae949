#pragma once
/// \file
/// Unix domain stream sockets over Boost.Asio: the actor link when actors run on the learner's
/// host, without TCP's checksums, acknowledgements and loopback routing. Blocking calls,
/// `close()` from any thread, `release_to` for the learner's asynchronous I/O: the same contract
/// as `tcp.hpp`, whose socket code (`detail::socket_connection`, `detail::socket_listener`) this
/// header reuses.
///
/// The listener owns its socket file: `listen` replaces a stale one (left by a learner that
/// crashed) but refuses to take over a path where a live listener still accepts, and the
/// listener removes the file when it is destroyed.

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <utility>

#include "seedrl/transport/tcp.hpp"
#include "seedrl/transport/transport.hpp"
#include "seedrl/transport/transport_error.hpp"

namespace seedrl {

/// Where a learner listens on its host: a socket file path.
struct unix_endpoint {
  /// Filesystem path of the socket, at most 107 bytes (the size of `sockaddr_un::sun_path`).
  std::string path;
};

namespace detail {

/// Removes the socket file a listener bound, unless the file was replaced since (another
/// learner took over the path after this one was closed): the file is matched by inode.
class socket_file {
 public:
  /// Owns nothing.
  socket_file() noexcept = default;

  /// Owns the socket file at `path`, which the caller has just bound.
  explicit socket_file(std::string path) : path_(std::move(path)) {
    struct stat st {};
    if (::lstat(path_.c_str(), &st) == 0) {
      device_ = st.st_dev;
      inode_ = st.st_ino;
    } else {
      path_.clear();  // nothing we could recognise later, so nothing to remove
    }
  }

  /// Takes over the file; `other` owns nothing.
  socket_file(socket_file&& other) noexcept
      : path_(std::exchange(other.path_, std::string())),
        device_(other.device_),
        inode_(other.inode_) {}

  /// Removes the owned file, then takes over `other`'s.
  socket_file& operator=(socket_file&& other) noexcept {
    if (this != &other) {
      remove();
      path_ = std::exchange(other.path_, std::string());
      device_ = other.device_;
      inode_ = other.inode_;
    }
    return *this;
  }

  socket_file(const socket_file&) = delete;
  socket_file& operator=(const socket_file&) = delete;

  /// Removes the file if it is still the one bound.
  ~socket_file() { remove(); }

 private:
  void remove() noexcept {
    if (path_.empty()) {
      return;
    }
    struct stat st {};
    if (::lstat(path_.c_str(), &st) == 0 && st.st_dev == device_ && st.st_ino == inode_) {
      ::unlink(path_.c_str());
    }
    path_.clear();
  }

  std::string path_;
  dev_t device_ = 0;
  ino_t inode_ = 0;
};

/// The longest socket path the kernel takes (one byte of `sun_path` is the terminating NUL).
inline constexpr std::size_t max_unix_path = sizeof(sockaddr_un::sun_path) - 1;

}  // namespace detail

/// One Unix-socket link to an actor or to the learner; models `seedrl::Connection`. `peer()` is
/// "unix:<path>" on the actor side and "unix:<path>#<n>" (the n-th accepted link) on the
/// learner side, since a connecting Unix socket has no address of its own.
class unix_connection final
    : public detail::socket_connection<boost::asio::local::stream_protocol> {
 public:
  /// Wraps a connected socket; `unix_transport::connect` and `unix_listener::accept` call this.
  unix_connection(std::shared_ptr<boost::asio::io_context> io,
                  boost::asio::local::stream_protocol::socket socket, std::string peer)
      : socket_connection(std::move(io), std::move(socket), std::move(peer),
                          "seedrl::unix_connection") {}
};

/// A listening Unix socket; removes its socket file on destruction.
class unix_listener final : public detail::socket_listener<boost::asio::local::stream_protocol> {
 public:
  /// Wraps a bound, listening acceptor at `path`; `unix_transport::listen` calls this.
  unix_listener(std::shared_ptr<boost::asio::io_context> io,
                boost::asio::local::stream_protocol::acceptor acceptor, std::string path)
      : socket_listener(std::move(io), std::move(acceptor), "unix:" + path,
                        "seedrl::unix_listener"),
        file_(path),
        path_(std::move(path)) {}

  /// Blocks until an actor connects and returns the link.
  unix_connection accept() {
    auto socket = accept_socket();
    return unix_connection(io(), std::move(socket), where() + "#" + std::to_string(accepted_++));
  }

  /// Where clients reach this listener.
  unix_endpoint local_endpoint() const { return {path_}; }

 private:
  detail::socket_file file_;
  std::string path_;
  std::uint64_t accepted_ = 0;
};

/// Unix domain stream sockets over Boost.Asio; models `seedrl::Transport`. Copies share one
/// io_context.
class unix_transport {
 public:
  /// A socket path.
  using endpoint_type = unix_endpoint;
  /// One link.
  using connection_type = unix_connection;
  /// The learner's listening socket.
  using listener_type = unix_listener;
  /// The learner's I/O threads, which accepted connections move to (release_to).
  using io_pool_type = detail::io_pool;

  /// Owns an io_context; the connections and listeners it makes keep it alive.
  unix_transport() : io_(std::make_shared<boost::asio::io_context>()) {}

  /// Connects to a listening learner. Throws `transport_error` naming the path when nobody
  /// listens there (`transport_failure::refused`: no such file, or a stale one).
  connection_type connect(const endpoint_type& endpoint) {
    const std::string where = "unix:" + endpoint.path;
    check_path(endpoint.path, "connect to");
    boost::asio::local::stream_protocol::socket socket(*io_);
    boost::system::error_code ec;
    socket.connect(boost::asio::local::stream_protocol::endpoint(endpoint.path), ec);
    if (ec) {
      const bool refused = ec == boost::asio::error::connection_refused ||
                           ec == boost::system::errc::no_such_file_or_directory;
      throw transport_error("seedrl::unix_transport: cannot connect to " + where + ": " +
                                ec.message() +
                                (refused ? " (is the learner listening there?)" : ""),
                            refused ? transport_failure::refused : transport_failure::other);
    }
    return connection_type(io_, std::move(socket), where);
  }

  /// Binds and listens at the path, first removing a stale socket file there. Throws
  /// `transport_error` naming the path when a live listener holds it, when something that is
  /// not a socket is in the way, or when the path cannot be bound (missing directory,
  /// permissions, too long).
  listener_type listen(const endpoint_type& endpoint) {
    using protocol = boost::asio::local::stream_protocol;
    const std::string where = "unix:" + endpoint.path;
    check_path(endpoint.path, "listen on");
    const protocol::endpoint address(endpoint.path);
    remove_stale_socket(endpoint.path, address);
    protocol::acceptor acceptor(*io_);
    boost::system::error_code ec;
    // Asio's error_code overloads return void here (BOOST_ASIO_NO_DEPRECATED), hence the chain.
    acceptor.open(address.protocol(), ec);
    if (!ec) {
      acceptor.bind(address, ec);
      if (!ec) {
        acceptor.listen(boost::asio::socket_base::max_listen_connections, ec);
        if (ec) {
          ::unlink(endpoint.path.c_str());  // bound but unusable: leave no file behind
        }
      }
    }
    if (ec) {
      throw transport_error("seedrl::unix_transport: cannot listen on " + where + ": " +
                            ec.message());
    }
    return listener_type(io_, std::move(acceptor), endpoint.path);
  }

 private:
  static void check_path(const std::string& path, const char* operation) {
    if (path.empty()) {
      throw transport_error(std::string("seedrl::unix_transport: cannot ") + operation +
                            " an empty socket path");
    }
    if (path.size() > detail::max_unix_path) {
      throw transport_error(std::string("seedrl::unix_transport: cannot ") + operation +
                            " unix:" + path + ": the path is " + std::to_string(path.size()) +
                            " bytes, the limit is " + std::to_string(detail::max_unix_path));
    }
  }

  // A socket file that refuses connections was left by a listener that died without cleaning
  // up; one that accepts belongs to a running learner, which must not lose its path. The probe
  // is non-blocking because a live listener with a full backlog would block a connect.
  void remove_stale_socket(const std::string& path,
                           const boost::asio::local::stream_protocol::endpoint& address) {
    std::error_code fs_ec;
    if (!std::filesystem::is_socket(std::filesystem::symlink_status(path, fs_ec))) {
      return;  // nothing there, or not a socket: bind reports what is in the way
    }
    boost::asio::local::stream_protocol::socket probe(*io_);
    boost::system::error_code ec;
    probe.open(address.protocol(), ec);
    if (!ec) {
      probe.non_blocking(true, ec);
    }
    if (!ec) {
      probe.connect(address, ec);
    }
    if (!ec || ec == boost::asio::error::would_block || ec == boost::asio::error::try_again) {
      throw transport_error("seedrl::unix_transport: cannot listen on unix:" + path +
                            ": another listener is accepting there");
    }
    if (ec != boost::asio::error::connection_refused) {
      throw transport_error("seedrl::unix_transport: cannot listen on unix:" + path +
                            ": cannot tell whether the socket file there is stale (" +
                            ec.message() + ")");
    }
    std::filesystem::remove(path, fs_ec);
  }

  std::shared_ptr<boost::asio::io_context> io_;
};

static_assert(Connection<unix_connection>);
static_assert(Transport<unix_transport>);

}  // namespace seedrl
