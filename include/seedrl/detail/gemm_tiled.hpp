#pragma once
/// \file
/// Eigen products cut into tiles whose packing buffers stay on the stack, so that steady-state
/// inference and training never call malloc (Eigen packs with malloc above
/// EIGEN_STACK_ALLOCATION_LIMIT; the counting test in test_no_alloc.cpp only sees operator new).

#include <algorithm>
#include <cstddef>

#include "seedrl/detail/eigen_core.hpp"

namespace seedrl {

namespace detail {

/// c = a b (`accumulate` false) or c += a b, for Eigen matrices or maps with unit inner stride.
///
/// Eigen's sequential GEMM packs blocks of kc x mc and kc x nc elements, allocated with alloca
/// when they fit EIGEN_STACK_ALLOCATION_LIMIT and with malloc otherwise; its block sizes never
/// exceed the product's own (kc <= depth, mc and nc <= rows or cols). So a product whose
/// depth x rows and depth x cols both fit the limit cannot touch the heap, and this cuts any
/// product into such tiles. Cutting the depth costs one extra pass over c per tile, which
/// Eigen's own blocking does too (its kc is a few hundred).
template <class C, class A, class B>
void gemm_stack_tiled(C& c, const A& a, const B& b, bool accumulate) {
  using scalar = typename C::Scalar;
  const std::ptrdiff_t rows = c.rows(), cols = c.cols(), depth = a.cols();
  if (depth == 0) {
    if (!accumulate)
      c.setZero();
    return;
  }
  // Elements one packed block may hold (32768 floats at Eigen's default 128 KiB).
  const std::ptrdiff_t limit = std::max<std::ptrdiff_t>(
      1, EIGEN_STACK_ALLOCATION_LIMIT / static_cast<std::ptrdiff_t>(sizeof(scalar)));
  // Equal depth tiles of at most 256 leave row and column tiles of at least limit / 256.
  const std::ptrdiff_t kmax = std::min<std::ptrdiff_t>(256, limit);
  const std::ptrdiff_t depth_tiles = (depth + kmax - 1) / kmax;
  const std::ptrdiff_t kt = (depth + depth_tiles - 1) / depth_tiles;
  const std::ptrdiff_t mt = limit / kt, nt = limit / kt;
  for (std::ptrdiff_t i = 0; i < rows; i += mt) {
    const std::ptrdiff_t mi = std::min(mt, rows - i);
    for (std::ptrdiff_t j = 0; j < cols; j += nt) {
      const std::ptrdiff_t nj = std::min(nt, cols - j);
      auto ct = c.block(i, j, mi, nj);
      for (std::ptrdiff_t k = 0; k < depth; k += kt) {
        const std::ptrdiff_t kk = std::min(kt, depth - k);
        if (k == 0 && !accumulate)
          ct.noalias() = a.block(i, k, mi, kk) * b.block(k, j, kk, nj);
        else
          ct.noalias() += a.block(i, k, mi, kk) * b.block(k, j, kk, nj);
      }
    }
  }
}

}  // namespace detail

}  // namespace seedrl
