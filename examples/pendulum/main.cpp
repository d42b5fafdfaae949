// Pendulum-v1 (gymnasium-exact, continuous torque in [-2, 2]) trained the SEED way: a learner
// with a diagonal Gaussian policy and PPO, and actor processes that only step environments.
//
//   seedrl_pendulum local [--actors 4] ...          learner + N actor processes on loopback
//   seedrl_pendulum learner / actor / eval          as every seedrl program (see --help)
//
// The network is mlp_recipe's MLP, given a Gaussian head by the continuous action spec (one
// mean and one state-dependent log-std); the torque is tanh-squashed into its bounds
// (--action-bounds clip clips instead). Algorithm and hyperparameters are the vector-observation
// defaults every program shares (PPO, rewards scaled on the learner: app/run_options.hpp,
// docs/learning.md); only the stop condition is Pendulum's. Everything but the environment is
// seedrl/app.
#include "seedrl/app/mlp_recipe.hpp"
#include "seedrl/app/program.hpp"
#include "seedrl/env/pendulum.hpp"
#if defined(SEEDRL_HAS_CUDA)
#include "seedrl/app/program_run.hpp"        // a GPU trainer: the program is compiled here
#include "seedrl/cuda/mlp_lstm_trainer.hpp"  // instantiated in cartpole_seed/cuda_trainer.cu
using gpu_trainer = seedrl::cuda::mlp_lstm_trainer<float>;
#else
using gpu_trainer = void;  // --device cuda says how to build with CUDA
#endif

int main(int argc, char** argv) {
  seedrl::app::program<seedrl::pendulum> p(
      "seedrl_pendulum", "Pendulum-v1 with continuous torque: a Gaussian policy trained by PPO");
  p.environment_name = "pendulum";
  p.options.target_return = -250.0;  // the mean of the last 100 episodes (200 steps each)
  p.options.total_frames = 2'000'000;
  return p.run<gpu_trainer>(argc, argv, seedrl::app::mlp_recipe{});
}
