// CartPole trained the SEED way: a learner process that batches inference for many actors and
// trains on their unrolls, and actor processes that only step environments, talking over TCP.
//
//   seedrl_cartpole_seed local   [--actors 4] ...        learner + N actor processes on loopback
//   seedrl_cartpole_seed learner [--host H] [--port P] ... learner only; actors connect to it
//   seedrl_cartpole_seed actor   --learner H:P [--envs-per-actor K] ...
//   seedrl_cartpole_seed eval    --checkpoint-dir DIR    plays the newest checkpoint greedily
//
// The link is authenticated with a shared secret from SEEDRL_AUTH_SECRET or --auth-secret-file
// (local mode makes one up for its own actors); --logdir writes metrics for TensorBoard;
// --checkpoint-dir saves checkpoints that --resume continues from. Everything but the choice of
// environment and network is seedrl/app (see --help).
#include "seedrl/app/mlp_recipe.hpp"
#include "seedrl/app/program.hpp"
#include "seedrl/env/cartpole.hpp"
#if defined(SEEDRL_HAS_CUDA)
#include "seedrl/app/program_run.hpp"        // a GPU trainer: the program is compiled here
#include "seedrl/cuda/mlp_lstm_trainer.hpp"  // instantiated in cuda_trainer.cu
using gpu_trainer = seedrl::cuda::mlp_lstm_trainer<float>;
#else
using gpu_trainer = void;  // --device cuda says how to build with CUDA
#endif

int main(int argc, char** argv) {
  seedrl::app::program<seedrl::cartpole> p(
      "seedrl_cartpole_seed", "CartPole trained the SEED way: a learner and actor processes");
  p.environment_name = "cartpole";
  // MLP 64-64 (LSTM 64 with --lstm), Adam 2e-3 (5e-4 with --lstm), entropy 0.001; until the
  // mean return of the last 100 episodes reaches 475 (the demo's defaults, app/run_options.hpp).
  return p.run<gpu_trainer>(argc, argv, seedrl::app::mlp_recipe{});
}
