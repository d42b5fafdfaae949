// Must NOT compile: `almost_torso` forgot output_size(). The test checks that the compiler's
// message names it, rather than burying it in substitution failures.
#include "seedrl/net/actor_critic_agent.hpp"
#include "seedrl/net/parts/linear_heads.hpp"
#include "seedrl/net/parts/no_core.hpp"
#include "seedrl/net/parts/preprocess.hpp"

struct almost_torso {
  std::ptrdiff_t input_size() const { return 4; }
  seedrl::feature_layout input_layout() const { return seedrl::feature_layout::vector; }
  std::size_t num_parameters() const { return 0; }
  void bind(float*, float*) {}
  void init(seedrl::random_generator&) {}
  void infer(seedrl::const_matrix_view<float>, seedrl::matrix_view<float>) {}
  void forward(seedrl::const_matrix_view<float>, seedrl::matrix_view<float>) {}
  void backward(seedrl::matrix_view<float>) {}
};

int main() {
  seedrl::actor_critic_agent<float, seedrl::vector_observations, almost_torso,
                             seedrl::no_core<float>, seedrl::categorical_head<float>>
      net({.num_actions = 2}, seedrl::vector_observations{4}, almost_torso{}, {},
          {.num_actions = 2});
  return static_cast<int>(net.parameters().size());
}
