// The compiled seedrl::app (include/seedrl/app/compiled.hpp): the shared flags and
// mlp_recipe's members, defined once here instead of in every program.
#include "seedrl/app/detail/mlp_recipe-inl.hpp"
#include "seedrl/app/detail/run_flags-inl.hpp"
