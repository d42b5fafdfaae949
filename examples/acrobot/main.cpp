// Acrobot-v1 (gymnasium-exact, seedrl/env/acrobot.hpp) trained the SEED way by a program that
// is the environment plus a few lines: every algorithm and hyperparameter is the default all
// vector-observation programs share (app/run_options.hpp, docs/learning.md). It is the
// "user's own environment" of the learning suite (bench/learning_suite.sh).
//
//   seedrl_acrobot local                 learner + actor processes on loopback, until -100
//   seedrl_acrobot learner / actor / eval   as every seedrl program (see --help)
#include "seedrl/app/mlp_recipe.hpp"
#include "seedrl/app/program.hpp"
#include "seedrl/env/acrobot.hpp"

int main(int argc, char** argv) {
  seedrl::app::program<seedrl::acrobot> p("seedrl_acrobot",
                                          "Acrobot-v1 in C++, trained with the shared defaults");
  p.environment_name = "acrobot";
  p.options.target_return = -100.0;  // the mean of the last 100 episodes
  p.options.total_frames = 5'000'000;
  p.make_env = [](std::size_t i, std::uint64_t seed) { return seedrl::acrobot(seed * 7919 + i); };
  return p.run(argc, argv, seedrl::app::mlp_recipe{});
}
