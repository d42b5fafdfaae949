#pragma once
/// \file
/// The Optimizer plug point: updates a flat parameter buffer from a flat gradient buffer.
///
/// A type `O` models `seedrl::Optimizer` when it provides:
///   - `using scalar_type = ...;` float or double;
///   - `void step(std::span<scalar_type> parameters, std::span<const scalar_type> gradients);`
///     one update, in place;
///   - `std::int64_t step_count() const;` updates done so far (drives learning-rate schedules);
///   - `std::vector<std::byte> save_state() const;` and
///     `void load_state(std::span<const std::byte>);` everything needed to resume exactly, for
///     checkpoints; `load_state` throws on data it cannot use and then changes nothing.

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace seedrl {

/// A first-order optimizer over one flat parameter array; see the file comment.
template <class O>
concept Optimizer = std::floating_point<typename O::scalar_type> &&
    requires(O& opt, const O& copt, std::span<typename O::scalar_type> params,
             std::span<const typename O::scalar_type> grads, std::span<const std::byte> bytes) {
  opt.step(params, grads);
  { copt.step_count() } -> std::convertible_to<std::int64_t>;
  { copt.save_state() } -> std::same_as<std::vector<std::byte>>;
  opt.load_state(bytes);
};

}  // namespace seedrl
