#pragma once
/// \file
/// A run refuses a checkpoint of another network: checkpoints carry their network's one-line
/// description (meta "network"), and resuming or evaluating compares it with this run's.

#include <cstdio>
#include <string>

#include "seedrl/io/checkpoint.hpp"

namespace seedrl::app {

/// True when `c` holds the network `description` (or does not say which it holds); otherwise
/// prints both descriptions and `hint` (what to check, may be empty) on stderr.
inline bool holds_network(const checkpoint& c, const std::string& description,
                          const std::string& hint = {}) {
  const auto held = c.meta_value("network");
  if (!held || *held == description)
    return true;
  std::fprintf(stderr, "%s holds a different network:\n  checkpoint: %s\n  this run:   %s\n%s",
               c.source.c_str(), held->c_str(), description.c_str(),
               hint.empty() ? "" : (hint + "\n").c_str());
  return false;
}

}  // namespace seedrl::app
