// Must NOT compile: `almost_agent` is an agent network in every respect but one, it forgot
// zero_gradients(), which only the trainer calls. The test checks that the learner's own check
// names it, rather than the error surfacing inside seedrl/runtime/trainer.hpp.
#include <cstddef>
#include <span>

#include "seedrl/core/spec.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/runtime/learner.hpp"
#include "seedrl/transport/in_process.hpp"

class almost_agent {
 public:
  using inner = seedrl::mlp_lstm_agent<float>;
  using scalar_type = float;
  using state_type = inner::state_type;
  using inference_input = inner::inference_input;
  using inference_output = inner::inference_output;
  using unroll_input = inner::unroll_input;
  using unroll_output = inner::unroll_output;
  using output_gradient = inner::output_gradient;

  almost_agent() = default;
  almost_agent(const almost_agent& other) : net_(other.net_) {}

  std::ptrdiff_t state_size() const { return net_.state_size(); }
  state_type initial_state(std::size_t batch_size) const { return net_.initial_state(batch_size); }
  void infer(const inference_input& in, state_type& state, inference_output& out) {
    net_.infer(in, state, out);
  }
  void forward_unroll(const unroll_input& in, unroll_output& out) { net_.forward_unroll(in, out); }
  void backward_unroll(const output_gradient& g) { net_.backward_unroll(g); }
  std::span<float> parameters() { return net_.parameters(); }
  std::span<float> gradients() { return net_.gradients(); }

 private:
  inner net_;
};

int main() {
  seedrl::learner<almost_agent, seedrl::adam<float>, seedrl::in_process_transport> learner(
      seedrl::learner_config{}, almost_agent(), seedrl::adam<float>(), seedrl::impala_loss<float>(),
      {seedrl::dtype::float32, {4}}, seedrl::action_spec::discrete(2));
  return 0;
}
