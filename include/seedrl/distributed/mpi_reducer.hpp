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
/// Meeting: before its first collective the reducer has every rank say hello to rank 0 with
/// point-to-point messages it can wait on with a deadline; a rank that has not arrived when it
/// passes (one still loading, one stuck before the learner) is named and the job aborted,
/// instead of every other rank waiting in a collective forever.
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
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
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

/// Waits on `r` until it completes or `deadline` passes; false on the deadline.
inline bool wait_until(MPI_Request& r, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    int done = 0;
    mpi_check(MPI_Test(&r, &done, MPI_STATUS_IGNORE), "MPI_Test");
    if (done)
      return true;
    if (std::chrono::steady_clock::now() >= deadline) {
      MPI_Cancel(&r);
      MPI_Request_free(&r);
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

/// The ranks of `comm` meet within `within` (see the file comment): every rank sends rank 0 a
/// hello, rank 0 answers each once all arrived. Returns an empty string when they met, else
/// what went wrong, naming the ranks that did not arrive (on rank 0) or rank 0 (on the
/// others). Each call uses tags of its own, so a late hello never meets a later call.
inline std::string meet_ranks(MPI_Comm comm, std::chrono::milliseconds within) {
  static int round = 0;
  const int hello_tag = 0x5eed0 + 2 * (round % 1000), answer_tag = hello_tag + 1;
  ++round;
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const auto deadline = std::chrono::steady_clock::now() + within;
  const std::string waited = std::to_string(within.count() / 1000.0).substr(0, 5) + " s";
  int token = rank;
  if (rank != 0) {
    mpi_check(MPI_Send(&token, 1, MPI_INT, 0, hello_tag, comm), "MPI_Send");
    MPI_Request answer = MPI_REQUEST_NULL;
    mpi_check(MPI_Irecv(&token, 1, MPI_INT, 0, answer_tag, comm, &answer), "MPI_Irecv");
    if (!wait_until(answer, deadline))
      return "seedrl: learner rank " + std::to_string(rank) + " of " + std::to_string(size) +
             ": rank 0 did not confirm within " + waited + " that every rank arrived";
    return {};
  }
  std::vector<int> hello(static_cast<std::size_t>(size), 0);
  std::vector<MPI_Request> pending(static_cast<std::size_t>(size), MPI_REQUEST_NULL);
  for (int k = 1; k < size; ++k)
    mpi_check(MPI_Irecv(&hello[static_cast<std::size_t>(k)], 1, MPI_INT, k, hello_tag, comm,
                        &pending[static_cast<std::size_t>(k)]),
              "MPI_Irecv");
  std::string missing;
  int count = 0;
  for (int k = 1; k < size; ++k) {
    if (!wait_until(pending[static_cast<std::size_t>(k)], deadline)) {
      missing += (missing.empty() ? "" : ", ") + std::to_string(k);
      ++count;
    }
  }
  if (count > 0)
    return "seedrl: learner rank 0 of " + std::to_string(size) + ": rank" +
           (count > 1 ? "s " : " ") + missing + (count > 1 ? " have" : " has") +
           " not arrived within " + waited + " (still starting, or stuck before the learner)";
  for (int k = 1; k < size; ++k)
    mpi_check(MPI_Send(&token, 1, MPI_INT, k, answer_tag, comm), "MPI_Send");
  return {};
}

}  // namespace detail

/// See the file comment.
class mpi_reducer final : public gradient_reducer {
 public:
  /// Joins MPI_COMM_WORLD (initialising MPI if needed), once every rank arrived within
  /// `meet_within` (else it says which did not, on stderr, and aborts the job: see the file
  /// comment). Throws std::runtime_error when what MPI reports differs from the launcher's
  /// variables (world_place_from_environment), e.g. ranks started by hand instead of by mpirun.
  explicit mpi_reducer(std::chrono::milliseconds meet_within = std::chrono::minutes(5)) {
    detail::mpi_runtime::get();
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    const world_place place = world_place_from_environment();
    if (place.size > 1 && (place.rank != rank_ || place.size != size_)) {
      throw std::runtime_error("seedrl: MPI says rank " + std::to_string(rank_) + " of " +
                               std::to_string(size_) + ", but " + place.source + " says rank " +
                               std::to_string(place.rank) + " of " + std::to_string(place.size));
    }
    if (size_ > 1) {
      if (const std::string failed = detail::meet_ranks(MPI_COMM_WORLD, meet_within);
          !failed.empty()) {
        std::fprintf(stderr, "%s\n", failed.c_str());
        std::fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
    }
    // Collective: every rank is known to be here now.
    detail::mpi_check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
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

  std::vector<double> gather(std::span<const double> values) override {
    const int n = static_cast<int>(values.size());
    std::vector<double> all(values.size() * static_cast<std::size_t>(size_));
    detail::mpi_check(MPI_Allgather(values.data(), n, MPI_DOUBLE, all.data(), n, MPI_DOUBLE, comm_),
                      "MPI_Allgather");
    return all;
  }

  [[noreturn]] void abort_all(int code) noexcept override {
    MPI_Abort(comm_, code);
    std::_Exit(code);  // MPI_Abort does not return; this is for the compiler
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
