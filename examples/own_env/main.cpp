// Your own environment trained the SEED way: an environment type plus a few lines. The program
// layer (seedrl/app/program.hpp) gives it local, learner, actor and eval modes, --help, clean
// stops on signals, authentication, the progress line, TensorBoard metrics and checkpoints.
//
//   seedrl_own_env local --target-return 0.9      a learner + 4 actor processes until solved
//   seedrl_own_env eval --checkpoint-dir DIR      plays a saved policy greedily
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>

#include "seedrl/app/mlp_recipe.hpp"
#include "seedrl/app/program.hpp"
#include "seedrl/core/random.hpp"

/// Move a point left, not at all, or right (actions 0, 1, 2) along [-1, 1] to a target drawn
/// at random each episode. Observation: {position, target}. Reward 1 on reaching the target
/// (the episode terminates), -0.01 per step otherwise; episodes end after 50 steps (truncated).
class reach_target {
 public:
  using observation_type = float;
  using action_type = std::int32_t;

  seedrl::observation_spec observation_spec() const { return {seedrl::dtype::float32, {2}}; }
  seedrl::action_spec action_spec() const { return seedrl::action_spec::discrete(3); }
  void seed(std::uint64_t s) { rng_.seed(s); }

  void reset(std::span<float> obs) {
    position_ = 0.0;
    target_ = rng_.uniform(-1.0, 1.0);
    steps_ = 0;
    write(obs);
  }
  seedrl::step_result step(action_type a, std::span<float> obs) {
    position_ = std::clamp(position_ + 0.1 * (a - 1), -1.0, 1.0);
    write(obs);
    if (std::abs(position_ - target_) < 0.1)
      return {1.0, true, false};
    return {-0.01, false, ++steps_ == 50};
  }

 private:
  void write(std::span<float> obs) const {
    obs[0] = static_cast<float>(position_);
    obs[1] = static_cast<float>(target_);
  }
  seedrl::random_generator rng_{0};
  double position_ = 0.0, target_ = 0.0;
  int steps_ = 0;
};

int main(int argc, char** argv) {
  seedrl::app::program<reach_target> p("seedrl_own_env", "reach_target trained the SEED way");
  p.options.target_return.reset();  // no target unless --target-return: --total-frames
  p.options.total_frames = 2'000'000;
  return p.run(argc, argv, seedrl::app::mlp_recipe{});
}
