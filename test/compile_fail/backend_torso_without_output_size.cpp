// Must NOT compile: `almost_torso` forgot output_size(). The test checks that the compiler's
// message names exactly that, rather than burying it in errors from inside the trainer.
#include <cstddef>

#include "seedrl/backend/host_backend.hpp"
#include "seedrl/train/agent_trainer.hpp"

struct almost_torso {
  std::size_t num_parameters() const { return 0; }
  std::size_t observation_size() const { return 1; }
  std::size_t state_size() const { return 0; }
  std::size_t max_rows() const { return 1; }
  void reserve(std::size_t) {}
  void forward(const seedrl::backend_torso_batch<float>&, const float*, float*, std::size_t) {}
  void backward(const seedrl::backend_torso_batch<float>&, const float*, float*, const float*,
                const float*, std::size_t) {}
};

int main() {
  seedrl::host_backend backend;
  seedrl::backend_agent_trainer<seedrl::host_backend, float, almost_torso> trainer(
      backend, almost_torso{}, seedrl::backend_core_config{});
  return static_cast<int>(trainer.num_parameters());
}
