// Must NOT compile: a value head used as the policy head has no num_actions(), so the agent
// cannot check its action count. The test checks that the compiler's message names it.
#include "seedrl/net/actor_critic_agent.hpp"
#include "seedrl/net/parts/linear_heads.hpp"
#include "seedrl/net/parts/mlp_torso.hpp"
#include "seedrl/net/parts/no_core.hpp"
#include "seedrl/net/parts/preprocess.hpp"

int main() {
  seedrl::actor_critic_agent<float, seedrl::vector_observations, seedrl::mlp_torso<float>,
                             seedrl::no_core<float>, seedrl::value_head<float>>
      net({.num_actions = 1}, seedrl::vector_observations{4},
          seedrl::mlp_torso<float>({.input_size = 4, .widths = {8}}), {}, {});
  return static_cast<int>(net.parameters().size());
}
