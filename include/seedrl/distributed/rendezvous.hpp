#pragma once
/// \file
/// Where a learner rank stands in a data-parallel run, read from what its launcher set:
///   - `mpirun` (Open MPI): OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK;
///   - other MPIs' process managers (MPICH's Hydra, Slurm's PMI): PMI_RANK, PMI_SIZE;
///   - `srun` (Slurm): SLURM_PROCID, SLURM_STEP_NUM_TASKS (else SLURM_NTASKS), SLURM_LOCALID;
///   - a launcher of its own (torchrun's convention, a Kubernetes Indexed Job): RANK,
///     WORLD_SIZE, LOCAL_RANK, with MASTER_ADDR and MASTER_PORT where rank 0 listens for the
///     others (the bootstrap that passes NCCL's unique id without MPI).
/// The first of these that is set wins; a later one that is set too must agree with it on rank
/// and size (a job script that sets RANK by hand under mpirun is a mistake, not a choice).
/// Nothing set: one rank, rank 0. Values are checked: decimal integers, 0 <= rank < size,
/// 0 <= local rank; a variable of a pair without the other, or a bad value, throws
/// std::invalid_argument naming the variable and what it held.
///
/// Plain C++; no MPI header. The MPI reducer (distributed/mpi_reducer.hpp) checks that what
/// MPI itself reports agrees with this.

#include <charconv>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace seedrl::distributed {

/// One rank's place in the run; see the file comment.
struct world_place {
  int rank = 0;             ///< 0 .. size-1; rank 0 writes checkpoints
  int size = 1;             ///< learner ranks in the run
  int local_rank = 0;       ///< place among the ranks on this machine (picks the GPU)
  std::string master_addr;  ///< MASTER_ADDR, or empty
  int master_port = 0;      ///< MASTER_PORT, or 0
  std::string source = "none (one rank)";  ///< which launcher's variables were read

  friend bool operator==(const world_place&, const world_place&) = default;
};

/// Reads an environment variable: returns nullptr when it is not set (std::getenv's contract).
using environment_lookup = const char* (*)(const char*);

namespace detail {

/// `name`'s value as an int in [lo, hi], or nullopt when unset; throws naming it otherwise.
inline std::optional<int> read_int(environment_lookup env, const char* name, long lo, long hi) {
  const char* text = env(name);
  if (text == nullptr)
    return std::nullopt;
  const std::string_view v(text);
  long value = 0;
  const auto [end, error] = std::from_chars(v.data(), v.data() + v.size(), value);
  if (v.empty() || error != std::errc() || end != v.data() + v.size() || value < lo || value > hi) {
    throw std::invalid_argument("seedrl: environment variable " + std::string(name) + "='" +
                                std::string(v) + "' is not an integer in [" + std::to_string(lo) +
                                ", " + std::to_string(hi) + "]");
  }
  return static_cast<int>(value);
}

/// A launcher's (rank, size) pair, or nullopt when neither variable is set.
struct rank_and_size {
  int rank, size;
};
inline std::optional<rank_and_size> read_pair(environment_lookup env, const char* rank_name,
                                              const char* size_name) {
  constexpr long most = 1L << 30;
  const auto size = read_int(env, size_name, 1, most);
  const auto rank = read_int(env, rank_name, 0, most);
  if (!size && !rank)
    return std::nullopt;
  if (!size || !rank) {
    throw std::invalid_argument(std::string("seedrl: ") + (size ? rank_name : size_name) +
                                " is not set, but " + (size ? size_name : rank_name) +
                                " is: a launcher sets both");
  }
  if (*rank >= *size) {
    throw std::invalid_argument(std::string("seedrl: ") + rank_name + "=" + std::to_string(*rank) +
                                " is not below " + size_name + "=" + std::to_string(*size));
  }
  return rank_and_size{*rank, *size};
}

inline const char* system_environment(const char* name) {
  return std::getenv(name);
}

}  // namespace detail

/// This rank's place, from the launcher's variables; see the file comment. `env` reads a
/// variable (tests pass their own; the default is the process environment).
inline world_place world_place_from_environment(
    environment_lookup env = &detail::system_environment) {
  struct launcher {
    const char *rank, *size, *local, *name;
  };
  // SLURM_STEP_NUM_TASKS is the step's task count under srun; SLURM_NTASKS, the allocation's,
  // stands in where a Slurm older than 15.08 does not set it.
  const char* slurm_size =
      env("SLURM_STEP_NUM_TASKS") != nullptr ? "SLURM_STEP_NUM_TASKS" : "SLURM_NTASKS";
  const launcher launchers[] = {
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
       "mpirun (OMPI_COMM_WORLD_*)"},
      {"PMI_RANK", "PMI_SIZE", nullptr, "a process manager (PMI_*)"},
      {"SLURM_PROCID", slurm_size, "SLURM_LOCALID", "srun (SLURM_*)"},
      {"RANK", "WORLD_SIZE", "LOCAL_RANK", "RANK / WORLD_SIZE"},
  };
  world_place place;
  bool found = false;
  for (const launcher& l : launchers) {
    // Slurm sets SLURM_NTASKS in a batch script too, where no step was launched: only an
    // SLURM_PROCID makes it a rank's place.
    if (l.rank == std::string_view("SLURM_PROCID") && env("SLURM_PROCID") == nullptr)
      continue;
    const auto pair = detail::read_pair(env, l.rank, l.size);
    if (!pair)
      continue;
    if (!found) {
      found = true;
      place.rank = pair->rank;
      place.size = pair->size;
      place.source = l.name;
      if (l.local != nullptr) {
        if (const auto local = detail::read_int(env, l.local, 0, 1L << 30))
          place.local_rank = *local;
      }
    } else if (pair->rank != place.rank || pair->size != place.size) {
      throw std::invalid_argument("seedrl: " + place.source + " says rank " +
                                  std::to_string(place.rank) + " of " + std::to_string(place.size) +
                                  ", but " + l.name + " says rank " + std::to_string(pair->rank) +
                                  " of " + std::to_string(pair->size) +
                                  "; unset the variables the launcher did not set");
    }
  }
  if (const char* addr = env("MASTER_ADDR"))
    place.master_addr = addr;
  if (const auto port = detail::read_int(env, "MASTER_PORT", 1, 65535))
    place.master_port = *port;
  if (place.size > 1 && place.source == "RANK / WORLD_SIZE" &&
      (place.master_addr.empty() || place.master_port == 0)) {
    throw std::invalid_argument(
        "seedrl: RANK / WORLD_SIZE give " + std::to_string(place.size) +
        " ranks but MASTER_ADDR and MASTER_PORT are not both set: the ranks meet at rank 0's "
        "MASTER_ADDR:MASTER_PORT (or launch them with mpirun or srun)");
  }
  return place;
}

}  // namespace seedrl::distributed
