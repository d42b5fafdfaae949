#pragma once
/// \file
/// The learner's inference plug point: where one batch of environment steps becomes policy
/// outputs and values. The inference loop (seedrl/runtime/inference_loop.hpp) does the
/// batching, bookkeeping, action sampling and replies; the engine does the network step and
/// owns what the network step needs across batches: the recurrent state of every environment
/// slot and the parameters it infers with. Keeping both behind one type lets the state table
/// and the parameters live where the compute runs (host memory for the CPU engine, device
/// memory for an accelerator engine).
///
/// A type `E` models `seedrl::InferenceEngine` when it provides:
///   - `using scalar_type = ...;` float or double (below, S);
///   - construction from `(const Net&, const inference_engine_config&)` (the inference loop
///     builds it so; checked there): the network gives the architecture and initial parameters,
///     the config the sizes. The recurrent state table holds `max_envs` rows of
///     `state_width()` zeros from construction on. A config the engine cannot serve (a policy
///     width the network does not write, no rows, no workers) throws std::invalid_argument.
///   - `std::size_t max_envs() const;`, `std::size_t max_batch() const;`,
///     `std::size_t state_width() const;` (0 without a recurrent core) and
///     `std::size_t policy_width() const;` (policy outputs per row);
///   - `void reset_state(std::size_t slot);` the slot's state becomes zeros: the loop calls it
///     when a slot's run id changes (a new or restarted environment). It may be deferred to the
///     slot's next step, but that step must start from zeros;
///   - `void infer(std::span<const std::uint32_t> slots, const agent_step_input<S>& in,
///     const agent_step_output<S>& out);` one step for B = slots.size() <= max_batch() rows:
///     row r is environment slot slots[r] (distinct, < max_envs()) with the r-th observation,
///     reward, reset flag (`in.dones`: 1 at a done or a run-id change), previous discrete action
///     and previous continuous action (D values, or none). It writes the policy outputs
///     ([B, policy_width()]) and values ([B]) of every row, and each row's slot state becomes
///     the state after the step. At a row whose reset flag is set, the network starts from a
///     zero state (as Network::infer does). Rows are independent: a row's outputs do not depend
///     on the other rows of the batch. The observations come as S (`in.observations`) or, for
///     a uint8 observation spec without observation normalization, as the actors' bytes
///     (`in.observations_u8`, `in.observations` then empty): the engine widens them to S at its
///     first layer (on the device, for an accelerator: the upload is 1 byte per element), and
///     the step is the same as on the widened values.
///   - `std::span<const S> state_before(std::size_t row) const;` the state row `row` of the last
///     infer() started from, before that step's reset flag applied (state_width() values; the
///     unroll builder keeps it as the unroll's start state); valid until the next infer().
///     When the step's `in.keep_state` was not empty, only the rows it flags are specified (the
///     loop flags the rows whose unroll starts or completes at this step; an accelerator brings
///     back only those); another row's span is unspecified (stale values, or empty);
///   - `bool update_parameters(const parameter_store<S>&, std::uint64_t* version);` between
///     batches: takes the store's newest parameters when they are newer than `*version` (and
///     updates it), else does nothing; true when it took them. Every later infer() uses them
///     whole: the engine never computes with a half-written set (parameter_store hands out
///     immutable snapshots; the engine copies one before its next step).
/// Threads: one thread (the loop's inference thread) calls everything after construction; the
/// engine may use threads of its own inside infer().
///
/// Optional capability, `seedrl::SamplingInferenceEngine`: an engine that also samples the
/// categorical policy where it computes (an accelerator: then only actions, log-probs and values
/// come back) provides
///   - `void infer_and_sample(slots, in, out, std::uint64_t seed, std::uint64_t counter,
///     std::span<std::int32_t> actions, std::span<S> log_probs);` infer()'s step (out.values
///     written; out.logits may be left alone), then row r's action is
///     `counter_categorical(logits of row r, A, counter_uniform(seed, counter, r), &log_prob)`
///     (seedrl/core/counter_random.hpp), so a CPU reference reproduces it.
/// The inference loop uses it when the sampler is categorical_sampler sampling (not greedy),
/// with the learner's seed and the batch's index as the counter: a run is reproducible.
/// An engine whose model is chosen at run time (any_inference_engine) also provides
/// `bool samples() const;`: when false, the loop calls infer() and samples on the host.
///
/// Optional capability, `seedrl::PipelinedInferenceEngine`: an engine whose step runs
/// asynchronously (an accelerator: batch k+1's upload overlaps batch k's compute) splits infer()
/// in two:
///   - `void begin(slots, in, out);` submits infer()'s step and returns without waiting for it;
///     a SamplingInferenceEngine also provides `void begin_and_sample(slots, in, out, seed,
///     counter, actions, log_probs);`, the same for infer_and_sample();
///   - `void finish();` waits for the oldest batch begun and not finished, and writes its
///     outputs (out, and actions and log-probs when sampled). From then on state_before(row)
///     is that batch's, until the next begin(), finish() or infer().
/// At most 2 batches are in flight (begun, not finished); infer() and infer_and_sample() are
/// called only with none. The caller keeps the memory behind every span it passed to begin()
/// (slots, in's and out's spans, actions, log_probs) alive and unchanged until that batch's
/// finish() returns (the loop double-buffers its host buffers), so the engine may keep copies
/// of the spans (not of the structs, which may be temporaries) and read the inputs and write
/// the outputs at any time in between. The slots of the batches in flight are disjoint: an
/// actor sends its next step only after it got its actions, which come after finish(). So
/// reset_state() and update_parameters() between two begin() calls concern only batches begun
/// later, and an engine may apply them in its step's order. An engine may report a failed step
/// from begin() or from finish(); after one it is not called again (the loop stops). An engine
/// whose model is chosen at run time also provides `bool pipelines() const;`: when false, the
/// loop calls infer().
///
/// Optional capability, `seedrl::DeviceParameterEngine`: an engine that keeps its parameters on
/// a device takes sets there, from a device parameter source (seedrl/runtime/parameter_source.hpp:
/// the GPU trainer's parameters, with no host round trip), through
///   - `bool update_parameters_on_device(const device_parameter_copy<S>& copy);` between
///     batches: calls `copy(spare, stream)` with its parameter buffer not in use and the stream
///     its next step runs on; when that returns true (it enqueued a copy of a whole set there),
///     every later infer() uses the new set, else nothing changes. Returns what copy returned.
/// An engine whose model is chosen at run time also provides `bool takes_device_parameters()
/// const;` (false: the chosen model keeps its parameters in host memory).

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

#include "seedrl/net/agent_step_io.hpp"
#include "seedrl/runtime/parameter_store.hpp"

namespace seedrl {

/// Where an engine computes: the host's cores, or the first CUDA device. Engines of one kind
/// ignore it; any_inference_engine builds the model it names.
enum class compute_device { cpu, cuda };

/// The sizes an inference engine is built for, and where it runs.
struct inference_engine_config {
  std::size_t max_envs = 0;      ///< rows in the recurrent state table (env slots)
  std::size_t max_batch = 0;     ///< most rows one infer() gets
  std::size_t policy_width = 0;  ///< policy outputs per row (what the action sampler reads)
  /// Threads the CPU engine infers on (learner_config::inference_workers); an engine that does
  /// not run on host threads ignores it.
  std::size_t workers = 1;
  compute_device device = compute_device::cpu;  ///< any_inference_engine's choice
};

/// See the file comment.
template <class E>
concept InferenceEngine = requires {
  typename E::scalar_type;
}
&&std::floating_point<typename E::scalar_type>&& requires(
    E& e, const E& ce, std::size_t i, std::span<const std::uint32_t> slots,
    const agent_step_input<typename E::scalar_type>& in,
    const agent_step_output<typename E::scalar_type>& out,
    const parameter_store<typename E::scalar_type>& params, std::uint64_t* version) {
  { ce.max_envs() } -> std::convertible_to<std::size_t>;
  { ce.max_batch() } -> std::convertible_to<std::size_t>;
  { ce.state_width() } -> std::convertible_to<std::size_t>;
  { ce.policy_width() } -> std::convertible_to<std::size_t>;
  e.reset_state(i);
  e.infer(slots, in, out);
  { ce.state_before(i) } -> std::convertible_to<std::span<const typename E::scalar_type>>;
  { e.update_parameters(params, version) } -> std::convertible_to<bool>;
};

/// See "Optional capability" in the file comment.
template <class E>
concept SamplingInferenceEngine = InferenceEngine<E> &&
    requires(E& e, std::span<const std::uint32_t> slots,
             const agent_step_input<typename E::scalar_type>& in,
             const agent_step_output<typename E::scalar_type>& out, std::uint64_t seed,
             std::uint64_t counter, std::span<std::int32_t> actions,
             std::span<typename E::scalar_type> log_probs) {
  e.infer_and_sample(slots, in, out, seed, counter, actions, log_probs);
};

/// See "Optional capability, `seedrl::PipelinedInferenceEngine`" in the file comment. An engine
/// that samples must pipeline sampled batches too, so the loop keeps sampling where it computes.
template <class E>
concept PipelinedInferenceEngine = InferenceEngine<E> &&
    requires(E& e, std::span<const std::uint32_t> slots,
             const agent_step_input<typename E::scalar_type>& in,
             const agent_step_output<typename E::scalar_type>& out) {
  e.begin(slots, in, out);
  e.finish();
} &&(!SamplingInferenceEngine<E> ||
     requires(E & e, std::span<const std::uint32_t> slots,
              const agent_step_input<typename E::scalar_type>& in,
              const agent_step_output<typename E::scalar_type>& out, std::uint64_t seed,
              std::uint64_t counter, std::span<std::int32_t> actions,
              std::span<typename E::scalar_type> log_probs) {
       e.begin_and_sample(slots, in, out, seed, counter, actions, log_probs);
     });

/// DeviceParameterEngine's copy: enqueues on `stream` (the engine's, e.g. a cudaStream_t) a copy
/// of a whole parameter set into `spare` (device memory) and returns true, or returns false when
/// there is nothing newer.
template <class S>
using device_parameter_copy = std::function<bool(S* spare, void* stream)>;

/// See "Optional capability, `seedrl::DeviceParameterEngine`" in the file comment.
template <class E>
concept DeviceParameterEngine = InferenceEngine<E> &&
    requires(E& e, const device_parameter_copy<typename E::scalar_type>& copy) {
  { e.update_parameters_on_device(copy) } -> std::convertible_to<bool>;
};

}  // namespace seedrl
