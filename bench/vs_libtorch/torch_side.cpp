// libtorch's side of vs_libtorch.cpp, built as a module that the benchmark loads with
// RTLD_DEEPBIND. Why apart: the PyPI wheel's libtorch_cpu carries its own oneDNN (3.x) and
// exports a few of its template symbols (the call_once thunks of its GEMM kernels' JIT
// initialisation); in one symbol scope with Debian's oneDNN 2.6, that library's dnnl_sgemm
// bound to torch's thunk, never built its kernels, and failed (status unimplemented). Loaded
// deep-bound, libtorch resolves to itself and seedrl's oneDNN to itself.
//
// The interface is C: operands come in as float arrays (copied), each case is an opaque
// handle, and a call runs one forward, one backward or one LSTM step.
#include <torch/torch.h>

#include <vector>

namespace {

struct conv_case {
  torch::Tensor x, w, b, dy;
  std::vector<std::int64_t> stride, padding;
  bool input_grad;
};

struct lstm_case {
  torch::Tensor x, h, c, w_ih, w_hh, b_ih, b_hh;
};

torch::Tensor copy_of(const float* p, std::vector<std::int64_t> shape) {
  return torch::from_blob(const_cast<float*>(p), shape).clone();
}

}  // namespace

extern "C" {

/// One thread for everything (intra- and inter-op), no autograd; returns the version.
const char* seedrl_torch_init() {
  at::set_num_threads(1);
  at::set_num_interop_threads(1);
  c10::GradMode::set_enabled(false);
  return TORCH_VERSION;
}

/// geometry: C, H, W, O, KH, KW, SH, SW, PH, PW.
void* seedrl_torch_conv_new(const long* g, long n, int input_grad, const float* x, const float* w,
                            const float* b, const float* dy) {
  const long C = g[0], H = g[1], W = g[2], O = g[3], KH = g[4], KW = g[5], SH = g[6], SW = g[7],
             PH = g[8], PW = g[9];
  const long OH = (H + 2 * PH - KH) / SH + 1, OW = (W + 2 * PW - KW) / SW + 1;
  return new conv_case{copy_of(x, {n, C, H, W}),
                       copy_of(w, {O, C, KH, KW}),
                       copy_of(b, {O}),
                       copy_of(dy, {n, O, OH, OW}),
                       {SH, SW},
                       {PH, PW},
                       input_grad != 0};
}

void seedrl_torch_conv_forward(void* handle) {
  const auto& c = *static_cast<conv_case*>(handle);
  (void)at::conv2d(c.x, c.w, c.b, c.stride, c.padding);
}

/// The gradients of weights, bias and (unless the case's input is pixels) the input.
void seedrl_torch_conv_backward(void* handle) {
  const auto& c = *static_cast<conv_case*>(handle);
  (void)at::convolution_backward(c.dy, c.x, c.w, c10::IntArrayRef{c.w.size(0)}, c.stride, c.padding,
                                 {1, 1}, false, {0, 0}, 1, {c.input_grad, true, true});
}

void seedrl_torch_conv_delete(void* handle) {
  delete static_cast<conv_case*>(handle);
}

/// An LSTM cell of input = hidden = H at batch B; x is [B, H]; weights random (N(0, 0.05^2)).
void* seedrl_torch_lstm_new(long B, long H, const float* x) {
  return new lstm_case{copy_of(x, {B, H}),
                       torch::zeros({B, H}),
                       torch::zeros({B, H}),
                       torch::randn({4 * H, H}) * 0.05,
                       torch::randn({4 * H, H}) * 0.05,
                       torch::randn({4 * H}) * 0.05,
                       torch::randn({4 * H}) * 0.05};
}

void seedrl_torch_lstm_step(void* handle) {
  const auto& l = *static_cast<lstm_case*>(handle);
  (void)at::lstm_cell(l.x, {l.h, l.c}, l.w_ih, l.w_hh, l.b_ih, l.b_hh);
}

void seedrl_torch_lstm_delete(void* handle) {
  delete static_cast<lstm_case*>(handle);
}

}  // extern "C"
