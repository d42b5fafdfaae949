// seedrl against libtorch (PyPI torch's CPU kernels: oneDNN/MKL) in one process, one thread
// each, the two alternating sample by sample so that the machine's load hits both alike.
// Times are the calling thread's CPU time (both sides run on it), so a loaded machine's
// preemptions count for neither. Prints, per case, the median time of each and the median of
// the paired samples' ratios libtorch / seedrl (above 1: seedrl is faster). Cases:
//   - the Nature CNN's three convolutions (32x8x8/4, 64x4x4/2, 64x3x3/1 on 84x84x4) and the
//     IMPALA ResNet's fifteen (16, 32, 32 channels, 3x3 padding 1 at 84, 42 and 21 pixels), each
//     on an input of its own, forward and forward + backward (weights, bias and, except for the
//     first layer, whose input is pixels, the input);
//   - one LSTM step (input = hidden = H, batch B; libtorch's lstm_cell, seedrl's lstm::step).
// libtorch runs in a module of its own (torch_side.cpp, loaded deep-bound; see there why).
// Usage: seedrl_vs_libtorch [--quick] [--samples N] [--im2col] [--module PATH]
//   --quick: batches 1 and 32 only; --im2col: seedrl's convolutions without oneDNN (no LSTM cases).
#include <dlfcn.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "../conv_shapes.hpp"
#include "seedrl/backend/host_backend.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/detail/dnnl_conv2d.hpp"
#include "seedrl/detail/dnnl_runtime.hpp"
#include "seedrl/net/lstm.hpp"
#include "seedrl/net/tensor.hpp"

namespace {

/// torch_side.cpp's functions, looked up in the module.
struct torch_api {
  const char* (*init)();
  void* (*conv_new)(const long*, long, int, const float*, const float*, const float*, const float*);
  void (*conv_forward)(void*);
  void (*conv_backward)(void*);
  void (*conv_delete)(void*);
  void* (*lstm_new)(long, long, const float*);
  void (*lstm_step)(void*);
  void (*lstm_delete)(void*);

  explicit torch_api(const char* path) {
    // RTLD_DEEPBIND: libtorch and its oneDNN resolve to themselves first (torch_side.cpp).
    void* m = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND);
    if (m == nullptr)
      throw std::runtime_error(std::string("cannot load the libtorch module: ") + dlerror());
    const auto get = [&](auto& f, const char* name) {
      void* p = dlsym(m, name);
      if (p == nullptr)
        throw std::runtime_error(std::string("the libtorch module lacks ") + name);
      f = reinterpret_cast<std::remove_reference_t<decltype(f)>>(p);
    };
    get(init, "seedrl_torch_init");
    get(conv_new, "seedrl_torch_conv_new");
    get(conv_forward, "seedrl_torch_conv_forward");
    get(conv_backward, "seedrl_torch_conv_backward");
    get(conv_delete, "seedrl_torch_conv_delete");
    get(lstm_new, "seedrl_torch_lstm_new");
    get(lstm_step, "seedrl_torch_lstm_step");
    get(lstm_delete, "seedrl_torch_lstm_delete");
  }
};

/// This thread's CPU time in seconds: both sides run on the calling thread (one thread each),
/// so time spent descheduled on a loaded machine counts for neither.
double thread_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

double seconds_of(const std::function<void()>& f, int iterations) {
  const double t0 = thread_seconds();
  for (int i = 0; i < iterations; ++i)
    f();
  return (thread_seconds() - t0) / iterations;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Times `ours` and `theirs` alternately, `samples` pairs of samples of about 10 ms each;
/// prints the median times and the median of the pairs' ratios (libtorch / seedrl).
void compare(const std::string& name, const std::function<void()>& ours,
             const std::function<void()>& theirs, int samples) {
  ours();  // warm-up: primitives built, buffers grown, caches filled
  theirs();
  ours();
  theirs();
  const double one = std::max(seconds_of(ours, 1), seconds_of(theirs, 1));
  const int iterations = std::max(1, static_cast<int>(0.01 / std::max(one, 1e-9)));
  std::vector<double> a, b, r;
  for (int s = 0; s < samples; ++s) {
    b.push_back(seconds_of(theirs, iterations));
    a.push_back(seconds_of(ours, iterations));
    r.push_back(b.back() / a.back());
  }
  const double ratio = median(r);
  std::printf("| %s | %.4g | %.4g | %s%.2f%s |\n", name.c_str(), median(b) * 1e3, median(a) * 1e3,
              ratio < 1.0 ? "**" : "", ratio, ratio < 1.0 ? "**" : "");
  std::fflush(stdout);
}

std::vector<float> random_floats(std::size_t n, seedrl::random_generator& rng) {
  std::vector<float> v(n);
  for (auto& x : v)
    x = static_cast<float>(rng.uniform(-1.0, 1.0));
  return v;
}

/// One convolution with its operands on both sides, sharing weights and inputs. Ours is
/// host_backend's conv2d primitive (what the conv stacks run), on the backend of its network.
struct conv_case {
  const torch_api* api;
  const seedrl::host_backend* backend;
  seedrl::conv2d_shape shape;
  std::vector<float> w, bias, dw, dbias, x, y, dy, dx;
  void* theirs;
  bool input_grad;

  conv_case(const torch_api& t, const seedrl::host_backend& be, const seedrl::conv2d_shape& c,
            int n, bool first, seedrl::random_generator& rng)
      : api(&t), backend(&be), shape(c), input_grad(!first) {
    shape.batch = n;
    const auto in = static_cast<std::size_t>(c.in_channels * c.input_height * c.input_width);
    const auto out =
        static_cast<std::size_t>(c.out_channels * c.output_height() * c.output_width());
    const auto N = static_cast<std::size_t>(n);
    w = random_floats(
        static_cast<std::size_t>(c.out_channels * c.in_channels * c.kernel_h * c.kernel_w), rng);
    bias = random_floats(static_cast<std::size_t>(c.out_channels), rng);
    dw.assign(w.size(), 0.0f);
    dbias.assign(bias.size(), 0.0f);
    x = random_floats(N * in, rng);
    dy = random_floats(N * out, rng);
    y.resize(dy.size());
    dx.resize(x.size());
    const long g[] = {c.in_channels, c.input_height, c.input_width, c.out_channels, c.kernel_h,
                      c.kernel_w,    c.stride_h,     c.stride_w,    c.padding_h,    c.padding_w};
    theirs = api->conv_new(g, n, input_grad ? 1 : 0, x.data(), w.data(), bias.data(), dy.data());
  }
  conv_case(const conv_case&) = delete;
  conv_case& operator=(const conv_case&) = delete;
  ~conv_case() { api->conv_delete(theirs); }

  void ours_forward() { backend->conv2d_forward(shape, x.data(), w.data(), bias.data(), y.data()); }
  /// The first layer of a network needs no input gradient.
  void ours_backward() {
    backend->conv2d_backward(shape, x.data(), w.data(), dy.data(), input_grad ? dx.data() : nullptr,
                             dw.data(), dbias.data());
  }
  void theirs_forward() const { api->conv_forward(theirs); }
  void theirs_backward() const { api->conv_backward(theirs); }
};

void conv_cases(const torch_api& api, const char* net,
                const std::vector<seedrl::conv2d_shape>& layers, std::ptrdiff_t B, int samples) {
  seedrl::random_generator rng(1);
  const seedrl::host_backend backend;
  std::vector<std::unique_ptr<conv_case>> cases;
  for (std::size_t i = 0; i < layers.size(); ++i)
    cases.push_back(
        std::make_unique<conv_case>(api, backend, layers[i], static_cast<int>(B), i == 0, rng));
  const std::string tag = std::string(net) + " convolutions, B = " + std::to_string(B);
  compare(
      tag + ", forward",
      [&] {
        for (auto& c : cases)
          c->ours_forward();
      },
      [&] {
        for (auto& c : cases)
          c->theirs_forward();
      },
      samples);
  compare(
      tag + ", forward + backward",
      [&] {
        for (auto& c : cases) {
          c->ours_forward();
          c->ours_backward();
        }
      },
      [&] {
        for (auto& c : cases) {
          c->theirs_forward();
          c->theirs_backward();
        }
      },
      samples);
}

void lstm_case(const torch_api& api, std::ptrdiff_t B, std::ptrdiff_t H, int samples) {
  seedrl::lstm<float> net(seedrl::lstm_config{H, H, 1, 1.0});
  std::vector<float> params(net.num_parameters()), grads(net.num_parameters());
  net.bind(params.data(), grads.data());
  seedrl::random_generator rng(2);
  net.init(rng);
  auto x = random_floats(static_cast<std::size_t>(B * H), rng);
  std::vector<float> st(static_cast<std::size_t>(B * net.state_size())),
      y(static_cast<std::size_t>(B * H));
  std::vector<std::uint8_t> dones(static_cast<std::size_t>(B), 0);
  void* theirs = api.lstm_new(B, H, x.data());
  compare(
      "LSTM step, B = " + std::to_string(B) + ", H = " + std::to_string(H),
      [&] {
        net.step(seedrl::cview(x.data(), B, H), dones, seedrl::view(st.data(), B, net.state_size()),
                 seedrl::view(y.data(), B, H));
      },
      [&] { api.lstm_step(theirs); }, samples);
  api.lstm_delete(theirs);
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false, im2col = false;
  int samples = 21;
  const char* module = SEEDRL_TORCH_MODULE;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0)
      quick = true;
    else if (std::strcmp(argv[i], "--samples") == 0 && i + 1 < argc)
      samples = std::max(1, std::atoi(argv[++i]));
    else if (std::strcmp(argv[i], "--im2col") == 0)
      im2col = true;
    else if (std::strcmp(argv[i], "--module") == 0 && i + 1 < argc)
      module = argv[++i];
  }
  const torch_api api(module);
  const char* version = api.init();
  seedrl::set_dnnl_threads(1);
  seedrl::set_dnnl_convolutions(!im2col);
#ifdef SEEDRL_DNNL_CONV
  const char* convs = seedrl::dnnl_convolutions() ? "oneDNN" : "im2col + Eigen GEMM";
#else
  const char* convs = "im2col + Eigen GEMM";
#endif
  std::printf(
      "libtorch %s (1 thread), seedrl convolutions: %s; thread CPU time, medians of %d sample "
      "pairs\n\n",
      version, convs, samples);
  std::printf(
      "| case | libtorch ms | seedrl ms | libtorch / seedrl |\n| --- | ---: | ---: | ---: |\n");
  const std::vector<std::ptrdiff_t> batches =
      quick ? std::vector<std::ptrdiff_t>{1, 32} : std::vector<std::ptrdiff_t>{1, 32, 256};
  for (const auto B : {1, 32, 256})
    for (const auto H : {64, 256, 512})
      if (!im2col)
        lstm_case(api, B, H, samples);
  for (const auto B : batches)
    conv_cases(api, "Nature CNN", seedrl_bench::nature_cnn_shapes(), B, samples);
  for (const auto B : batches)
    conv_cases(api, "IMPALA ResNet", seedrl_bench::impala_resnet_shapes(), B, samples);
  return 0;
}
