#pragma once
/// \file
/// `detail::contiguous_rows`: a batch view's rows without gaps, for parts over the backend,
/// whose primitives read packed rows (the CPU adapter `backend_feature_stack`).

#include <concepts>
#include <cstddef>
#include <vector>

#include "seedrl/net/tensor.hpp"

namespace seedrl::detail {

/// x's own data where its rows are packed (or there is one row), else a copy of its rows in
/// `copy` (grown as needed, so a steady batch size allocates once).
template <std::floating_point S>
const S* contiguous_rows(const_matrix_view<S> x, std::vector<S>& copy) {
  if (x.outerStride() == x.cols() || x.rows() <= 1)
    return x.data();
  const auto n = static_cast<std::size_t>(x.rows() * x.cols());
  if (copy.size() < n)
    copy.resize(n);
  view(copy.data(), x.rows(), x.cols()) = x;
  return copy.data();
}

}  // namespace seedrl::detail
