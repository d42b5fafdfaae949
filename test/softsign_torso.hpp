#pragma once
// A user's own torso for the tests, written once against the ComputeBackend primitives: one
// dense layer with softsign, y = z / (1 + |z|), z = x W^T + b (parameters W [outputs, inputs],
// then b). The CPU agent is `actor_critic_agent` over it (test_backend_trainer.cpp); the backend
// trainer runs it directly, and the CUDA trainer through the generic
// `actor_critic_recipe<softsign_torso, softsign_config>` (test/cuda/test_cuda.cpp). No Eigen:
// nvcc compiles it.
#include <cstddef>
#include <string>

#include "seedrl/core/config.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/train/backend_torso.hpp"

namespace seedrl_test {

struct softsign_config {
  std::size_t inputs = 3, outputs = 5;
};

/// What actor_critic_recipe keys its network on.
inline std::string describe(const softsign_config& c) {
  return "softsign " + std::to_string(c.inputs) + " " + std::to_string(c.outputs);
}

template <class S>
struct softsign_bias_body {  // y[r, j] = softsign(y[r, j] + b[j])
  S* y;
  std::size_t ld, cols;
  const S* b;
  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    S& v = y[(i / cols) * ld + i % cols];
    const S z = v + b[i % cols];
    v = z / (S(1) + (z < S(0) ? -z : z));
  }
};

template <class S>
struct softsign_grad_body {  // d[r, j] = dy[r, j] (1 - |y[r, j]|)^2
  const S* y;
  const S* dy;
  std::size_t ld, cols;
  S* d;
  SEEDRL_HOST_DEVICE void operator()(std::size_t i) const {
    const std::size_t at = (i / cols) * ld + i % cols;
    const S a = S(1) - (y[at] < S(0) ? -y[at] : y[at]);
    d[i] = dy[at] * a * a;
  }
};

template <class S>
struct column_sum_body {  // g[j] += sum_r d[r, j]
  const S* d;
  std::size_t rows, cols;
  S* g;
  SEEDRL_HOST_DEVICE void operator()(std::size_t j) const {
    S s = S(0);
    for (std::size_t r = 0; r < rows; ++r)
      s += d[r * cols + j];
    g[j] += s;
  }
};

/// The part (a seedrl::BackendTorso, plus the `init` actor_critic_agent draws it with).
template <class Backend, class S>
class softsign_torso {
 public:
  softsign_torso(Backend& b, const softsign_config& c) : b_(&b), c_(c) {}
  std::size_t num_parameters() const { return c_.outputs * (c_.inputs + 1); }
  std::size_t output_size() const { return c_.outputs; }
  std::size_t observation_size() const { return c_.inputs; }
  std::size_t state_size() const { return 0; }
  std::size_t max_rows() const { return std::size_t{1} << 20; }
  void reserve(std::size_t rows) {
    if (d_.size() < rows * c_.outputs)
      d_ = b_->template allocate<S>(rows * c_.outputs);
  }
  void init(seedrl::random_generator& rng, S* params) const {
    for (std::size_t i = 0; i < num_parameters(); ++i)
      params[i] = static_cast<S>(rng.uniform(-0.6, 0.6));
  }
  void forward(const seedrl::backend_torso_batch<S>& batch, const S* p, S* out, std::size_t ld) {
    const int N = static_cast<int>(batch.rows()), O = static_cast<int>(c_.outputs),
              I = static_cast<int>(c_.inputs);
    b_->gemm(false, true, N, O, I, S(1), batch.observations, I, p, I, S(0), out,
             static_cast<int>(ld));
    b_->for_each(batch.rows() * c_.outputs,
                 softsign_bias_body<S>{out, ld, c_.outputs, p + c_.outputs * c_.inputs});
  }
  void backward(const seedrl::backend_torso_batch<S>& batch, const S*, S* g, const S* out,
                const S* d_out, std::size_t ld) {
    const std::size_t N = batch.rows();
    b_->for_each(N * c_.outputs, softsign_grad_body<S>{out, d_out, ld, c_.outputs, d_.data()});
    const int O = static_cast<int>(c_.outputs), I = static_cast<int>(c_.inputs);
    b_->gemm(true, false, O, I, static_cast<int>(N), S(1), d_.data(), O, batch.observations, I,
             S(1), g, I);
    b_->for_each(c_.outputs,
                 column_sum_body<S>{d_.data(), N, c_.outputs, g + c_.outputs * c_.inputs});
  }

 private:
  Backend* b_;
  softsign_config c_;
  typename Backend::template buffer<S> d_;
};

}  // namespace seedrl_test
