#pragma once
/// \file
/// `detail::lstm_cell_rows`: the LSTM cell update (detail::lstm_unit's arithmetic) over B rows
/// of gate pre-activations in one pass of Eigen's SIMD packets, on the host. Eigen's block
/// expressions over strided rows peel every row to the packet alignment one scalar at a time,
/// which at H = 64 and AVX-512 ran about half the transcendental calls unvectorised and took
/// four passes over the gates; here each packet of units is loaded once, with unaligned loads.
/// The logistic and tanh are Eigen's (its float approximations), as the CPU layer always ran
/// them; a row's tail is the same functions on scalars.

#include <cstddef>

#include "seedrl/detail/eigen_core.hpp"

// A packet type as a template argument drops its vector attributes, which GCC warns about;
// Eigen silences the same warning inside its own headers.
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wignored-attributes"
#endif

namespace seedrl::detail {

/// Where lstm_cell_rows writes, each row-major with its own row stride; a null pointer skips
/// that output.
template <class S>
struct lstm_cell_outputs {
  S* c = nullptr;  ///< the new cell state
  std::size_t ld_c = 0;
  S* tanh_c = nullptr;  ///< tanh(c), what the backward reads
  std::size_t ld_tanh_c = 0;
  S* h = nullptr;  ///< the new hidden state
  std::size_t ld_h = 0;
  bool keep_gates = false;  ///< write the activated gates back over the pre-activations
};

/// For rows b < B and units j < H: gates [B, 4H] (row stride ld_gates; PyTorch's order i, f,
/// g, o, without the bias) + bias, the gates' nonlinearities, c = f c_prev + i g (c_prev row
/// stride ld_c_prev), tanh(c) and h = o tanh(c), into `out`.
template <class S>
void lstm_cell_rows(std::size_t B, std::size_t H, S* gates, std::size_t ld_gates, const S* bias,
                    const S* c_prev, std::size_t ld_c_prev, const lstm_cell_outputs<S>& out) {
  namespace ei = Eigen::internal;
  using packet = typename ei::packet_traits<S>::type;
  constexpr std::size_t P = ei::packet_traits<S>::Vectorizable && ei::packet_traits<S>::HasTanh
                                ? static_cast<std::size_t>(ei::packet_traits<S>::size)
                                : 1;
  const ei::scalar_logistic_op<S> logistic;
  const ei::scalar_tanh_op<S> tanh;
  for (std::size_t b = 0; b < B; ++b) {
    S* z = gates + b * ld_gates;
    const S* cp = c_prev + b * ld_c_prev;
    S* c = out.c != nullptr ? out.c + b * out.ld_c : nullptr;
    S* tc = out.tanh_c != nullptr ? out.tanh_c + b * out.ld_tanh_c : nullptr;
    S* h = out.h != nullptr ? out.h + b * out.ld_h : nullptr;
    std::size_t j = 0;
    if constexpr (P > 1) {
      for (; j + P <= H; j += P) {
        const auto gate = [&](std::size_t k) {
          return ei::padd(ei::ploadu<packet>(z + k * H + j), ei::ploadu<packet>(bias + k * H + j));
        };
        const packet i = logistic.packetOp(gate(0));
        const packet f = logistic.packetOp(gate(1));
        const packet g = tanh.packetOp(gate(2));
        const packet o = logistic.packetOp(gate(3));
        const packet cn = ei::padd(ei::pmul(f, ei::ploadu<packet>(cp + j)), ei::pmul(i, g));
        const packet t = tanh.packetOp(cn);
        if (out.keep_gates) {
          ei::pstoreu(z + j, i);
          ei::pstoreu(z + H + j, f);
          ei::pstoreu(z + 2 * H + j, g);
          ei::pstoreu(z + 3 * H + j, o);
        }
        if (c != nullptr)
          ei::pstoreu(c + j, cn);
        if (tc != nullptr)
          ei::pstoreu(tc + j, t);
        if (h != nullptr)
          ei::pstoreu(h + j, ei::pmul(o, t));
      }
    }
    for (; j < H; ++j) {
      const S i = logistic(z[j] + bias[j]);
      const S f = logistic(z[H + j] + bias[H + j]);
      const S g = tanh(z[2 * H + j] + bias[2 * H + j]);
      const S o = logistic(z[3 * H + j] + bias[3 * H + j]);
      const S cn = f * cp[j] + i * g;
      const S t = tanh(cn);
      if (out.keep_gates) {
        z[j] = i;
        z[H + j] = f;
        z[2 * H + j] = g;
        z[3 * H + j] = o;
      }
      if (c != nullptr)
        c[j] = cn;
      if (tc != nullptr)
        tc[j] = t;
      if (h != nullptr)
        h[j] = o * t;
    }
  }
}

}  // namespace seedrl::detail

#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
