#pragma once
/// \file
/// The BackendTorso plug point: the first part of an agent trained by `backend_agent_trainer`
/// (seedrl/train/agent_trainer.hpp), everything between a step's observation and the core's
/// input. The trainer owns the rest (LSTM core or none, reward and previous-action inputs,
/// policy and value heads, the IMPALA loss, clipping, the optimizer), written once; a torso
/// part brings only its own layers, on the same ComputeBackend, for all N = (T+1) * B rows of
/// an unroll at once.
///
/// A type `T` models `seedrl::BackendTorso<T, Backend, S>` when an object `t` of it provides:
///   - `std::size_t num_parameters() const`: its parameters, which come first in the trainer's
///     flat parameter array (the trainer hands it that array's start);
///   - `std::size_t output_size() const`: features per row, the core's input width (before the
///     reward and previous-action columns);
///   - `std::size_t observation_size() const`: elements of one step's observation in a
///     training batch (e.g. one frame, where the torso stacks frames itself);
///   - `std::size_t state_size() const`: elements of the torso's own recurrent state per
///     environment (a frame history), 0 for none; it comes first in a start state row, before
///     the core's (h, c) per LSTM layer;
///   - `std::size_t max_rows() const`: the most rows its int-indexed tensors allow;
///   - `void reserve(std::size_t rows)`: sizes its work buffers (called before each step; it
///     should reallocate only to grow);
///   - `void forward(const seedrl::backend_torso_batch<S>& batch, const S* params, S* out,
///     std::size_t ld)`: writes the features of every row into out [rows, output_size()] with
///     row stride ld (the core input, whose later columns it must leave alone), keeping what
///     its backward needs;
///   - `void backward(const seedrl::backend_torso_batch<S>& batch, const S* params, S* grads,
///     const S* out, const S* d_out, std::size_t ld)`: after the forward on the same batch,
///     adds the gradients of its parameters into grads (the trainer's gradient array) from
///     d_out, the gradient w.r.t. out (both with row stride ld); the observations get none.
/// Optionally, for the inference step (`backend_agent_step`), it provides
///   - `void reserve_inference(std::size_t rows)`: sizes what infer needs (reallocating only
///     to grow), and the step calls it instead of `reserve`, which sizes training buffers too;
///   - `void infer(const seedrl::backend_torso_batch<S>& batch, const S* params, S* out,
///     std::size_t ld)`: what forward writes, keeping nothing for a backward.
/// Without them the step runs `reserve` and `forward`.
/// The pointers are the backend's; the torso keeps its own reference to the backend, which
/// must be the trainer's. It must be move constructible (the trainer holds it by value).
///
/// To let the trainer be built from an agent's recipe (its config types), as
/// `backend_agent_trainer(backend, recipe...)`, a torso also provides the constructor
/// `T(Backend&, const Recipe&...)` and
///   - `static seedrl::backend_core_config core_config(const Recipe&...)`: what the recipe asks
///     of the core and heads.
/// `backend_mlp_torso` (seedrl/train/mlp_torso.hpp) and `backend_pixel_torso`
/// (seedrl/train/pixel_torso.hpp) do both. `seedrl::check_backend_torso<T, Backend, S>()`
/// reports each missing member by name; the trainer calls it first.

#include <concepts>
#include <cstddef>
#include <cstdint>

namespace seedrl {

/// What a torso reads of one training step, in the backend's memory: N = steps * B rows,
/// time-major (row t * B + b is step t of environment b).
template <class S>
struct backend_torso_batch {
  const S* observations = nullptr;      ///< [N, observation_size()]
  const S* start_state = nullptr;       ///< [B, state_width]; the torso's columns come first
  std::size_t state_width = 0;          ///< the whole state's width (torso + core)
  const std::uint8_t* dones = nullptr;  ///< [N] nonzero: the step starts a new episode
  std::size_t steps = 0;                ///< T + 1
  std::size_t B = 0;                    ///< environments
  std::size_t rows() const noexcept { return steps * B; }
};

namespace detail::backend_torso_parts {

template <class T>
concept has_num_parameters = requires(const T& t) {
  { t.num_parameters() } -> std::convertible_to<std::size_t>;
};
template <class T>
concept has_output_size = requires(const T& t) {
  { t.output_size() } -> std::convertible_to<std::size_t>;
};
template <class T>
concept has_observation_size = requires(const T& t) {
  { t.observation_size() } -> std::convertible_to<std::size_t>;
};
template <class T>
concept has_state_size = requires(const T& t) {
  { t.state_size() } -> std::convertible_to<std::size_t>;
};
template <class T>
concept has_max_rows = requires(const T& t) {
  { t.max_rows() } -> std::convertible_to<std::size_t>;
};
template <class T>
concept has_reserve = requires(T& t, std::size_t rows) {
  t.reserve(rows);
};
template <class T, class S>
concept has_forward = requires(T& t, const backend_torso_batch<S>& batch, const S* params, S* out,
                               std::size_t ld) {
  t.forward(batch, params, out, ld);
};
template <class T, class S>
concept has_backward = requires(T& t, const backend_torso_batch<S>& batch, const S* params,
                                S* grads, const S* out, const S* d_out, std::size_t ld) {
  t.backward(batch, params, grads, out, d_out, ld);
};

template <class T, class S>
concept has_infer = requires(T& t, const backend_torso_batch<S>& batch, const S* params, S* out,
                             std::size_t ld, std::size_t rows) {
  t.reserve_inference(rows);
  t.infer(batch, params, out, ld);
};

}  // namespace detail::backend_torso_parts

/// A torso part that `backend_agent_trainer<Backend, S, T>` can train; see the file comment.
/// (Backend is part of the concept's name for the reader: the members do not mention it.)
template <class T, class Backend, class S>
concept BackendTorso = detail::backend_torso_parts::has_num_parameters<T> &&
    detail::backend_torso_parts::has_output_size<T> &&
    detail::backend_torso_parts::has_observation_size<T> &&
    detail::backend_torso_parts::has_state_size<T> &&
    detail::backend_torso_parts::has_max_rows<T> && detail::backend_torso_parts::has_reserve<T> &&
    detail::backend_torso_parts::has_forward<T, S> &&
    detail::backend_torso_parts::has_backward<T, S> && std::move_constructible<T>;

/// Fails to compile, with one message per missing member, unless `T` models BackendTorso, so
/// that a user sees what to add rather than a cascade of errors from inside the trainer.
template <class T, class Backend, class S>
consteval bool check_backend_torso() {
  using namespace detail::backend_torso_parts;
  static_assert(has_num_parameters<T>,
                "seedrl: this type does not model seedrl::BackendTorso: it lacks "
                "`std::size_t num_parameters() const`");
  static_assert(has_output_size<T>,
                "seedrl: this type does not model seedrl::BackendTorso: it lacks "
                "`std::size_t output_size() const`");
  static_assert(has_observation_size<T>,
                "seedrl: this type does not model seedrl::BackendTorso: it lacks "
                "`std::size_t observation_size() const`");
  static_assert(has_state_size<T>,
                "seedrl: this type does not model seedrl::BackendTorso: it lacks "
                "`std::size_t state_size() const` (return 0 for a torso without state)");
  static_assert(has_max_rows<T>,
                "seedrl: this type does not model seedrl::BackendTorso: it lacks "
                "`std::size_t max_rows() const`");
  static_assert(has_reserve<T>,
                "seedrl: this type does not model seedrl::BackendTorso: it lacks "
                "`void reserve(std::size_t rows)`");
  static_assert(has_forward<T, S>,
                "seedrl: this type does not model seedrl::BackendTorso: it lacks `void "
                "forward(const seedrl::backend_torso_batch<S>&, const S* params, S* out, "
                "std::size_t ld)`");
  static_assert(has_backward<T, S>,
                "seedrl: this type does not model seedrl::BackendTorso: it lacks `void "
                "backward(const seedrl::backend_torso_batch<S>&, const S* params, S* grads, "
                "const S* out, const S* d_out, std::size_t ld)`");
  static_assert(std::move_constructible<T>,
                "seedrl: this type does not model seedrl::BackendTorso: it must be move "
                "constructible");
  return BackendTorso<T, Backend, S>;
}

}  // namespace seedrl
