#pragma once
/// \file
/// `small_conv_config`: the shape of the small conv stack (net/detail/small_conv_torso.hpp),
/// apart from the network so that code which only needs the shape (a GPU trainer compiled by
/// nvcc) does not pull in Eigen.

#include <cstddef>
#include <vector>

namespace seedrl {

/// Output channels of each 3x3 convolution, and the zero padding on each side of each (0: a
/// 10x10 image shrinks to 8x8 then 6x6; 1: it stays 10x10).
struct small_conv_config {
  std::vector<std::ptrdiff_t> channels{16, 32};
  std::ptrdiff_t padding = 0;
};

}  // namespace seedrl
