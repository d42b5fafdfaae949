// NCCL learner ranks (seedrl/distributed/nccl_reducer.hpp) on the GPUs of this machine: ranks as
// threads of one process, one CUDA device each when there are two or more; with one device two
// ranks share it where this NCCL allows that, else one rank runs alone (NCCL refuses two ranks
// of a communicator on one device). Checked against a serial float64 sum of what every rank
// holds: the host mean, the in-place device mean (the trainer's path), both gathers; then a
// rank that stops taking part makes the other's collective fail within the timeout, naming it.
// Exits 77 (ctest: skipped), saying why, without a usable device.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "seedrl/distributed/nccl_reducer.hpp"

namespace {

namespace dist = seedrl::distributed;

int failures = 0;

void check(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "FAILED: %s\n", what.c_str());
    ++failures;
  }
}

// Rank r's value i: distinct per rank and element, exact in float.
float value(int r, std::size_t i) {
  return static_cast<float>((r + 1) * 0.25 + static_cast<double>(i % 97) * 0.5);
}

// What one rank saw; compared on the main thread once the ranks joined.
struct rank_result {
  std::vector<float> host_mean;
  std::vector<float> device_mean;
  std::vector<double> gathered;
  std::vector<std::uint64_t> hashes;
  std::string error;
};

rank_result run_rank(int rank, int ranks, int device, const dist::nccl_id_bytes& id,
                     std::size_t n) {
  rank_result out;
  try {
    dist::nccl_reducer_config config;
    config.timeout = std::chrono::seconds(30);  // inside ctest's limit, should a rank hang
    dist::nccl_reducer reducer(rank, ranks, id, device, nullptr, config);
    out.host_mean.resize(n);
    for (std::size_t i = 0; i < n; ++i)
      out.host_mean[i] = value(rank, i);
    reducer.mean(std::span<float>(out.host_mean));
    // The trainer's path: the gradient already on the device, averaged in place.
    float* d = nullptr;
    cudaSetDevice(device);
    if (cudaMalloc(&d, n * sizeof(float)) != cudaSuccess)
      throw std::runtime_error("cudaMalloc failed");
    std::vector<float> mine(n);
    for (std::size_t i = 0; i < n; ++i)
      mine[i] = value(rank, i);
    cudaMemcpy(d, mine.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    if (!reducer.mean_on_device(d, n))
      throw std::runtime_error("mean_on_device declined");
    out.device_mean.resize(n);
    cudaMemcpy(out.device_mean.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(d);
    const double status[3] = {1.0 * rank, 2.0 * rank, -1.0};
    out.gathered = reducer.gather(std::span<const double>(status));
    out.hashes = reducer.gather(std::uint64_t{1000} + static_cast<std::uint64_t>(rank));
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  return out;
}

}  // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no usable CUDA device: NCCL tests skipped\n");
    return 77;
  }
  const std::size_t n = 100'003;  // not a multiple of anything NCCL chunks by
  // Two ranks: on two devices, or both on device 0 where NCCL accepts that.
  int ranks = 2;
  const auto id = dist::new_nccl_id();
  auto a = std::async(std::launch::async, run_rank, 0, ranks, 0, id, n);
  auto b = std::async(std::launch::async, run_rank, 1, ranks, devices > 1 ? 1 : 0, id, n);
  std::vector<rank_result> results{a.get(), b.get()};
  // NCCL refuses two ranks of one communicator on one device (ncclInvalidUsage, "invalid
  // usage" in its message) in most versions.
  const auto refused = [](const std::string& e) {
    return e.find("invalid usage") != std::string::npos ||
           e.find("Duplicate GPU") != std::string::npos;
  };
  if (devices == 1 && (refused(results[0].error) || refused(results[1].error))) {
    std::printf("this NCCL refuses two ranks on one device (%s); one rank alone instead\n",
                results[0].error.c_str());
    ranks = 1;
    results = {run_rank(0, 1, 0, dist::new_nccl_id(), n)};
  }
  for (int r = 0; r < ranks; ++r)
    check(results[r].error.empty(), "rank " + std::to_string(r) + ": " + results[r].error);
  if (failures > 0)
    return 1;
  for (int r = 0; r < ranks; ++r) {
    double worst = 0;
    for (std::size_t i = 0; i < n; ++i) {
      double sum = 0;  // the serial reference, in float64
      for (int q = 0; q < ranks; ++q)
        sum += value(q, i);
      const double mean = sum / ranks;
      worst = std::max({worst, std::abs(double{results[r].host_mean[i]} - mean),
                        std::abs(double{results[r].device_mean[i]} - mean)});
    }
    check(worst <= 1e-5, "rank " + std::to_string(r) + ": mean off by " + std::to_string(worst));
    check(results[r].gathered.size() == static_cast<std::size_t>(3 * ranks), "gather(span) size");
    for (int q = 0; q < ranks && results[r].gathered.size() == 3u * ranks; ++q) {
      check(results[r].gathered[3 * q] == q && results[r].gathered[3 * q + 1] == 2.0 * q &&
                results[r].gathered[3 * q + 2] == -1.0,
            "gather(span): rank " + std::to_string(q) + "'s values in place");
    }
    check(results[r].hashes.size() == static_cast<std::size_t>(ranks), "gather(u64) size");
    for (int q = 0; q < ranks && results[r].hashes.size() == static_cast<std::size_t>(ranks); ++q)
      check(results[r].hashes[q] == 1000u + q, "gather(u64) by rank");
  }

  if (ranks == 2) {
    // Rank 1 joins, then never takes part: rank 0's all-reduce fails within the timeout.
    const auto lonely = dist::new_nccl_id();
    dist::nccl_reducer_config quick;
    quick.timeout = std::chrono::seconds(3);
    auto absent = std::async(std::launch::async, [&] {
      dist::nccl_reducer r(1, 2, lonely, devices > 1 ? 1 : 0, nullptr, quick);
      std::this_thread::sleep_for(std::chrono::seconds(6));
    });
    std::string error;
    const auto start = std::chrono::steady_clock::now();
    try {
      dist::nccl_reducer r(0, 2, lonely, 0, nullptr, quick);
      std::vector<float> v(1000, 1.0f);
      r.mean(std::span<float>(v));
    } catch (const std::exception& e) {
      error = e.what();
    }
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    check(error.find("rank 0 of 2") != std::string::npos, "the lost rank's error: " + error);
    check(waited < 10.0, "the wait ended within the timeout, took " + std::to_string(waited));
    absent.wait();
  }
  std::printf("%s: NCCL %d rank(s) on %d device(s)\n", failures == 0 ? "PASS" : "FAIL", ranks,
              devices);
  return failures == 0 ? 0 : 1;
}
