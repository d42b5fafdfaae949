#pragma once
/// \file
/// The optimizer's per-element bodies (backend_optimizer.hpp: Adam, RMSProp, the clip's
/// scaling), trivially copyable functors that a ComputeBackend runs with `for_each(n, f)`, a
/// loop on the CPU and a kernel launch on a GPU, over the SEEDRL_HOST_DEVICE arithmetic of
/// seedrl::adam and seedrl::rmsprop (optimizer_math.hpp).

#include <cstddef>

#include "seedrl/core/config.hpp"
#include "seedrl/detail/optimizer_math.hpp"

namespace seedrl::detail {

/// x[i] *= factor.
template <class S>
struct scale_kernel {
  S* x;
  S factor;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const { x[i] *= factor; }
};

/// One Adam update per element (seedrl::adam's arithmetic).
template <class S>
struct adam_step_kernel {
  adam_coefficients<S> k;
  S* params;
  const S* grads;
  S* m;
  S* v;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    adam_update<S>(k, params[i], m[i], v[i], grads[i]);
  }
};

/// One RMSProp update per element without momentum (seedrl::rmsprop's arithmetic).
template <class S>
struct rmsprop_step_kernel {
  rmsprop_coefficients<S> k;
  S* params;
  const S* grads;
  S* v;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    rmsprop_update<S>(k, params[i], v[i], grads[i]);
  }
};

/// One RMSProp update per element with momentum (seedrl::rmsprop's arithmetic).
template <class S>
struct rmsprop_momentum_step_kernel {
  rmsprop_coefficients<S> k;
  S* params;
  const S* grads;
  S* v;
  S* momentum_buffer;

  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    rmsprop_momentum_update<S>(k, params[i], v[i], momentum_buffer[i], grads[i]);
  }
};

}  // namespace seedrl::detail
