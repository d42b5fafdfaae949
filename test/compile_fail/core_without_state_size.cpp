// Must NOT compile: `almost_core` forgot state_size(). The test checks that the compiler's
// message names it.
#include <cstdint>
#include <span>

#include "seedrl/net/actor_critic_agent.hpp"
#include "seedrl/net/parts/linear_heads.hpp"
#include "seedrl/net/parts/mlp_torso.hpp"
#include "seedrl/net/parts/preprocess.hpp"

struct almost_core {
  struct options_type {};
  almost_core(const options_type&, std::ptrdiff_t n) : n_(n) {}
  std::ptrdiff_t output_size() const { return n_; }
  std::size_t num_parameters() const { return 0; }
  void bind(float*, float*) {}
  void init(seedrl::random_generator&) {}
  seedrl::const_matrix_view<float> step(seedrl::const_matrix_view<float> x,
                                        std::span<const std::uint8_t>, seedrl::matrix_view<float>) {
    return x;
  }
  seedrl::const_matrix_view<float> forward_unroll(std::ptrdiff_t, std::ptrdiff_t,
                                                  seedrl::const_matrix_view<float> x,
                                                  std::span<const std::uint8_t>,
                                                  seedrl::const_matrix_view<float>) {
    return x;
  }
  seedrl::matrix_view<float> backward_unroll(seedrl::matrix_view<float> dy) { return dy; }
  std::ptrdiff_t n_;
};

int main() {
  seedrl::actor_critic_agent<float, seedrl::vector_observations, seedrl::mlp_torso<float>,
                             almost_core, seedrl::categorical_head<float>>
      net({.num_actions = 2}, seedrl::vector_observations{4},
          seedrl::mlp_torso<float>({.input_size = 4, .widths = {8}}), {}, {.num_actions = 2});
  return static_cast<int>(net.parameters().size());
}
