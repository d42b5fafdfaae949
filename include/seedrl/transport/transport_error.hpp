#pragma once
/// \file
/// The one exception type every transport throws when a link fails, so that the learner can
/// catch link failures without knowing which transport it runs on. `failure()` tells an actor
/// that went away (routine: it was stopped or restarted) from a real fault, without parsing the
/// message.

#include <stdexcept>
#include <string>

namespace seedrl {

/// Why a transport call failed.
enum class transport_failure {
  closed,       ///< this side called close() (possibly from another thread, mid-call)
  peer_closed,  ///< the other side closed or reset the link: end of stream, broken pipe
  refused,      ///< connect() found nobody listening at the endpoint
  other,        ///< anything else: resolution, bind, permissions, resource limits
};

/// A broken, closed or unreachable link. The message names the transport, the operation and the
/// peer or endpoint where it is known, e.g. "seedrl::tcp_connection: read from 127.0.0.1:51234
/// failed: the peer closed the connection (End of file)".
class transport_error : public std::runtime_error {
 public:
  /// `what` is the whole message; `failure` classifies it for callers that react differently.
  explicit transport_error(const std::string& what,
                           transport_failure failure = transport_failure::other)
      : std::runtime_error(what), failure_(failure) {}

  /// The class of failure, for deciding whether to log an error or just drop the actor.
  transport_failure failure() const noexcept { return failure_; }

 private:
  transport_failure failure_;
};

}  // namespace seedrl
