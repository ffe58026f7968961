// cublas_library.h: cuBLAS, opened (dlopen) at its first use instead of linked.
//
// Loading cuBLAS maps libcublasLt (over 500 MB) and relocates it: about 0.1 s of CPU at
// every process's start, GPU or not, while a test run starts thousands of processes that
// never touch a GPU. So the library is opened when tensor_kernels_cuda.cu first needs it,
// and the kernels call the three functions they use through cublas_library().
//
// Built only when CMake finds CUDA (COURSE_HAVE_CUDA=1). Tested by tests/common/
// tensor_test.cpp (TensorCuda.CublasIsOpenedAtFirstUseNotAtStart), with or without a GPU.
#pragma once

#include <cublas_v2.h>

namespace course {

/// The cuBLAS functions the CUDA kernels call.
struct CublasLibrary {
  /// cublasCreate: a handle (tensor_kernels_cuda.cu keeps one per thread).
  decltype(&cublasCreate) create = nullptr;
  /// cublasDestroy: the handle freed at its thread's end.
  decltype(&cublasDestroy) destroy = nullptr;
  /// cublasSgemm: every matrix product on a GPU.
  decltype(&cublasSgemm) sgemm = nullptr;
};

/// cuBLAS of the major version this was compiled against, opened at the first call (by
/// name, then in the toolkit's folder that CMake found) and open until the process ends.
/// Throws SystemError naming the library and what to do when it cannot be opened.
const CublasLibrary& cublas_library();

}  // namespace course
