#pragma once
/// \file
/// `backend_agent_step<Backend, S, Torso, LstmStep>`: one inference step of a backend agent
/// (the torso part, then detail::agent_body: an LSTM core or none, policy and value heads; the
/// network backend_agent_trainer trains, with the same parameter layout) for B
/// environments over a per-slot recurrent state table in the backend's memory. It is the
/// network step of the accelerator inference engine (seedrl/cuda/inference_engine.hpp); on
/// host_backend it runs on the CPU, which is how the tests check its data flow against
/// cpu_inference_engine and the CPU networks.
///
/// Data flow of one step, all on the backend:
///   widen:   uint8 frames (when the operands carry them) to S, the first layer's input;
///   gather:  before [B, W] = table[slots] (the state each row starts from, before resets; the
///            unroll builder's state_before); without slots the table's first B rows are the
///            rows, read and written in place (a host network's own state, actor_critic_agent);
///   torso:   one step (steps = 1) with `before` as the start state and the resets as dones,
///            into the core input;
///   body:    detail::agent_body's step: the reward and previous-action columns (zero at a
///            reset row), the LSTM from `before`'s (h, c) (zero at a reset row) into `next`'s,
///            each layer by `LstmStep`, then policy outputs [B, A] (logits, or a Gaussian's
///            means then log-stds) and values [B];
///   state:   the torso's next state (frame history, Torso::next_state) and each layer's (h, c)
///            into next [B, W], scattered back to table[slots] (in place without slots).
/// `LstmStep` runs one LSTM layer's step (`void operator()(Backend&, const
/// detail::lstm_step_args<S>&)`): `backend_lstm_step` (one GEMM over [x | h] and a pointwise
/// pass, what the CPU layer runs) by default; the CUDA engine passes one that calls the
/// hand-written kernels (lstm_step_runner).
/// Includes no Eigen, so nvcc compiles it with a CUDA backend.

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "seedrl/backend/compute_backend.hpp"
#include "seedrl/backend/detail/backend_ref.hpp"
#include "seedrl/backend/detail/state_table_kernels.hpp"
#include "seedrl/net/detail/agent_body.hpp"
#include "seedrl/net/detail/lstm_stack.hpp"
#include "seedrl/train/backend_core_config.hpp"
#include "seedrl/train/backend_torso.hpp"

namespace seedrl {

/// What one step reads and writes, all in the backend's memory.
template <class S>
struct agent_step_operands {
  std::size_t B = 0;  ///< rows (environments) of this step
  /// [B] distinct rows of the table; null: rows 0..B-1, stepped in place (`before` is then
  /// neither read nor written: a host network's own state rows)
  const std::uint32_t* slots = nullptr;
  const S* observations = nullptr;  ///< [B, observation_size()]
  /// [B, observation_size()] uint8 frames; when set, `observations` is not read: the step
  /// widens these to S (exactly) and runs on them, so frames cross to a device as bytes.
  const std::uint8_t* observations_u8 = nullptr;
  const S* rewards = nullptr;                  ///< [B]
  const std::uint8_t* resets = nullptr;        ///< [B] nonzero: the row starts from zeros
  const std::int32_t* prev_actions = nullptr;  ///< [B] (read when the core takes them)
  /// [B, D] continuous actions: the action each env got before this step (read instead of
  /// prev_actions when the core takes them)
  const S* prev_continuous_actions = nullptr;
  const S* params = nullptr;  ///< [num_parameters()]
  S* table = nullptr;         ///< [slots, state_size()], updated in place
  S* before = nullptr;        ///< [B, state_size()] out: gathered rows
  S* logits = nullptr;        ///< [B, A] out: the policy outputs
  S* values = nullptr;        ///< [B] out
};

/// One inference step of the agent `Torso` + core + heads over a state table; see the file
/// comment. Keeps a reference to the backend, which must outlive it.
template <ComputeBackend Backend, std::floating_point S, class Torso,
          class LstmStep = backend_lstm_step>
class backend_agent_step {
  static_assert(check_backend_torso<Torso, Backend, S>());

  template <class T>
  using buffer = typename Backend::template buffer<T>;

  static constexpr bool has_next_state =
      requires(Torso & t, const backend_torso_batch<S>& b, S* p, std::size_t n) {
    t.next_state(b, p, n);
  };
  /// The torso's inference path (BackendTorso's optional `infer`), used where it has one.
  static constexpr bool torso_infers = detail::backend_torso_parts::has_infer<Torso, S>;

 public:
  using scalar_type = S;
  using torso_type = Torso;

  /// Throws std::invalid_argument as backend_agent_trainer does, and for a torso with state but
  /// no next_state.
  backend_agent_step(Backend& backend, Torso torso, const backend_core_config& core,
                     LstmStep lstm = {})
      : backend_(backend), torso_(std::move(torso)), layer_step_(std::move(lstm)) {
    if (torso_.output_size() == 0)
      throw std::invalid_argument(std::string(who_) + ": the torso has no output");
    if (!has_next_state && torso_.state_size() > 0)
      throw std::invalid_argument(std::string(who_) +
                                  ": the torso keeps a state but has no next_state");
    body_ = detail::agent_body<S>(torso_.num_parameters(), torso_.output_size(), core, who_);
    state_size_ = torso_.state_size() + body_.state_size();
  }

  /// The agent a recipe (its config types) describes, as backend_agent_trainer's constructor.
  template <class... Recipe>
  requires(sizeof...(Recipe) > 0 && std::constructible_from<Torso, Backend&, const Recipe&...> &&
           requires(const Recipe&... r) {
             { Torso::core_config(r...) } -> std::convertible_to<backend_core_config>;
           }) backend_agent_step(Backend& backend, const Recipe&... recipe)
      : backend_agent_step(backend, Torso(backend, recipe...), Torso::core_config(recipe...)) {}

  backend_agent_step(const backend_agent_step&) = delete;
  backend_agent_step& operator=(const backend_agent_step&) = delete;
  backend_agent_step(backend_agent_step&&) = default;
  backend_agent_step& operator=(backend_agent_step&&) = default;
  ~backend_agent_step() = default;

  std::size_t num_parameters() const noexcept { return body_.num_parameters(); }
  /// The policy's outputs per row (2D for D continuous action elements).
  std::size_t num_actions() const noexcept { return body_.num_actions(); }
  /// D of a continuous action, 0 for discrete actions.
  std::size_t continuous_action_size() const noexcept { return body_.continuous_action_size(); }
  /// Elements of one row's observation (one frame where the torso stacks frames).
  std::size_t observation_size() const noexcept { return torso_.observation_size(); }
  /// A state table row: the torso's state, then (h, c) per LSTM layer (the CPU network's).
  std::size_t state_size() const noexcept { return state_size_; }
  /// The most rows one step takes (the torso's int-indexed tensors).
  std::size_t max_rows() const noexcept { return torso_.max_rows(); }

  /// The LSTM step (e.g. to reach its stream or statistics).
  LstmStep& lstm_step() noexcept { return layer_step_; }

  /// Work buffers for steps of up to `B` rows; reallocates only to grow. Elements it holds per
  /// row (for a memory estimate): see work_elements_per_row.
  void reserve(std::size_t B) {
    if constexpr (torso_infers)
      torso_.reserve_inference(B);
    else
      torso_.reserve(B);
    body_.reserve_step(*backend_, body_ws_, B);
    backend_.grow(next_, B * state_size_);
    backend_.grow(widened_, B * torso_.observation_size());
    reserved_ = B > reserved_ ? B : reserved_;
  }

  /// Elements of the step's own buffers per row, besides the torso's.
  std::size_t work_elements_per_row() const noexcept {
    return body_.step_elements_per_row() + state_size_ + torso_.observation_size();
  }

  /// One step; see the file comment. Asynchronous where the backend is. Throws
  /// std::invalid_argument when B exceeds what reserve() sized, or when a continuous-action
  /// network that takes the previous action gets no prev_continuous_actions.
  void step(const agent_step_operands<S>& op) {
    const std::size_t B = op.B, W = state_size_;
    if (B == 0)
      return;
    if (B > reserved_)
      throw std::invalid_argument(std::string(who_) + "::step: " + std::to_string(B) +
                                  " rows, reserved for " + std::to_string(reserved_));
    const typename detail::agent_body<S>::row_inputs inputs{op.rewards, op.resets, op.prev_actions,
                                                            op.prev_continuous_actions};
    body_.check_inputs(inputs, "step");  // before any work is given to the backend
    Backend& be = *backend_;
    const S* p = op.params;
    const bool in_place = op.slots == nullptr;
    if (W > 0 && !in_place)
      be.for_each(B * W, detail::gather_rows_kernel<S>{op.table, op.slots, W, op.before});
    const S* before = in_place ? op.table : op.before;
    const S* observations = op.observations;
    if (op.observations_u8 != nullptr) {
      const std::size_t n = B * torso_.observation_size();
      be.for_each(n, detail::widen_kernel<S>{op.observations_u8, widened_.data()});
      observations = widened_.data();
    }
    backend_torso_batch<S> tb;
    tb.observations = observations;
    tb.start_state = before;
    tb.state_width = W;
    tb.dones = op.resets;
    tb.steps = 1;
    tb.B = B;
    S* features = body_.torso_output(body_ws_);
    const std::size_t ci = body_.core_input_width();
    if constexpr (torso_infers)
      torso_.infer(tb, p, features, ci);
    else
      torso_.forward(tb, p, features, ci);
    // The core's state sits after the torso's in a state row; each layer's (h, c) goes
    // straight into the next-state rows (the table's own in place, when the torso keeps no
    // state the LSTM would read after it is overwritten).
    const std::size_t torso_state = torso_.state_size();
    S* next = in_place && torso_state == 0 ? op.table : next_.data();
    body_.step(be, body_ws_, p, B, inputs, before + torso_state, W, next + torso_state, W,
               op.logits, op.values, layer_step_);
    if (W == 0 || next == op.table)
      return;
    if constexpr (has_next_state)
      torso_.next_state(tb, next, W);
    if (in_place)
      be.copy(static_cast<const S*>(next), op.table, B * W);
    else
      be.for_each(B * W, detail::scatter_rows_kernel<S>{next, op.slots, W, op.table});
  }

 private:
  static constexpr const char* who_ = "seedrl::backend_agent_step";

  detail::backend_ref<Backend> backend_;
  Torso torso_;
  LstmStep layer_step_;
  detail::agent_body<S> body_;
  typename detail::agent_body<S>::template workspace<Backend> body_ws_;
  std::size_t state_size_ = 0, reserved_ = 0;
  buffer<S> next_;
  buffer<S> widened_;  ///< [B, observation_size()] the uint8 frames as S
};

}  // namespace seedrl
