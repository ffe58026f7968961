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
void cuda_open_blas_library();
// Defined in tensor_device_cuda.cpp.
int cuda_runtime_device_count();
void cuda_runtime_set_device(int index);
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

int cuda_device_count() {
#if COURSE_HAVE_CUDA
  return cuda_runtime_device_count();
#else
  return 0;
#endif
}

void cuda_set_device(int index) {
#if COURSE_HAVE_CUDA
  const int count = cuda_runtime_device_count();
  if (count == 0) {
    throw ConfigError(
        "--device cuda: this machine has no GPU that the CUDA driver sees (nvidia-smi lists "
        "them): run with --device cpu");
  }
  if (index < 0 || index >= count) {
    throw ConfigError("--device cuda: this rank wants GPU " + std::to_string(index) +
                      " (its LOCAL_RANK), but this machine has " + std::to_string(count) +
                      ": start at most one rank per GPU on each machine");
  }
  cuda_runtime_set_device(index);
#else
  (void)index;
  throw ConfigError(
      "--device cuda: this build has no CUDA: install the CUDA toolkit (nvcc in "
      "/usr/local/cuda/bin) and reconfigure (make clean, or delete the build directory), "
      "or run with --device cpu");
#endif
}

void cuda_open_blas() {
#if COURSE_HAVE_CUDA
  cuda_open_blas_library();
#else
  throw ConfigError(
      "cuBLAS: this build has no CUDA: install the CUDA toolkit (nvcc in "
      "/usr/local/cuda/bin) and reconfigure");
#endif
}

Device parse_device(const std::string& name) {
  if (name == "cpu") return Device::cpu;
  if (name == "cuda") return Device::cuda;
  throw ConfigError("unknown device '" + name + "': pass cpu or cuda");
}

}  // namespace course
