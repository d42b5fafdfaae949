#pragma once
/// \file
/// Several learner ranks for the programs (docs/scaling.md): `mpirun -np K prog local|learner`
/// (or `srun`) starts K learners that train one policy together. `join_learner_ranks` reads
/// the launcher's variables and, for more than one rank, joins them: CPU ranks over MPI (the
/// programs link seedrl::mpi when CMake found an MPI library), GPU ranks (--device cuda) over
/// NCCL when the programs link seedrl::nccl, its id passed over MPI or, for ranks started with
/// RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT, over distributed/tcp_bootstrap.hpp.
/// `select_rank_gpu` gives each rank on a machine its own GPU; `rank_seeds` and `rank_port` keep
/// what must differ between ranks apart (their actors' environments and action sampling, their
/// ports on one machine) while the trainer's seed, and so every rank's initial parameters,
/// stay the same; `run_settings_hash` is what every rank must share, compared when they meet.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>

#include "seedrl/app/run_options.hpp"
#include "seedrl/distributed/gradient_reducer.hpp"
#include "seedrl/distributed/rendezvous.hpp"
#include "seedrl/distributed/state_check.hpp"
#include "seedrl/runtime/learner_config.hpp"
#include "seedrl/runtime/learner_stats.hpp"
#if defined(SEEDRL_HAS_MPI)
#include "seedrl/distributed/mpi_reducer.hpp"
#endif
#if defined(SEEDRL_HAS_NCCL)
#include "seedrl/distributed/nccl_reducer.hpp"
#include "seedrl/distributed/tcp_bootstrap.hpp"
#endif

namespace seedrl::app {

/// Ranks that train on the GPU each take one: with several ranks and CUDA_VISIBLE_DEVICES
/// unset, rank r on a machine sees only GPU r (its local rank), as Slurm's --gpus-per-task and
/// Kubernetes' one-GPU pods arrange by themselves. Call it before anything touches CUDA.
inline void select_rank_gpu(const run_options& o) {
  const distributed::world_place place = distributed::world_place_from_environment();
  if (place.size <= 1 || (train_device(o) != "cuda" && inference_device(o) != "cuda") ||
      std::getenv("CUDA_VISIBLE_DEVICES") != nullptr)
    return;
  ::setenv("CUDA_VISIBLE_DEVICES", std::to_string(place.local_rank).c_str(), 1);
}

/// This learner's ranks: null when it runs alone; else the reducer joining it to the others
/// (NCCL for GPU training where the program links it, else MPI). `settings_hash` is what the
/// MASTER_ADDR bootstrap compares. Throws std::runtime_error when the launcher asks for several
/// ranks and this program cannot join them (built without MPI, or started by a launcher MPI
/// does not know), or when the ranks do not meet.
inline std::shared_ptr<distributed::gradient_reducer> join_learner_ranks(
    const run_options& o, std::uint64_t settings_hash = 0) {
  const distributed::world_place place = distributed::world_place_from_environment();
  if (place.size <= 1)
    return nullptr;
#if defined(SEEDRL_HAS_NCCL)
  if (train_device(o) == "cuda") {
    namespace dist = distributed;
    std::shared_ptr<dist::gradient_reducer> control;
    dist::nccl_id_bytes id{};
    if (place.source == "RANK / WORLD_SIZE") {
      dist::tcp_bootstrap_config c;
      c.settings_hash = settings_hash;
      const auto mine = place.rank == 0 ? dist::new_nccl_id() : dist::nccl_id_bytes{};
      const auto got = dist::share_from_rank0(place, mine, c, [](const std::string& line) {
        std::fprintf(stderr, "%s\n", line.c_str());
      });
      if (got.size() != id.size())
        throw std::runtime_error("seedrl: the bootstrap gave " + std::to_string(got.size()) +
                                 " bytes, not an NCCL id");
      std::copy(got.begin(), got.end(), id.begin());
    } else {
#if defined(SEEDRL_HAS_MPI)
      control = std::make_shared<dist::mpi_reducer>();
      id = dist::nccl_id_over(*control, place.rank == 0 ? dist::new_nccl_id() : id);
#else
      throw std::runtime_error("seedrl: " + place.source +
                               " starts GPU learner ranks, but the "
                               "program was built without MPI to pass NCCL's id: start the "
                               "ranks with RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT");
#endif
    }
    // select_rank_gpu left this rank one visible GPU (or the launcher did).
    return std::make_shared<dist::nccl_reducer>(place.rank, place.size, id, 0, control);
  }
#else
  (void)o;
  (void)settings_hash;
#endif
#if defined(SEEDRL_HAS_MPI)
  if (place.source == "RANK / WORLD_SIZE") {
    throw std::runtime_error(
        "seedrl: " + place.source + " asks for " + std::to_string(place.size) +
        " learner ranks; CPU learner ranks meet over MPI: start them with mpirun or srun "
        "(GPU ranks, --device cuda, may meet over MASTER_ADDR; docs/scaling.md)");
  }
  return std::make_shared<distributed::mpi_reducer>();
#else
  throw std::runtime_error("seedrl: " + place.source + " starts this learner as rank " +
                           std::to_string(place.rank) + " of " + std::to_string(place.size) +
                           ", but the program was built without MPI: install libopenmpi-dev "
                           "openmpi-bin and rebuild (docs/scaling.md)");
#endif
}

/// What differs between ranks: rank r > 0 samples actions from its own stream and seeds its
/// actors past rank r - 1's; rank 0 keeps a lone learner's seeds.
struct rank_seed_plan {
  std::uint64_t action_sampling = 0;
  std::uint64_t first_actor = 0;  ///< actor i of this rank gets first_actor + i
};

inline rank_seed_plan rank_seeds(const run_options& o, int rank) {
  const auto r = static_cast<std::uint64_t>(rank);
  rank_seed_plan p;
  p.action_sampling = o.seed + r * 0x9E3779B97F4A7C15ull;
  p.first_actor = o.seed * 1000 + r * static_cast<std::uint64_t>(o.actors) + 1;
  return p;
}

/// The port rank `local_rank` on this machine listens on: --port + local_rank, so that ranks
/// sharing a machine do not collide (0 stays 0: each picks a free one).
inline std::uint16_t rank_port(std::uint16_t port, int local_rank) {
  if (port == 0 || local_rank == 0)
    return port;
  const long p = static_cast<long>(port) + local_rank;
  if (p > 65535)
    throw std::invalid_argument("--port " + std::to_string(port) + " + local rank " +
                                std::to_string(local_rank) + " is past 65535");
  return static_cast<std::uint16_t>(p);
}

/// A hash of the settings every rank must share: the learner's (batch, unroll, clipping, ...),
/// the algorithm's, the network's description and what checkpoints record. A rank started
/// with other flags is refused when the ranks meet, with both hashes printed.
inline std::uint64_t run_settings_hash(const run_options& o, const learner_config& lc,
                                       const std::string& algorithm) {
  std::string text = algorithm;
  const auto add = [&](const std::string& key, const std::string& value) {
    text += '\n' + key + '=' + value;
  };
  add("batch_size", std::to_string(lc.batch_size));
  add("unroll_length", std::to_string(lc.unroll_length));
  add("max_grad_norm", std::to_string(lc.max_grad_norm));
  add("learning_rate", o.learning_rate ? std::to_string(*o.learning_rate) : "recipe");
  add("adam_epsilon", o.adam_epsilon ? std::to_string(*o.adam_epsilon) : "default");
  add("entropy_cost", std::to_string(o.entropy_cost));
  add("discount", std::to_string(lc.scale_rewards.gamma));
  add("seed", std::to_string(o.seed));
  add("total_frames", std::to_string(o.total_frames));
  add("target_return", o.target_return ? std::to_string(*o.target_return) : "none");
  add("normalize_observations", std::to_string(lc.normalize_observations.enabled));
  add("scale_rewards", std::to_string(lc.scale_rewards.enabled));
  for (const auto& [key, value] : lc.checkpoint_meta)
    add(key, value);
  return distributed::hash_bytes(std::span<const char>(text.data(), text.size()));
}

/// The exit status of a run that stopped for `why` (the program's own statuses, run_learner.hpp):
/// 0 solved, or the frames spent without a target; 130 a signal; 1 anything else.
inline int exit_status_of(run_stop why, const run_options& o) {
  switch (why) {
    case run_stop::solved:
      return 0;
    case run_stop::frames_done:
      return o.target_return ? 1 : 0;
    case run_stop::signal:
      return 130;
    default:
      return 1;
  }
}

/// Rank 0's line when another rank's reason stopped the run; `s` is over_all_ranks.
inline std::string ranks_stopped_line(const learner_stats& s, double seconds) {
  char line[256];
  std::snprintf(line, sizeof line,
                "rank %d stopped the run (%s): mean return %.2f over the ranks' last 100 "
                "episodes each after %lld frames in %.0f s",
                s.stopping_rank, to_string(s.ranks_stopped), s.mean_return,
                static_cast<long long>(s.frames), seconds);
  return line;
}

}  // namespace seedrl::app
