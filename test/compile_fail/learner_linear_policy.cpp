// Must NOT compile: the docs' `linear_policy` (docs/concepts/network.md) models
// seedrl::Network but not what the learner needs (seedrl::LearnerNetwork): among others it has
// no `state_size()`. The test checks that the compiler says so by name, from the learner's own
// check, rather than failing deep inside the learner or its trainer one member at a time.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <vector>

#include "seedrl/core/spec.hpp"
#include "seedrl/net/network.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/runtime/learner.hpp"
#include "seedrl/transport/in_process.hpp"

/// logits = W x + b and baseline = u.x + c for every row x of a float observation batch.
/// Feed-forward, so the recurrent state is empty and `done` changes nothing.
class linear_policy {
 public:
  using scalar_type = float;
  struct state_type {};

  /// One row per environment (inference) or per time step and environment (unroll, time-major
  /// [T+1, B] flattened): observations [rows, obs_size], outputs [rows, num_actions] and [rows].
  struct inference_input {
    std::span<const float> observations;
    std::span<const std::uint8_t> done;  // would reset a recurrent state; unused here
  };
  struct inference_output {
    std::span<float> logits;
    std::span<float> baseline;
  };
  using unroll_input = inference_input;
  using unroll_output = inference_output;
  struct output_gradient {  // d(loss)/d(unroll_output), same shapes
    std::span<const float> logits;
    std::span<const float> baseline;
  };

  linear_policy(std::size_t obs_size, std::size_t num_actions)
      : obs_(obs_size),
        act_(num_actions),
        params_(num_actions * obs_size + num_actions + obs_size + 1, 0.0f),
        grads_(params_.size(), 0.0f) {}

  state_type initial_state(std::size_t /*batch_size*/) const { return {}; }

  void infer(const inference_input& in, state_type& /*state*/, inference_output& out) {
    run(in, out);
  }

  void forward_unroll(const unroll_input& in, unroll_output& out) {
    run(in, out);
    saved_ = in.observations;  // backward needs the inputs; the caller keeps them alive
  }

  /// Overwrites gradients() with d(loss)/d(parameters) for the last forward_unroll.
  void backward_unroll(const output_gradient& g) {
    std::fill(grads_.begin(), grads_.end(), 0.0f);
    float* dw = grads_.data();
    float* db = dw + act_ * obs_;
    float* du = db + act_;
    float* dc = du + obs_;
    const std::size_t rows = saved_.size() / obs_;
    for (std::size_t r = 0; r < rows; ++r) {
      const float* x = &saved_[r * obs_];
      for (std::size_t a = 0; a < act_; ++a) {
        const float d = g.logits[r * act_ + a];
        for (std::size_t i = 0; i < obs_; ++i)
          dw[a * obs_ + i] += d * x[i];
        db[a] += d;
      }
      for (std::size_t i = 0; i < obs_; ++i)
        du[i] += g.baseline[r] * x[i];
      *dc += g.baseline[r];
    }
  }

  /// All parameters in one buffer, laid out [W | b | u | c]; gradients() matches it.
  std::span<float> parameters() { return params_; }
  std::span<float> gradients() { return grads_; }

 private:
  void run(const inference_input& in, inference_output& out) const {
    if (in.observations.size() % obs_ != 0) {
      throw std::invalid_argument("linear_policy: observations are not whole rows");
    }
    const std::size_t rows = in.observations.size() / obs_;
    if (out.logits.size() != rows * act_ || out.baseline.size() != rows) {
      throw std::invalid_argument("linear_policy: output buffers do not match the input rows");
    }
    const float* w = params_.data();
    const float* b = w + act_ * obs_;
    const float* u = b + act_;
    const float c = u[obs_];
    for (std::size_t r = 0; r < rows; ++r) {
      const float* x = &in.observations[r * obs_];
      for (std::size_t a = 0; a < act_; ++a) {
        float z = b[a];
        for (std::size_t i = 0; i < obs_; ++i)
          z += w[a * obs_ + i] * x[i];
        out.logits[r * act_ + a] = z;
      }
      float v = c;
      for (std::size_t i = 0; i < obs_; ++i)
        v += u[i] * x[i];
      out.baseline[r] = v;
    }
  }

  std::size_t obs_, act_;
  std::vector<float> params_, grads_;
  std::span<const float> saved_;
};

static_assert(seedrl::Network<linear_policy>);  // a Network, as the docs say

int main() {
  seedrl::learner<linear_policy, seedrl::adam<float>, seedrl::in_process_transport> learner(
      seedrl::learner_config{}, linear_policy(4, 2), seedrl::adam<float>(),
      seedrl::impala_loss<float>(), {seedrl::dtype::float32, {4}},
      seedrl::action_spec::discrete(2));
  return 0;
}
