// Catch from pixels, trained the SEED way: C++ actor processes play the built-in Catch game
// (seedrl/env/catch.hpp) and send single 84x84 frames; the learner stacks them and trains a
// Nature CNN (or IMPALA ResNet) + LSTM. No Python needed.
//
//   seedrl_catch local [--actors 4] ...          learner + N actor processes on loopback
//   seedrl_catch learner --port P ...            learner only; actors connect to it
//   seedrl_catch actor --learner H:P             one actor process
//   seedrl_catch eval --checkpoint-dir DIR       plays the newest checkpoint greedily
//
// Modes, flags, signals, checkpoints and the progress loop are seedrl/app; the pixel network's
// flags are app/pixel_recipe.hpp's. docs/atari.md says what to expect.
#include <cstdint>

#include "seedrl/app/pixel_gpu_trainer.hpp"  // CUDA: instantiated in cuda_trainer.cu
#include "seedrl/app/pixel_recipe.hpp"
#include "seedrl/app/program.hpp"
#include "seedrl/env/catch.hpp"
#if defined(SEEDRL_HAS_CUDA)
#include "seedrl/app/program_run.hpp"  // a GPU trainer: the program is compiled here
#endif

int main(int argc, char** argv) {
  seedrl::app::program<seedrl::catch_game> p(
      "seedrl_catch", "Catch from pixels: a CNN+LSTM learner and C++ actor processes");
  seedrl::app::use_pixel_defaults(p.options);  // SEED's Atari settings
  p.environment_name = "catch";
  p.announce_network = true;
  p.make_env = [](std::size_t i, std::uint64_t seed) {
    return seedrl::catch_game({}, seed * 7919 + i);
  };
  return p.run(argc, argv, seedrl::app::pixel_gpu_recipe{});
}
