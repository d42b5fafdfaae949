#pragma once
/// \file
/// Everything, for convenience. Examples and library code include the specific headers,
/// which compile faster.

#include "seedrl/algo/loss.hpp"
#include "seedrl/core/config.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/core/spec.hpp"
#include "seedrl/env/cartpole.hpp"
#include "seedrl/env/env_batch.hpp"
#include "seedrl/env/environment.hpp"
#include "seedrl/net/network.hpp"
#include "seedrl/optim/optimizer.hpp"
#include "seedrl/transport/transport.hpp"
#include "seedrl/version.hpp"
