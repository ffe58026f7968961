// nccl_check.cpp: see nccl_check.h.
#include "nccl_check.h"

#include "error.h"

namespace course {

std::exception_ptr nccl_error(ncclResult_t result, const std::string& what) {
  const std::string text = std::string("nccl ") + what + ": " + ncclGetErrorString(result);
  const char* last = ncclGetLastError(nullptr);
  const std::string detail = last && *last ? text + " (" + last + ")" : text;
  switch (result) {
    case ncclInvalidArgument:
    case ncclInvalidUsage:
      return std::make_exception_ptr(
          ConfigError(detail +
                      ". Check that the buffers are CUDA memory of this rank's GPU and that the "
                      "sizes and roots are the same on every rank"));
    case ncclSystemError:
    case ncclRemoteError:
      return std::make_exception_ptr(
          NetworkError(detail +
                       ". A peer exited or the network failed; NCCL_DEBUG=WARN prints NCCL's "
                       "own account"));
    case ncclUnhandledCudaError:
      return std::make_exception_ptr(
          SystemError(detail + ". Check the GPU with nvidia-smi; NCCL_DEBUG=WARN says more"));
    default:
      return std::make_exception_ptr(SystemError(detail + ". NCCL_DEBUG=WARN says more"));
  }
}

void check_nccl(ncclResult_t result, const std::string& what) {
  if (result == ncclSuccess || result == ncclInProgress) return;
  std::rethrow_exception(nccl_error(result, what));
}

void check_cuda_call(cudaError_t status, const std::string& what) {
  if (status == cudaSuccess) return;
  throw SystemError("nccl backend: " + what + ": " + cudaGetErrorString(status) +
                    ". Check the GPU with nvidia-smi (one rank per GPU, LOCAL_RANK < the "
                    "number of GPUs)");
}

}  // namespace course
