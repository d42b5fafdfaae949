// Must NOT compile: `part_without_init` models BackendTorso (the backend trainers take it) but
// has no host-side init, which actor_critic_agent's constructor from a core config needs to draw
// its initial parameters. The test checks that the message names the part's missing member, not an
// error deep inside.
#include <cstddef>

#include "seedrl/net/actor_critic_agent.hpp"

struct part_config {};

template <class Backend, class S>
struct part_without_init {
  part_without_init(Backend&, const part_config&) {}
  std::size_t num_parameters() const { return 1; }
  std::size_t output_size() const { return 1; }
  std::size_t observation_size() const { return 1; }
  std::size_t state_size() const { return 0; }
  std::size_t max_rows() const { return 1; }
  void reserve(std::size_t) {}
  void forward(const seedrl::backend_torso_batch<S>&, const S*, S*, std::size_t) {}
  void backward(const seedrl::backend_torso_batch<S>&, const S*, S*, const S*, const S*,
                std::size_t) {}
};

int main() {
  seedrl::actor_critic_agent<float, part_without_init<seedrl::host_backend, float>, part_config>
      net({}, seedrl::backend_core_config{}, part_config{});
  return static_cast<int>(net.parameters().size());
}
