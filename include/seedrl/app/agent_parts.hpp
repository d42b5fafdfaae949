#pragma once
/// \file
/// What a recipe hands the learner (`agent_parts`: network, description, optimizer, loss
/// settings) and what the learner side knows of the environment (`environment_info`). Apart
/// from app/run_learner.hpp so that a recipe's header can name them without the learner.

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "seedrl/algo/impala_loss_config.hpp"
#include "seedrl/core/spec.hpp"
#include "seedrl/optim/adam.hpp"

namespace seedrl::app {

/// An agent ready to train: its network (architecture and initial parameters), the one-line
/// description checkpoints carry (a run refuses to resume another network's checkpoint), the
/// optimizer and the loss settings.
template <class Net, class Opt = adam<typename Net::scalar_type>>
struct agent_parts {
  Net network;
  std::string description;
  Opt optimizer;
  impala_loss_config<typename Net::scalar_type> loss{};
};

/// What the learner side needs to know about the environment and its actors.
struct environment_info {
  std::string name;               ///< checkpoint meta "environment"
  observation_spec observations;  ///< what actors send
  action_spec actions;            ///< what the network chooses from
  /// argv of actor process `index` in local mode, given the learner's HOST:PORT and its seed.
  /// Unset: this program itself in actor mode (`/proc/self/exe actor --learner ...`).
  std::function<std::vector<std::string>(const std::string& address, int index, std::uint64_t seed)>
      actor_command;
  std::string actor_kind;         ///< e.g. "Python ALE/Pong-v5", for the "started ..." line
  std::string checkpoint_hint;    ///< appended when a checkpoint holds another network
  bool announce_network = false;  ///< print "actions: N; network: ..." after listening
};

}  // namespace seedrl::app
