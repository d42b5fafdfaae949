// The compiled seedrl::app (include/seedrl/app/compiled.hpp): a whole program on pixel_recipe
// without a GPU trainer (learner, engines, trainers, losses and eval), for any environment.
#include "seedrl/app/pixel_recipe.hpp"
#include "seedrl/app/program_run.hpp"

template int seedrl::app::run_program<void, seedrl::app::pixel_recipe<>>(
    const seedrl::app::program_setup&, seedrl::app::pixel_recipe<>&, int, char**);
