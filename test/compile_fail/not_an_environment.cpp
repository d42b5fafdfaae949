// Must NOT compile: `almost_env` forgot step(). The test checks that the compiler's message
// says exactly that, rather than burying it in substitution failures.
#include <cstdint>
#include <span>
#include <vector>

#include "seedrl/env/env_batch.hpp"

struct almost_env {
  using observation_type = float;
  using action_type = std::int32_t;
  seedrl::observation_spec observation_spec() const { return {seedrl::dtype::float32, {2}}; }
  seedrl::action_spec action_spec() const { return seedrl::action_spec::discrete(2); }
  void seed(std::uint64_t) {}
  void reset(std::span<float> observation) { observation[0] = observation[1] = 0.0f; }
};

int main() {
  std::vector<almost_env> envs(2);
  seedrl::env_batch<almost_env> batch(std::move(envs), 1);
  return static_cast<int>(batch.size());
}
