#pragma once
/// \file
/// Frame geometry and stack depth of `frame_stacked` (seedrl/net/frame_stack.hpp), apart from
/// the adapter so that code which only needs the shape (a GPU trainer compiled by nvcc) does not
/// pull in Eigen.

#include <cstddef>

namespace seedrl {

/// Frame geometry and stack depth for `frame_stacked`.
struct frame_stack_config {
  std::ptrdiff_t height = 84;
  std::ptrdiff_t width = 84;
  std::ptrdiff_t channels = 1;  ///< per frame (1 for grayscale)
  std::ptrdiff_t depth = 4;     ///< frames per stack, the current one included
  bool channels_last = false;   ///< frames are H x W x C (else C x H x W); see frame_stack.hpp
};

}  // namespace seedrl
