#pragma once
/// \file
/// Whether a usable CUDA device is present, what it is, and a clear error when one is asked
/// for but absent. Host-only: a translation unit compiled by g++ or clang may include it (it
/// needs the toolkit's include directory and cudart only), so programs without kernels can ask.

#include <cuda_runtime_api.h>

#include <cstddef>
#include <stdexcept>
#include <string>

#include "seedrl/cuda/error.cuh"

namespace seedrl::cuda {

/// What the runtime says about the devices: how many are usable and, when none, why.
struct device_presence {
  int count = 0;       ///< usable devices (0 when the driver or the device is missing)
  std::string reason;  ///< when count is 0: the runtime's explanation
};

/// Asks the runtime how many devices there are; never throws. A machine without a driver or
/// without a GPU gives 0 and the runtime's reason (cudaErrorNoDevice, cudaErrorInsufficientDriver,
/// ...), which a caller can print.
inline device_presence query_devices() noexcept {
  int n = 0;
  const cudaError_t status = cudaGetDeviceCount(&n);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();  // clear it, so that a later check does not report it again
    return {0, std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status)};
  }
  if (n == 0) {
    return {0, "the CUDA runtime reports no devices"};
  }
  return {n, {}};
}

/// Whether at least one CUDA device is usable.
inline bool device_available() noexcept {
  return query_devices().count > 0;
}

/// The properties kernels choose launch shapes from.
struct device_info {
  int id = 0;                              ///< device ordinal
  std::string name;                        ///< e.g. "NVIDIA H200"
  int major = 0;                           ///< compute capability, major
  int minor = 0;                           ///< compute capability, minor
  int multiprocessors = 0;                 ///< SM count
  std::size_t shared_per_block_optin = 0;  ///< most dynamic shared memory a block may opt into
  std::size_t global_memory = 0;           ///< bytes
  bool cooperative_launch = false;         ///< whether grid-wide synchronisation is supported
};

/// Properties of device `id`; throws cuda_error when it does not exist.
inline device_info get_device_info(int id = 0) {
  cudaDeviceProp p{};
  SEEDRL_CUDA_CHECK(cudaGetDeviceProperties(&p, id));
  device_info d;
  d.id = id;
  d.name = p.name;
  d.major = p.major;
  d.minor = p.minor;
  d.multiprocessors = p.multiProcessorCount;
  d.shared_per_block_optin = p.sharedMemPerBlockOptin;
  d.global_memory = p.totalGlobalMem;
  d.cooperative_launch = p.cooperativeLaunch != 0;
  return d;
}

/// Throws std::runtime_error with a message a user can act on when no device is usable;
/// `what` says who asked (e.g. "--device cuda").
inline void require_device(const std::string& what) {
  const device_presence p = query_devices();
  if (p.count == 0) {
    throw std::runtime_error("seedrl: " + what +
                             " asks for a CUDA GPU, but none is usable on this machine (" +
                             p.reason + "); use the CPU backend (--device cpu) instead");
  }
}

}  // namespace seedrl::cuda
