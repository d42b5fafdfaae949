#pragma once
/// \file
/// The Network plug point: the model the learner runs for inference and trains.
///
/// A type `N` models `seedrl::Network` when it provides:
///   - `using scalar_type = ...;` float or double;
///   - `using state_type = ...;` the recurrent state of a batch of environments (an empty
///     struct for a feed-forward network);
///   - `using inference_input = ...;` and `using inference_output = ...;` one step for a batch;
///   - `using unroll_input = ...;` and `using unroll_output = ...;` a `[T+1, B]` unroll;
///   - `using output_gradient = ...;` the loss's gradient with respect to `unroll_output`;
///   - `state_type initial_state(std::size_t batch_size) const;`
///   - `void infer(const inference_input&, state_type& state, inference_output&);` one
///     batched step, state read and written in place, reset to the initial state where the
///     input says `done`;
///   - `void forward_unroll(const unroll_input&, unroll_output&);` runs the unroll from its
///     stored start states, resetting at done steps, and keeps what backward needs;
///   - `void backward_unroll(const output_gradient&);` back-propagates through time into
///     `gradients()`, after a `forward_unroll`;
///   - `std::span<scalar_type> parameters();` and `std::span<scalar_type> gradients();` every
///     parameter (gradient) in one contiguous buffer of the same length, so that optimizers,
///     checkpoints and parameter publication see a single array.

#include <concepts>
#include <cstddef>
#include <span>

namespace seedrl {

/// A trainable recurrent policy; see the file comment for what it needs.
template <class N>
concept Network = std::floating_point<typename N::scalar_type> &&
    requires(N& net, const N& cnet, std::size_t batch_size, typename N::state_type& state,
             const typename N::inference_input& in, typename N::inference_output& out,
             const typename N::unroll_input& unroll, typename N::unroll_output& unroll_out,
             const typename N::output_gradient& grad) {
  { cnet.initial_state(batch_size) } -> std::same_as<typename N::state_type>;
  net.infer(in, state, out);
  net.forward_unroll(unroll, unroll_out);
  net.backward_unroll(grad);
  { net.parameters() } -> std::convertible_to<std::span<typename N::scalar_type>>;
  { net.gradients() } -> std::convertible_to<std::span<typename N::scalar_type>>;
};

}  // namespace seedrl
