// The compiled seedrl::app (include/seedrl/app/compiled.hpp): a whole program on mlp_recipe
// (learner, engines, trainers, losses and eval for both action kinds), for any environment.
#include "seedrl/app/mlp_recipe.hpp"
#include "seedrl/app/program_run.hpp"

template int seedrl::app::run_program<void, seedrl::app::mlp_recipe>(
    const seedrl::app::program_setup&, seedrl::app::mlp_recipe&, int, char**);
