#pragma once
/// \file
/// PyTorch's default start for a layer (nn.Linear, nn.Conv2d: kaiming-uniform with a = sqrt(5)
/// for the weights, its bias rule for the biases): every parameter uniform in
/// +-gain/sqrt(fan_in), weights then biases, drawn in order. One function for the dense layers
/// (`init_linear_parameters`), the CPU convolution (`conv2d::init`) and the backend conv torsos,
/// so that a network draws the same numbers whichever stack builds it. No Eigen: headers nvcc
/// compiles include it.

#include <cmath>
#include <cstddef>

#include "seedrl/core/random.hpp"

namespace seedrl::detail {

/// Writes `count` values uniform in +-gain/sqrt(fan_in) to `params`, in order.
template <class S>
void pytorch_default_fill(random_generator& rng, S* params, std::size_t count, std::size_t fan_in,
                          double gain = 1.0) {
  const double bound = gain / std::sqrt(static_cast<double>(fan_in));
  for (std::size_t i = 0; i < count; ++i)
    params[i] = static_cast<S>(rng.uniform(-bound, bound));
}

}  // namespace seedrl::detail
