#pragma once
/// \file
/// Everything, for convenience. Examples and library code include the specific headers,
/// which compile faster.

#include "seedrl/algo/impala_loss.hpp"
#include "seedrl/algo/loss.hpp"
#include "seedrl/algo/vtrace.hpp"
#include "seedrl/core/config.hpp"
#include "seedrl/core/random.hpp"
#include "seedrl/core/spec.hpp"
#include "seedrl/env/cartpole.hpp"
#include "seedrl/env/env_batch.hpp"
#include "seedrl/env/environment.hpp"
#include "seedrl/net/activation.hpp"
#include "seedrl/net/agent_io.hpp"
#include "seedrl/net/categorical.hpp"
#include "seedrl/net/linear.hpp"
#include "seedrl/net/lstm.hpp"
#include "seedrl/net/mlp_lstm_agent.hpp"
#include "seedrl/net/network.hpp"
#include "seedrl/net/tensor.hpp"
#include "seedrl/optim/adam.hpp"
#include "seedrl/optim/clip.hpp"
#include "seedrl/optim/lr_schedule.hpp"
#include "seedrl/optim/optimizer.hpp"
#include "seedrl/optim/rmsprop.hpp"
#include "seedrl/transport/transport.hpp"
#include "seedrl/version.hpp"
