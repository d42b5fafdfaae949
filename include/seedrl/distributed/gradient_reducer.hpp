#pragma once
/// \file
/// `gradient_reducer`: what a data-parallel trainer needs from the ranks' collective library,
/// behind a virtual interface so the trainer does not depend on it (MPI for CPU ranks,
/// distributed/mpi_reducer.hpp; NCCL for GPU ranks, distributed/nccl_reducer.hpp). Every rank calls
/// the same members in the same order with arrays of the same size (the trainer's step does: one
/// fused gradient buffer per step, then the step's loss terms); a rank that does not would block
/// the others.
///
/// A trainer with a reducer averages each gradient step's gradient over the ranks before its
/// norm, clipping and optimizer step (runtime/training_step.hpp), so every rank applies the
/// same update and the parameters stay identical; a gradient that is not finite on one rank is
/// not finite on all after the mean, and every rank skips that step alike.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace seedrl::distributed {

/// See the file comment.
class gradient_reducer {
 public:
  virtual ~gradient_reducer() = default;

  /// This process's rank, 0 .. ranks()-1.
  virtual int rank() const = 0;
  /// Ranks taking part.
  virtual int ranks() const = 0;

  /// Replaces `values` on every rank by their element-wise mean over the ranks.
  virtual void mean(std::span<float> values) = 0;
  virtual void mean(std::span<double> values) = 0;
  /// The same for `n` values in the memory of the CUDA device this rank trains on, when the
  /// collective library reaches device memory (NCCL): true once done. False (the default)
  /// leaves the values alone: the caller then goes through host memory and mean().
  virtual bool mean_on_device(float* /*device_values*/, std::size_t /*n*/) { return false; }
  virtual bool mean_on_device(double* /*device_values*/, std::size_t /*n*/) { return false; }

  /// Gathers one value per rank (e.g. a hash of the parameters): the ranks' values by rank.
  virtual std::vector<std::uint64_t> gather(std::uint64_t value) = 0;
  /// Gathers an array of the same size from every rank: ranks() x values.size() values,
  /// rank 0's first (the learner's per-step status, runtime/rank_agreement.hpp).
  virtual std::vector<double> gather(std::span<const double> values) = 0;

  /// Ends every rank's process at once, with `code`, when this rank cannot go on and the
  /// others may be waiting for it inside a collective (a clean exit would leave them waiting,
  /// or hang in finalisation). Does not return.
  [[noreturn]] virtual void abort_all(int code) noexcept = 0;

  /// Where the ranks meet, for messages ("MPI_COMM_WORLD, 2 ranks").
  virtual std::string describe() const = 0;
};

}  // namespace seedrl::distributed
