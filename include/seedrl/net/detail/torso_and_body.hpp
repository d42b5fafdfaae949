#pragma once
/// \file
/// `detail::torso_and_body<Backend, S, Torso>`: a whole backend agent over an unroll, the
/// torso part (a BackendTorso, seedrl/train/backend_torso.hpp) writing its features into the
/// core input of `detail::agent_body` (core and heads), with the workspace the two passes
/// share. Written once for the backend trainer (`backend_agent_trainer`, on any backend) and
/// the host networks (`actor_critic_agent`, on host_backend): forward over `steps` x B rows from
/// the start state, then backward into the flat gradient array. No Eigen, so nvcc compiles it.

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <utility>

#include "seedrl/net/detail/agent_body.hpp"
#include "seedrl/train/backend_core_config.hpp"
#include "seedrl/train/backend_torso.hpp"

namespace seedrl::detail {

/// See the file comment.
template <class Backend, std::floating_point S, class Torso>
class torso_and_body {
 public:
  using row_inputs = typename agent_body<S>::row_inputs;

  /// The agent `torso` + `core`; throws std::invalid_argument, naming `who`, for a torso
  /// without outputs or a core agent_body refuses.
  torso_and_body(Torso torso, const backend_core_config& core, const std::string& who)
      : torso_(std::move(torso)) {
    if (torso_.output_size() == 0)
      throw std::invalid_argument(who + ": the torso has no output");
    body_ = agent_body<S>(torso_.num_parameters(), torso_.output_size(), core, who);
  }

  Torso& torso() noexcept { return torso_; }
  const Torso& torso() const noexcept { return torso_; }
  const agent_body<S>& body() const noexcept { return body_; }

  /// The torso's and the body's parameters.
  std::size_t num_parameters() const noexcept { return body_.num_parameters(); }
  /// A start state row: the torso's state, then the core's (h, c) per LSTM layer.
  std::size_t state_size() const noexcept { return torso_.state_size() + body_.state_size(); }
  /// The most rows of one pass (the int-indexed tensors of the torso, core and heads).
  std::size_t max_rows() const noexcept { return std::min(body_.max_rows(), torso_.max_rows()); }

  /// Sizes both parts' buffers for `steps` x B rows; reallocates only to grow.
  void reserve(const Backend& b, std::size_t steps, std::size_t B) {
    torso_.reserve(steps * B);
    body_.reserve(b, ws_, steps, B);
  }

  /// Policy outputs [N, A] and values [N] of batch's N = steps x B rows (time-major) from its
  /// start state (row stride batch.state_width = state_size()), after reserve; keeps what
  /// backward reads (and the pointers of batch and in, which must stay valid until then).
  void forward(Backend& b, const S* params, const backend_torso_batch<S>& batch,
               const row_inputs& in, S* outputs, S* values) {
    torso_.forward(batch, params, body_.torso_output(ws_), body_.core_input_width());
    // The core's state sits after the torso's in a start state row.
    body_.forward(b, ws_, params, batch.steps, batch.B, in, batch.start_state + torso_.state_size(),
                  batch.state_width, outputs, values);
  }

  /// Forward over batch's steps x B rows as `forward` does, then the state each environment
  /// reaches after the last step into `end_state` [B, state_size()] (a replay loss's burn-in:
  /// the state the trained steps start from). The core's (h, c) come from the forward; the
  /// torso's own state (a frame history) is stepped one step at a time with its `next_state`,
  /// `scratch` [B, state_size()] holding every other step. Throws std::invalid_argument for a
  /// torso that keeps a state but has no next_state.
  void forward_to_end_state(Backend& b, const S* params, const backend_torso_batch<S>& batch,
                            const row_inputs& in, S* outputs, S* values, S* end_state, S* scratch) {
    const std::size_t W = state_size(), torso_state = torso_.state_size();
    torso_.forward(batch, params, body_.torso_output(ws_), body_.core_input_width());
    body_.forward(b, ws_, params, batch.steps, batch.B, in, batch.start_state + torso_state,
                  batch.state_width, outputs, values, end_state + torso_state, W);
    if (torso_state == 0)
      return;
    if constexpr (requires(const backend_torso_batch<S>& t, S* p) {
                    torso_.next_state(t, p, std::size_t{});
                  }) {
      const S* from = batch.start_state;
      std::size_t ld_from = batch.state_width;
      for (std::size_t t = 0; t < batch.steps; ++t) {
        // The step that writes end_state is the last: alternate so that it lands there.
        S* to = (batch.steps - t) % 2 == 1 ? end_state : scratch;
        backend_torso_batch<S> one = batch;
        one.observations = batch.observations + t * batch.B * torso_.observation_size();
        one.start_state = from;
        one.state_width = ld_from;
        one.dones = batch.dones + t * batch.B;
        one.steps = 1;
        torso_.next_state(one, to, W);
        from = to;
        ld_from = W;
      }
    } else {
      throw std::invalid_argument(
          "seedrl: this torso keeps a state but has no next_state, so a burn-in cannot carry it");
    }
  }

  /// After forward on the same batch: adds the parameters' gradients for d_outputs [N, A] and
  /// d_values [N] into grads (the whole flat array).
  void backward(Backend& b, const S* params, S* grads, const backend_torso_batch<S>& batch,
                const S* d_outputs, const S* d_values) {
    const S* d_features = body_.backward(b, ws_, params, grads, batch.steps, batch.B, batch.dones,
                                         d_outputs, d_values);
    // The torso's columns of the core input's gradient (reward and action have no weights).
    torso_.backward(batch, params, grads, body_.torso_output(ws_), d_features,
                    body_.core_input_width());
  }

 private:
  Torso torso_;
  agent_body<S> body_;
  typename agent_body<S>::template workspace<Backend> ws_;
};

}  // namespace seedrl::detail
