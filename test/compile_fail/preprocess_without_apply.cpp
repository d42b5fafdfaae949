// Must NOT compile: `almost_preprocess` forgot apply(). The test checks that the compiler's
// message names it.
#include "seedrl/net/actor_critic_agent.hpp"
#include "seedrl/net/parts/linear_heads.hpp"
#include "seedrl/net/parts/mlp_torso.hpp"
#include "seedrl/net/parts/no_core.hpp"

struct almost_preprocess {
  std::ptrdiff_t input_size() const { return 4; }
  std::ptrdiff_t output_size() const { return 4; }
  seedrl::feature_layout output_layout() const { return seedrl::feature_layout::vector; }
};

int main() {
  seedrl::actor_critic_agent<float, almost_preprocess, seedrl::mlp_torso<float>,
                             seedrl::no_core<float>, seedrl::categorical_head<float>>
      net({.num_actions = 2}, almost_preprocess{},
          seedrl::mlp_torso<float>({.input_size = 4, .widths = {8}}), {}, {.num_actions = 2});
  return static_cast<int>(net.parameters().size());
}
