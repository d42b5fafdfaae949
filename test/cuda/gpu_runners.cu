// The GPU side of the tests: see gpu_runners.hpp. Compiled by nvcc; includes no Eigen.

#include "gpu_runners.hpp"

#include <cstring>
#include <limits>
#include <span>
#include <stdexcept>

#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/algo/ppo_loss.hpp"
#include "seedrl/algo/r2d2_loss.hpp"
#include "seedrl/cuda/cuda_backend.cuh"
#include "seedrl/cuda/device.cuh"
#include "seedrl/cuda/lstm_step.cuh"
#include "seedrl/cuda/memory.cuh"
#include "seedrl/cuda/optimizer.cuh"
#include "seedrl/cuda/vtrace.cuh"
#include "seedrl/net/detail/lstm_stack.hpp"

namespace seedrl::test_gpu {

namespace {

template <class T>
cuda::device_buffer<T> up(const std::vector<T>& v) {
  return cuda::device_buffer<T>(std::span<const T>(v));
}

void sync() {
  SEEDRL_CUDA_CHECK(cudaDeviceSynchronize());
}

}  // namespace

std::vector<float> lstm_step(lstm_path path, const std::vector<float>& weight,
                             const std::vector<float>& bias, int I, int H, int B,
                             const std::vector<float>& x, const std::vector<std::uint8_t>& dones,
                             const std::vector<float>& state) {
  auto d_w = up(weight);
  auto d_b = up(bias);
  auto d_x = up(x);
  auto d_dones = up(dones);
  auto d_in = up(state);
  cuda::device_buffer<float> d_out(state.size());
  // NaN everywhere first: a kernel that skips an element shows up in the comparison.
  SEEDRL_CUDA_CHECK(cudaMemset(d_out.data(), 0xff, d_out.size_bytes()));
  cuda::lstm_layer_device<float> layer{d_w.data(), d_b.data(), I, H};
  cuda::lstm_step_operands<float> op;
  op.batch = B;
  op.x = d_x.data();
  op.x_stride = I;
  op.dones = dones.empty() ? nullptr : d_dones.data();
  op.h_prev = d_in.data();
  op.c_prev = d_in.data() + H;
  op.prev_stride = 2 * H;
  op.h = d_out.data();
  op.c = d_out.data() + H;
  op.out_stride = 2 * H;
  if (path == lstm_path::fused) {
    cuda::lstm_step_fused(layer, op);
  } else if (path == lstm_path::gemm) {
    cuda::blas_handle blas;
    cuda::device_buffer<float> ws(cuda::lstm_step_gemm_workspace<float>(B, H));
    cuda::lstm_step_gemm(blas.get(), layer, op, ws.data());
    sync();
  } else {
    cuda::lstm_step_runner<float> runner;
    runner.step(layer, op);
    sync();
  }
  sync();
  return d_out.to_host();
}

bool lstm_persistent(const std::vector<float>& weight, const std::vector<float>& bias, int I, int H,
                     int B, int steps, const std::vector<float>& x,
                     const std::vector<std::uint8_t>& dones, std::vector<float>& state,
                     std::vector<float>& y) {
  const cuda::device_info dev = cuda::get_device_info(0);
  if (cuda::lstm_persistent_plan<float>(B, I, H, dev).blocks == 0) {
    return false;
  }
  auto d_w = up(weight);
  auto d_b = up(bias);
  auto d_x = up(x);
  auto d_dones = up(dones);
  auto d_state = up(state);
  cuda::device_buffer<float> d_y(static_cast<std::size_t>(steps) * B * H);
  cuda::device_buffer<float> d_h(static_cast<std::size_t>(2) * B * H);
  cuda::lstm_layer_device<float> layer{d_w.data(), d_b.data(), I, H};
  cuda::lstm_persistent_steps(layer, steps, B, d_x.data(), dones.empty() ? nullptr : d_dones.data(),
                              d_state.data(), 2 * H, d_y.data(), d_h.data(), dev);
  sync();
  state = d_state.to_host();
  y = d_y.to_host();
  return true;
}

template <class S>
void vtrace(const detail::vtrace_coefficients<S>& k, int T, int B, const std::vector<S>& log_rhos,
            const std::vector<S>& discounts, const std::vector<S>& rewards,
            const std::vector<S>& values, const std::vector<S>& bootstrap, std::vector<S>& vs,
            std::vector<S>& pg_advantages) {
  auto d_lr = up(log_rhos);
  auto d_disc = up(discounts);
  auto d_rew = up(rewards);
  auto d_val = up(values);
  auto d_boot = up(bootstrap);
  cuda::device_buffer<S> d_vs(log_rhos.size());
  cuda::device_buffer<S> d_pg(log_rhos.size());
  cuda::vtrace_operands<S> op;
  op.T = T;
  op.B = B;
  op.log_rhos = d_lr.data();
  op.discounts = d_disc.data();
  op.rewards = d_rew.data();
  op.values = d_val.data();
  op.bootstrap = d_boot.data();
  op.vs = d_vs.data();
  op.pg_advantages = d_pg.data();
  cuda::vtrace(k, op);
  sync();
  vs = d_vs.to_host();
  pg_advantages = d_pg.to_host();
}

template void vtrace<float>(const detail::vtrace_coefficients<float>&, int, int,
                            const std::vector<float>&, const std::vector<float>&,
                            const std::vector<float>&, const std::vector<float>&,
                            const std::vector<float>&, std::vector<float>&, std::vector<float>&);
template void vtrace<double>(const detail::vtrace_coefficients<double>&, int, int,
                             const std::vector<double>&, const std::vector<double>&,
                             const std::vector<double>&, const std::vector<double>&,
                             const std::vector<double>&, std::vector<double>&,
                             std::vector<double>&);

void adam_step(const detail::adam_coefficients<float>& k, std::vector<float>& params,
               std::vector<float>& m, std::vector<float>& v, const std::vector<float>& grads) {
  auto d_p = up(params);
  auto d_m = up(m);
  auto d_v = up(v);
  auto d_g = up(grads);
  cuda::adam_step(k, params.size(), d_p.data(), d_m.data(), d_v.data(), d_g.data());
  sync();
  params = d_p.to_host();
  m = d_m.to_host();
  v = d_v.to_host();
}

void rmsprop_step(const detail::rmsprop_coefficients<float>& k, std::vector<float>& params,
                  std::vector<float>& v, std::vector<float>& buf, const std::vector<float>& grads) {
  auto d_p = up(params);
  auto d_v = up(v);
  auto d_buf = up(buf);
  auto d_g = up(grads);
  cuda::rmsprop_step(k, params.size(), d_p.data(), d_v.data(), buf.empty() ? nullptr : d_buf.data(),
                     d_g.data());
  sync();
  params = d_p.to_host();
  v = d_v.to_host();
  if (!buf.empty()) {
    buf = d_buf.to_host();
  }
}

// --- cuda_backend ------------------------------------------------------------------------

namespace {

// A backend buffer holding a copy of `host`.
template <class T>
cuda::device_buffer<T> backend_up(const cuda::cuda_backend& be, const std::vector<T>& host) {
  auto d = be.allocate<T>(host.size());
  be.upload(std::span<const T>(host), d.data());
  return d;
}

template <class T>
std::vector<T> backend_down(const cuda::cuda_backend& be, const cuda::device_buffer<T>& d) {
  std::vector<T> host(d.size());
  be.download(d.data(), std::span<T>(host));
  return host;
}

}  // namespace

std::vector<float> lstm_stack_run(int I, int H, int L, int T, int B,
                                  const std::vector<float>& params,
                                  const std::vector<float>& x_step,
                                  const std::vector<std::uint8_t>& resets,
                                  const std::vector<float>& state, const std::vector<float>& x,
                                  const std::vector<std::uint8_t>& dones,
                                  const std::vector<float>& start, const std::vector<float>& dy,
                                  const std::vector<float>& d_end) {
  cuda::cuda_backend be;
  const auto n = [](int v) { return static_cast<std::size_t>(v); };
  const detail::lstm_stack<float> stack(n(I), n(H), n(L), "lstm_stack_run");
  detail::lstm_stack<float>::workspace<cuda::cuda_backend> ws;
  const std::size_t W = stack.state_size();
  auto d_params = backend_up(be, params);
  auto d_grads = be.allocate<float>(params.size());
  auto d_x_step = backend_up(be, x_step);
  auto d_resets = backend_up(be, resets);
  auto d_state = backend_up(be, state);
  auto d_next = be.allocate<float>(state.size());
  stack.step(be, ws, d_params.data(), d_x_step.data(), n(I), n(B), d_resets.data(), d_state.data(),
             W, d_next.data(), W);
  auto d_x = backend_up(be, x);
  auto d_dones = backend_up(be, dones);
  auto d_start = backend_up(be, start);
  auto d_end_state = be.allocate<float>(start.size());
  const float* y = stack.forward(be, ws, d_params.data(), d_x.data(), n(I), n(T), n(B),
                                 d_dones.data(), d_start.data(), W, d_end_state.data(), W);
  auto d_dy = backend_up(be, dy);
  auto d_d_end = backend_up(be, d_end);
  auto d_dx = be.allocate<float>(x.size());
  auto d_d_start = be.allocate<float>(start.size());
  stack.backward(be, ws, d_params.data(), d_grads.data(), d_x.data(), n(I), n(T), n(B),
                 d_dones.data(), d_dy.data(), n(H), d_dx.data(), n(I), d_d_end.data(), W,
                 d_d_start.data(), W);
  std::vector<float> out = backend_down(be, d_next);
  std::vector<float> y_host(n(T) * n(B) * n(H));
  be.download(y, std::span<float>(y_host));
  for (const auto& part : {y_host, backend_down(be, d_end_state), backend_down(be, d_grads),
                           backend_down(be, d_dx), backend_down(be, d_d_start)})
    out.insert(out.end(), part.begin(), part.end());
  return out;
}

template <class S>
std::vector<S> backend_gemm(bool trans_a, bool trans_b, int m, int n, int k, S alpha,
                            const std::vector<S>& a, int lda, const std::vector<S>& b, int ldb,
                            S beta, const std::vector<S>& c, int ldc) {
  cuda::cuda_backend be;
  auto d_a = backend_up(be, a);
  auto d_b = backend_up(be, b);
  auto d_c = backend_up(be, c);
  be.gemm(trans_a, trans_b, m, n, k, alpha, static_cast<const S*>(d_a.data()), lda,
          static_cast<const S*>(d_b.data()), ldb, beta, d_c.data(), ldc);
  return backend_down(be, d_c);
}

template std::vector<float> backend_gemm<float>(bool, bool, int, int, int, float,
                                                const std::vector<float>&, int,
                                                const std::vector<float>&, int, float,
                                                const std::vector<float>&, int);
template std::vector<double> backend_gemm<double>(bool, bool, int, int, int, double,
                                                  const std::vector<double>&, int,
                                                  const std::vector<double>&, int, double,
                                                  const std::vector<double>&, int);

std::vector<float> backend_for_each_axpy(float a, const std::vector<float>& x,
                                         const std::vector<float>& y) {
  cuda::cuda_backend be;
  auto d_x = backend_up(be, x);
  auto d_y = backend_up(be, y);
  be.for_each(x.size(), axpy_body{a, d_x.data(), d_y.data()});
  return backend_down(be, d_y);
}

template <class T>
std::vector<T> backend_fill(std::size_t n, std::size_t offset, std::size_t count, T value) {
  cuda::cuda_backend be;
  auto d = be.allocate<T>(n);
  // allocate must give zeros even where cudaMalloc left garbage: check before filling.
  const std::vector<T> zeros = backend_down(be, d);
  for (const T& z : zeros) {
    T zero{};
    if (std::memcmp(&z, &zero, sizeof(T)) != 0) {
      throw std::runtime_error("backend_fill: allocate did not return zeros");
    }
  }
  be.fill(d.data() + offset, count, value);
  auto d2 = be.allocate<T>(n);
  be.copy(static_cast<const T*>(d.data()), d2.data(), n);
  return backend_down(be, d2);
}

template std::vector<float> backend_fill<float>(std::size_t, std::size_t, std::size_t, float);
template std::vector<std::int32_t> backend_fill<std::int32_t>(std::size_t, std::size_t, std::size_t,
                                                              std::int32_t);
template std::vector<std::uint8_t> backend_fill<std::uint8_t>(std::size_t, std::size_t, std::size_t,
                                                              std::uint8_t);

template <class S>
double backend_sum_of_squares(const std::vector<S>& x) {
  cuda::cuda_backend be;
  auto d = backend_up(be, x);
  return be.sum_of_squares(static_cast<const S*>(d.data()), x.size());
}

template double backend_sum_of_squares<float>(const std::vector<float>&);
template double backend_sum_of_squares<double>(const std::vector<double>&);

std::vector<double> backend_sums(const std::vector<double>& x, std::size_t arrays, std::size_t n) {
  cuda::cuda_backend be;
  auto d = backend_up(be, x);
  std::vector<double> out(arrays, -1.0);
  be.sums(static_cast<const double*>(d.data()), arrays, n, std::span<double>(out));
  return out;
}

namespace {

/// A loss batch's arrays on the device, with NaN-filled gradients (every element must be
/// written), and the operand fields both losses share.
struct device_loss_batch {
  cuda::device_buffer<float> logits, values, behaviour, rewards, proximal, old_values, gl, gv;
  cuda::device_buffer<std::int32_t> actions;
  cuda::device_buffer<std::uint8_t> dones, truncated;

  device_loss_batch(const cuda::cuda_backend& be, const loss_arrays& b)
      : logits(backend_up(be, b.logits)),
        values(backend_up(be, b.values)),
        behaviour(backend_up(be, b.behaviour_log_probs)),
        rewards(backend_up(be, b.rewards)),
        proximal(backend_up(be, b.proximal_logits)),
        old_values(backend_up(be, b.old_values)),
        gl(be.allocate<float>(b.logits.size())),
        gv(be.allocate<float>(b.values.size())),
        actions(backend_up(be, b.actions)),
        dones(backend_up(be, b.dones)),
        truncated(backend_up(be, b.truncated)) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    be.fill(gl.data(), gl.size(), nan);
    be.fill(gv.data(), gv.size(), nan);
  }

  template <class Operands>
  void fill(Operands& op, const loss_arrays& b) {
    op.T = b.T;
    op.B = b.B;
    op.policy =
        seedrl::policy_rows<float>{logits.data(), static_cast<std::size_t>(b.A), actions.data()};
    op.values = values.data();
    op.behaviour_log_probs = behaviour.data();
    op.rewards = rewards.data();
    op.dones = dones.data();
    op.truncated = truncated.data();
    op.grad_logits = gl.data();
    op.grad_values = gv.data();
  }

  loss_terms finish(const cuda::cuda_backend& be, loss_terms terms, std::vector<float>& grad_logits,
                    std::vector<float>& grad_values) const {
    grad_logits = backend_down(be, gl);
    grad_values = backend_down(be, gv);
    return terms;
  }
};

}  // namespace

loss_terms backend_impala_loss(const impala_loss_config<float>& config, const loss_arrays& batch,
                               std::vector<float>& grad_logits, std::vector<float>& grad_values) {
  cuda::cuda_backend be;
  device_loss_batch d(be, batch);
  seedrl::impala_loss_operands<float> op;
  d.fill(op, batch);
  seedrl::impala_loss_workspace<cuda::cuda_backend, float> ws;
  return d.finish(be, seedrl::impala_loss<float>(config).compute(be, op, ws), grad_logits,
                  grad_values);
}

loss_terms backend_ppo_loss(const ppo_loss_config<float>& config, const loss_arrays& batch,
                            std::vector<float>& grad_logits, std::vector<float>& grad_values) {
  cuda::cuda_backend be;
  device_loss_batch d(be, batch);
  seedrl::ppo_loss_operands<float> op;
  d.fill(op, batch);
  if (!batch.proximal_logits.empty()) {
    op.proximal = seedrl::policy_rows<float>{d.proximal.data(), static_cast<std::size_t>(batch.A),
                                             d.actions.data()};
  }
  op.old_values = batch.old_values.empty() ? nullptr : d.old_values.data();
  seedrl::ppo_loss_workspace<cuda::cuda_backend, float> ws;
  return d.finish(be, seedrl::ppo_loss<float>(config).compute(be, op, ws), grad_logits,
                  grad_values);
}

loss_terms backend_r2d2_loss(const r2d2_loss_config<float>& config, const loss_arrays& batch,
                             std::vector<float>& grad_logits, std::vector<float>& grad_values,
                             std::vector<double>& priorities) {
  cuda::cuda_backend be;
  device_loss_batch d(be, batch);
  auto target_logits = backend_up(be, batch.target_logits);
  auto target_values = backend_up(be, batch.target_values);
  auto weights = backend_up(be, batch.importance_weights);
  seedrl::r2d2_loss_operands<float> op;
  op.T = batch.T;
  op.B = batch.B;
  op.A = batch.A;
  op.burn_in = static_cast<int>(config.burn_in);
  op.logits = d.logits.data();
  op.values = d.values.data();
  op.target_logits = target_logits.data();
  op.target_values = target_values.data();
  op.actions = d.actions.data();
  op.rewards = d.rewards.data();
  op.dones = d.dones.data();
  op.truncated = d.truncated.data();
  op.importance_weights = batch.importance_weights.empty() ? nullptr : weights.data();
  op.grad_logits = d.gl.data();
  op.grad_values = d.gv.data();
  priorities.assign(static_cast<std::size_t>(batch.B), -1.0);
  seedrl::r2d2_loss_workspace<cuda::cuda_backend, float> ws;
  return d.finish(be, seedrl::r2d2_loss<float>(config).compute(be, op, ws, priorities), grad_logits,
                  grad_values);
}

template <class S>
conv2d_run<S> backend_conv2d(const conv2d_shape& shape, const std::vector<S>& x,
                             const std::vector<S>& w, const std::vector<S>& bias,
                             const std::vector<S>& dy, const std::vector<S>& dw0,
                             const std::vector<S>& dbias0) {
  const auto n = static_cast<std::size_t>(shape.batch);
  const std::size_t in = static_cast<std::size_t>(shape.in_channels) *
                         static_cast<std::size_t>(shape.input_height) *
                         static_cast<std::size_t>(shape.input_width);
  const std::size_t out = static_cast<std::size_t>(shape.out_channels) *
                          static_cast<std::size_t>(shape.output_height()) *
                          static_cast<std::size_t>(shape.output_width());
  if (x.size() != n * in || dy.size() != n * out || bias.size() != dbias0.size() ||
      w.size() != dw0.size()) {
    throw std::invalid_argument("backend_conv2d: inputs do not match the shape");
  }
  cuda::cuda_backend be;
  auto d_x = backend_up(be, x);
  auto d_w = backend_up(be, w);
  auto d_bias = backend_up(be, bias);
  auto d_dy = backend_up(be, dy);
  auto d_dw = backend_up(be, dw0);
  auto d_dbias = backend_up(be, dbias0);
  auto d_dw2 = backend_up(be, dw0);
  auto d_dbias2 = backend_up(be, dbias0);
  auto d_y = be.allocate<S>(n * out);
  auto d_dx = be.allocate<S>(n * in);
  const S nan = std::numeric_limits<S>::quiet_NaN();
  be.fill(d_y.data(), d_y.size(), nan);
  be.fill(d_dx.data(), d_dx.size(), nan);
  const S* cx = d_x.data();
  const S* cw = d_w.data();
  const S* cdy = d_dy.data();
  be.conv2d_forward(shape, cx, cw, static_cast<const S*>(d_bias.data()), d_y.data());
  be.conv2d_backward(shape, cx, cw, cdy, d_dx.data(), d_dw.data(), d_dbias.data());
  be.conv2d_backward(shape, cx, cw, cdy, static_cast<S*>(nullptr), d_dw2.data(), d_dbias2.data());
  conv2d_run<S> r;
  r.y = backend_down(be, d_y);
  r.dx = backend_down(be, d_dx);
  r.dw = backend_down(be, d_dw);
  r.dbias = backend_down(be, d_dbias);
  r.dw_no_dx = backend_down(be, d_dw2);
  r.dbias_no_dx = backend_down(be, d_dbias2);
  return r;
}

template conv2d_run<float> backend_conv2d<float>(const conv2d_shape&, const std::vector<float>&,
                                                 const std::vector<float>&,
                                                 const std::vector<float>&,
                                                 const std::vector<float>&,
                                                 const std::vector<float>&,
                                                 const std::vector<float>&);
template conv2d_run<double> backend_conv2d<double>(const conv2d_shape&, const std::vector<double>&,
                                                   const std::vector<double>&,
                                                   const std::vector<double>&,
                                                   const std::vector<double>&,
                                                   const std::vector<double>&,
                                                   const std::vector<double>&);

bool backend_conv2d_refuses(const conv2d_shape& shape) {
  cuda::cuda_backend be;
  auto d = be.allocate<float>(1);
  const float* c = d.data();
  const auto refuses = [](auto&& call) {
    try {
      call();
    } catch (const std::invalid_argument&) {
      return true;
    }
    return false;
  };
  const bool forward = refuses([&] { be.conv2d_forward(shape, c, c, c, d.data()); });
  const bool backward =
      refuses([&] { be.conv2d_backward(shape, c, c, c, d.data(), d.data(), d.data()); });
  const bool params = refuses([&] {
    be.conv2d_backward(shape, c, c, c, static_cast<float*>(nullptr), d.data(), d.data());
  });
  be.synchronize();
  return forward && backward && params;
}

}  // namespace seedrl::test_gpu
