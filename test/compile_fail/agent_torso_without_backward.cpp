// Must NOT compile: `part_without_backward` has every BackendTorso member but `backward`, so
// an actor_critic_agent over it cannot train. The test checks that the agent reports the missing
// member by name, not an error deep inside its composition.
#include <cstddef>

#include "seedrl/net/actor_critic_agent.hpp"

struct part_config {};

template <class Backend, class S>
struct part_without_backward {
  part_without_backward(Backend&, const part_config&) {}
  std::size_t num_parameters() const { return 1; }
  std::size_t output_size() const { return 1; }
  std::size_t observation_size() const { return 1; }
  std::size_t state_size() const { return 0; }
  std::size_t max_rows() const { return 1; }
  void reserve(std::size_t) {}
  void init(seedrl::random_generator&, S*) const {}
  void forward(const seedrl::backend_torso_batch<S>&, const S*, S*, std::size_t) {}
};

int main() {
  seedrl::actor_critic_agent<float, part_without_backward<seedrl::host_backend, float>, part_config>
      net({}, seedrl::backend_core_config{}, part_config{});
  return static_cast<int>(net.parameters().size());
}
