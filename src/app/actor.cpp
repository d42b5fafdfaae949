// The compiled seedrl::app (include/seedrl/app/compiled.hpp): actor mode's link loop over TCP,
// for environments of any type.
#include "seedrl/app/detail/run_actor-inl.hpp"
