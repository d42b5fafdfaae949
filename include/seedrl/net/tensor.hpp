#pragma once
/// \file
/// Row-major matrix views over caller-owned memory. Networks keep every parameter in one flat
/// buffer and every activation in preallocated workspaces; layers see them through these views,
/// so no layer owns or allocates memory on the inference path. An outer stride lets a view
/// address a block of columns in a wider buffer, which is how concatenation costs no copy.

#include <concepts>
#include <cstddef>

#include "seedrl/detail/eigen_core.hpp"

namespace seedrl {

/// A dense row-major matrix type with run-time sizes.
template <std::floating_point S>
using row_matrix = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// A mutable row-major view: `rows x cols`, consecutive rows `stride` elements apart.
template <std::floating_point S>
using matrix_view = Eigen::Map<row_matrix<S>, Eigen::Unaligned, Eigen::OuterStride<>>;

/// A read-only row-major view.
template <std::floating_point S>
using const_matrix_view = Eigen::Map<const row_matrix<S>, Eigen::Unaligned, Eigen::OuterStride<>>;

/// Views `rows x cols` elements at `data`, rows `stride` apart (`stride` = 0 means `cols`).
template <std::floating_point S>
matrix_view<S> view(S* data, std::ptrdiff_t rows, std::ptrdiff_t cols, std::ptrdiff_t stride = 0) {
  return matrix_view<S>(data, rows, cols, Eigen::OuterStride<>(stride ? stride : cols));
}

/// Read-only counterpart of `view`.
template <std::floating_point S>
const_matrix_view<S> cview(const S* data, std::ptrdiff_t rows, std::ptrdiff_t cols,
                           std::ptrdiff_t stride = 0) {
  return const_matrix_view<S>(data, rows, cols, Eigen::OuterStride<>(stride ? stride : cols));
}

/// Read-only view of a mutable view, same shape and stride.
template <std::floating_point S>
const_matrix_view<S> cview(const matrix_view<S>& m) {
  return cview(m.data(), m.rows(), m.cols(), m.outerStride());
}

/// A view's rows and row stride as std::size_t: what the backend primitives take with its data.
template <class View>
std::size_t view_rows(const View& v) noexcept {
  return static_cast<std::size_t>(v.rows());
}
template <class View>
std::size_t view_stride(const View& v) noexcept {
  return static_cast<std::size_t>(v.outerStride());
}

}  // namespace seedrl
