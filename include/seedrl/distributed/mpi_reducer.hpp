#pragma once
/// \file
/// `mpi_reducer`: the gradient_reducer of CPU learner ranks over MPI (Open MPI from Debian's
/// `libopenmpi-dev`; any MPI-3 library works). Link `seedrl::mpi` (CMake adds it when it finds
/// MPI) and start the ranks with `mpirun -np K` or `srun`.
///
/// MPI is initialised on first use, asking for MPI_THREAD_SERIALIZED: the learner calls the
/// reducer from its trainer thread, not the thread that started MPI, one call at a time. It is
/// finalised at exit, unless the program initialised MPI itself (then that is the program's).
/// The reducer works on a duplicate of MPI_COMM_WORLD, so the program's own messages never
/// mix with the trainer's.
///
/// Failure: MPI's default error handler aborts the whole job on a communication error, and
/// mpirun stops every rank when one dies (naming it); so a killed rank never leaves the
/// others blocked in a collective.

// The C API only: MPI's C++ bindings (deprecated since MPI-2.2) do not build warning-free.
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "seedrl/distributed/gradient_reducer.hpp"
#include "seedrl/distributed/rendezvous.hpp"

namespace seedrl::distributed {

namespace detail {

/// MPI for this process: initialised once, finalised at exit when we initialised it.
class mpi_runtime {
 public:
  static mpi_runtime& get() {
    static mpi_runtime runtime;
    return runtime;
  }
  mpi_runtime(const mpi_runtime&) = delete;
  mpi_runtime& operator=(const mpi_runtime&) = delete;

 private:
  mpi_runtime() {
    int ready = 0;
    MPI_Initialized(&ready);
    if (ready) {
      int provided = MPI_THREAD_SINGLE;
      MPI_Query_thread(&provided);
      check_threads(provided);
      return;
    }
    int provided = MPI_THREAD_SINGLE;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
      throw std::runtime_error("seedrl: MPI_Init_thread failed");
    owned_ = true;
    check_threads(provided);
  }
  ~mpi_runtime() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owned_ && !finalized)
      MPI_Finalize();
  }
  static void check_threads(int provided) {
    if (provided < MPI_THREAD_SERIALIZED) {
      throw std::runtime_error(
          "seedrl: this MPI library gives thread level " + std::to_string(provided) +
          "; the learner's trainer thread needs MPI_THREAD_SERIALIZED (if the program calls "
          "MPI_Init itself, make it MPI_Init_thread with MPI_THREAD_SERIALIZED)");
    }
  }
  bool owned_ = false;
};

template <class T>
MPI_Datatype mpi_type() {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>);
  if constexpr (std::is_same_v<T, float>)
    return MPI_FLOAT;
  else
    return MPI_DOUBLE;
}

inline void mpi_check(int code, const char* what) {
  if (code != MPI_SUCCESS) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(code, text, &length);
    throw std::runtime_error(std::string("seedrl: ") + what +
                             " failed: " + std::string(text, static_cast<std::size_t>(length)));
  }
}

}  // namespace detail

/// See the file comment.
class mpi_reducer final : public gradient_reducer {
 public:
  /// Joins MPI_COMM_WORLD (initialising MPI if needed). Throws std::runtime_error when what
  /// MPI reports differs from the launcher's variables (world_place_from_environment), e.g.
  /// ranks started by hand instead of by mpirun.
  mpi_reducer() {
    detail::mpi_runtime::get();
    detail::mpi_check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    const world_place place = world_place_from_environment();
    if (place.size > 1 && (place.rank != rank_ || place.size != size_)) {
      throw std::runtime_error("seedrl: MPI says rank " + std::to_string(rank_) + " of " +
                               std::to_string(size_) + ", but " + place.source + " says rank " +
                               std::to_string(place.rank) + " of " + std::to_string(place.size));
    }
  }
  mpi_reducer(const mpi_reducer&) = delete;
  mpi_reducer& operator=(const mpi_reducer&) = delete;
  ~mpi_reducer() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
      MPI_Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int ranks() const override { return size_; }

  void mean(std::span<float> values) override { sum_and_scale(values); }
  void mean(std::span<double> values) override { sum_and_scale(values); }

  std::vector<std::uint64_t> gather(std::uint64_t value) override {
    std::vector<std::uint64_t> all(static_cast<std::size_t>(size_));
    detail::mpi_check(MPI_Allgather(&value, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, comm_),
                      "MPI_Allgather");
    return all;
  }

  std::string describe() const override {
    return "MPI_COMM_WORLD, " + std::to_string(size_) + " ranks";
  }

 private:
  /// One all-reduce over the whole array (MPI's count is an int: chunks of 2^30 past that).
  template <class T>
  void sum_and_scale(std::span<T> values) {
    if (size_ == 1)
      return;
    constexpr std::size_t most = 1u << 30;
    for (std::size_t at = 0; at < values.size(); at += most) {
      const int n = static_cast<int>(std::min(most, values.size() - at));
      detail::mpi_check(
          MPI_Allreduce(MPI_IN_PLACE, values.data() + at, n, detail::mpi_type<T>(), MPI_SUM, comm_),
          "MPI_Allreduce");
    }
    const T scale = T(1) / static_cast<T>(size_);
    for (T& v : values)
      v *= scale;
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
};

}  // namespace seedrl::distributed
