// cublas_library.cpp: opens cuBLAS at its first use (cublas_library.h).
#include "cublas_library.h"

#include <dlfcn.h>

#include <string>

#include "error.h"

namespace course {
namespace {

template <typename Fn>
void find_symbol(void* lib, const std::string& path, const char* name, Fn& fn) {
  fn = reinterpret_cast<Fn>(::dlsym(lib, name));
  if (fn == nullptr) {
    throw SystemError("cuBLAS: " + path + " has no " + name +
                      ": it is not the cuBLAS of the toolkit this was built with (CUDA " +
                      std::to_string(CUBLAS_VER_MAJOR) + "); rebuild, or fix LD_LIBRARY_PATH");
  }
}

CublasLibrary open_cublas() {
  // By name first (LD_LIBRARY_PATH, the system's paths), then in the toolkit's library
  // folder (COURSE_CUBLAS_DIR, from CMake).
  const std::string name = "libcublas.so." + std::to_string(CUBLAS_VER_MAJOR);
  std::string path = name;
  void* lib = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  const std::string first_error = lib == nullptr ? ::dlerror() : "";
#ifdef COURSE_CUBLAS_DIR
  if (lib == nullptr) {
    path = COURSE_CUBLAS_DIR "/";
    path += name;
    lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  }
#endif
  if (lib == nullptr) {
    throw SystemError("cuBLAS: cannot open " + name + " (" + first_error +
                      "): put the CUDA toolkit's library folder on LD_LIBRARY_PATH, or keep "
                      "tensors on Device::cpu");
  }
  // cublas_v2.h names these by macros (cublasCreate is cublasCreate_v2): dlsym needs the
  // names the library exports.
  CublasLibrary fns;
  find_symbol(lib, path, "cublasCreate_v2", fns.create);
  find_symbol(lib, path, "cublasDestroy_v2", fns.destroy);
  find_symbol(lib, path, "cublasSgemm_v2", fns.sgemm);
  return fns;
}

}  // namespace

const CublasLibrary& cublas_library() {
  static const CublasLibrary fns = open_cublas();
  return fns;
}

// Declared in tensor_kernels.cpp, behind cuda_open_blas() (tensor_kernels.h).
void cuda_open_blas_library() {
  (void)cublas_library();
}

}  // namespace course
