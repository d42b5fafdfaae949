#pragma once
/// \file
/// The per-element arithmetic of one LSTM cell, forward and backward, shared by the CPU layer
/// and the CUDA kernels so that both compute the same thing. Gate order is PyTorch's:
/// input (i), forget (f), cell candidate (g), output (o).

#include <cmath>

#include "seedrl/core/config.hpp"
#include "seedrl/net/activation_math.hpp"

namespace seedrl::detail {

/// Activated gates and the new cell state for one unit.
template <class S>
struct lstm_unit_forward {
  S i, f, g, o;  ///< gates after their nonlinearity
  S c;           ///< new cell state
  S tanh_c;      ///< tanh(c), kept for backward
  S h;           ///< new hidden state, o * tanh(c)
};

/// One unit's forward step from its four gate pre-activations and the previous cell state.
template <class S>
SEEDRL_HOST_DEVICE lstm_unit_forward<S> lstm_unit(S zi, S zf, S zg, S zo, S c_prev) {
  using std::tanh;
  lstm_unit_forward<S> r;
  r.i = sigmoid(zi);
  r.f = sigmoid(zf);
  r.g = tanh(zg);
  r.o = sigmoid(zo);
  r.c = r.f * c_prev + r.i * r.g;
  r.tanh_c = tanh(r.c);
  r.h = r.o * r.tanh_c;
  return r;
}

/// Gradients of one unit's gate pre-activations and of its previous cell state.
template <class S>
struct lstm_unit_backward {
  S dzi, dzf, dzg, dzo;
  S dc_prev;
};

/// Back-propagates one unit: `dh` and `dc` are the loss's gradients w.r.t. this step's h and
/// c coming from later steps and layers (dc excludes the path through h, added here).
template <class S>
SEEDRL_HOST_DEVICE lstm_unit_backward<S> lstm_unit_grad(S i, S f, S g, S o, S tanh_c, S c_prev,
                                                        S dh, S dc) {
  const S dc_total = dc + dh * o * tanh_grad_from_output(tanh_c);
  lstm_unit_backward<S> r;
  r.dzi = dc_total * g * sigmoid_grad_from_output(i);
  r.dzf = dc_total * c_prev * sigmoid_grad_from_output(f);
  r.dzg = dc_total * i * tanh_grad_from_output(g);
  r.dzo = dh * tanh_c * sigmoid_grad_from_output(o);
  r.dc_prev = dc_total * f;
  return r;
}

}  // namespace seedrl::detail
