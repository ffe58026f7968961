// tensor_device_cuda.cpp: the CUDA runtime's device count and selection, behind
// cuda_device_count() and cuda_set_device() (tensor_kernels.h), which add the checks and
// the messages. Built only when CMake finds CUDA (COURSE_HAVE_CUDA=1).
#include <cuda_runtime.h>

#include <string>

#include "error.h"

namespace course {

int cuda_runtime_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // "no driver" or "no device": reported as zero GPUs
    return 0;
  }
  return count;
}

void cuda_runtime_set_device(int index) {
  const cudaError_t status = cudaSetDevice(index);
  if (status != cudaSuccess) {
    throw SystemError("cudaSetDevice(" + std::to_string(index) +
                      "): " + cudaGetErrorString(status) + ". Check the GPU with nvidia-smi");
  }
}

}  // namespace course
