// Must NOT compile: `almost_head` forgot output_size(), how many outputs it has. The test checks
// that the compiler's message names it.
#include "seedrl/net/actor_critic_agent.hpp"
#include "seedrl/net/parts/mlp_torso.hpp"
#include "seedrl/net/parts/no_core.hpp"
#include "seedrl/net/parts/preprocess.hpp"

struct almost_head {
  struct options_type {};
  almost_head(const options_type&, std::ptrdiff_t) {}
  std::int32_t num_actions() const { return 2; }
  std::size_t num_parameters() const { return 0; }
  void bind(float*, float*) {}
  void init(seedrl::random_generator&) {}
  void forward(seedrl::const_matrix_view<float>, seedrl::matrix_view<float>) const {}
  void backward(seedrl::const_matrix_view<float>, seedrl::const_matrix_view<float>,
                seedrl::matrix_view<float>, bool) {}
};

int main() {
  seedrl::actor_critic_agent<float, seedrl::vector_observations, seedrl::mlp_torso<float>,
                             seedrl::no_core<float>, almost_head>
      net({.num_actions = 2}, seedrl::vector_observations{4},
          seedrl::mlp_torso<float>({.input_size = 4, .widths = {8}}), {}, {});
  return static_cast<int>(net.parameters().size());
}
