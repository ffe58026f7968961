// tensor_kernels.cpp: kernels_for(), the one place where CPU and CUDA code meet.
//
// Each device's kernels live in their own file and are reached only through here:
//   tensor_kernels_cpu.cpp   always built
//   tensor_kernels_cuda.cu   built when CMake finds nvcc (COURSE_HAVE_CUDA=1)
#include "tensor_kernels.h"

#include "error.h"

namespace course {

// Defined in tensor_kernels_cpu.cpp and tensor_kernels_cuda.cu.
const Kernels& cpu_kernels();
#if COURSE_HAVE_CUDA
const Kernels& cuda_kernels();
bool cuda_device_present();
#endif

const char* device_name(Device device) {
  return device == Device::cpu ? "cpu" : "cuda";
}

const Kernels& kernels_for(Device device) {
  if (device == Device::cpu) return cpu_kernels();
#if COURSE_HAVE_CUDA
  return cuda_kernels();
#else
  throw ConfigError(
      "a CUDA tensor was requested, but this build has no CUDA: install the CUDA toolkit "
      "(nvcc in /usr/local/cuda/bin) and reconfigure, or keep tensors on Device::cpu");
#endif
}

bool cuda_available() {
#if COURSE_HAVE_CUDA
  return cuda_device_present();
#else
  return false;
#endif
}

}  // namespace course
