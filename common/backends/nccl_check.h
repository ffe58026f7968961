// nccl_check.h: NCCL and CUDA return codes turned into the course's errors.
//
//   check_nccl(ncclAllReduce(...), "all_reduce(count 1000, op sum)");
//   check_cuda_call(cudaStreamCreate(&s), "cudaStreamCreate");
//
// Every NCCL or CUDA call of the nccl backend goes through these, so a failure is an
// exception naming the operation (and, through Error's prefix, the rank), never an
// ignored return code. The mapping:
//   ncclInvalidArgument, ncclInvalidUsage   ConfigError   (the caller passed something wrong)
//   ncclSystemError, ncclRemoteError        NetworkError  (a peer or the network failed)
//   ncclUnhandledCudaError, CUDA errors     SystemError   (the GPU or its driver failed)
//   anything else                           SystemError
//
// What this is not: the watchdog's error path (process_group_nccl_impl.h), which reports
// asynchronous errors found after a call returned; it uses nccl_error() to build them.
//
// Compiled only when CMake found NCCL (COURSE_HAVE_NCCL).
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <stdexcept>
#include <string>

namespace course {

/// The course error for NCCL result `result` while doing `what` (see the table above),
/// with NCCL's own text and what to try next. Never returns nullptr.
std::exception_ptr nccl_error(ncclResult_t result, const std::string& what);

/// Throws nccl_error(result, what) unless result is ncclSuccess or ncclInProgress (a
/// non-blocking communicator's "queued": the caller polls ncclCommGetAsyncError).
void check_nccl(ncclResult_t result, const std::string& what);

/// Throws SystemError naming `what` and CUDA's message unless status is cudaSuccess.
void check_cuda_call(cudaError_t status, const std::string& what);

}  // namespace course
