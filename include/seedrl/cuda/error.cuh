#pragma once
/// \file
/// Errors from the CUDA runtime and cuBLAS as exceptions that name the failed call and the
/// library's own description of the error. Plain C++: a host-only translation unit compiled by
/// g++ or clang may include it (it needs the toolkit's include directory and cudart only).

#include <cublas_api.h>
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace seedrl::cuda {

/// A CUDA runtime, cuBLAS or cuDNN call failed; what() names the call and the error.
class cuda_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Throws `cuda_error` naming `call` when `status` is not cudaSuccess.
inline void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess) {
    throw cuda_error(std::string("seedrl: ") + call + " failed: " + cudaGetErrorName(status) +
                     " (" + cudaGetErrorString(status) + ")");
  }
}

/// Throws `cuda_error` naming `call` when `status` is not CUBLAS_STATUS_SUCCESS.
inline void check(cublasStatus_t status, const char* call) {
  if (status != CUBLAS_STATUS_SUCCESS) {
    throw cuda_error(std::string("seedrl: ") + call + " failed: " + cublasGetStatusName(status) +
                     " (" + cublasGetStatusString(status) + ")");
  }
}

/// Checks the launch of the kernel just issued (bad configuration, no device, missing image
/// for this GPU's architecture); errors inside the kernel surface at the next synchronisation.
inline void check_launch(const char* kernel) {
  check(cudaGetLastError(), kernel);
}

}  // namespace seedrl::cuda

/// Calls `expr` (a CUDA runtime or cuBLAS call) and throws seedrl::cuda::cuda_error naming it
/// when it fails.
#define SEEDRL_CUDA_CHECK(expr) ::seedrl::cuda::check((expr), #expr)
