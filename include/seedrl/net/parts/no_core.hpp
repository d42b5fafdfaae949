#pragma once
/// \file
/// `no_core<S>`: a feed-forward agent's core. It has no parameters and no state; its output is
/// its input (the torso's features, plus the reward and previous action if the agent feeds
/// them), with no copy. Models seedrl::Core (seedrl/net/parts/core.hpp).

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>

#include "seedrl/core/random.hpp"
#include "seedrl/net/parts/core.hpp"
#include "seedrl/net/tensor.hpp"

namespace seedrl {

/// No core; see the file comment.
template <std::floating_point S>
class no_core {
 public:
  struct options_type {};

  no_core(const options_type&, std::ptrdiff_t input_size) : width_(input_size) {}

  std::ptrdiff_t output_size() const noexcept { return width_; }
  std::ptrdiff_t state_size() const noexcept { return 0; }
  std::size_t num_parameters() const noexcept { return 0; }
  void bind(S*, S*) noexcept {}
  void init(random_generator&) noexcept {}

  const_matrix_view<S> step(const_matrix_view<S> x, std::span<const std::uint8_t>, matrix_view<S>) {
    return x;
  }
  const_matrix_view<S> forward_unroll(std::ptrdiff_t, std::ptrdiff_t, const_matrix_view<S> x,
                                      std::span<const std::uint8_t>, const_matrix_view<S>) {
    return x;
  }
  matrix_view<S> backward_unroll(matrix_view<S> dy) { return dy; }

 private:
  std::ptrdiff_t width_ = 0;
};

static_assert(Core<no_core<float>, float>);

}  // namespace seedrl
