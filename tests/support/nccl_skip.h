// nccl_skip.h: the skip every NCCL test starts with, written once.
//
// SKIP_WITHOUT_NCCL_GPU() skips the test, saying why, on a machine without a CUDA device or
// in a build without NCCL (CUDA and NCCL are compiled wherever nvcc is found, and run only
// where a GPU is: docs/gpu.md).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "process_group_factory.h"
#include "tensor_kernels.h"

namespace course::test {

/// True when this build can make nccl groups (`--backend nccl` is offered).
inline bool build_has_nccl() {
  for (const std::string& b : backend_choices()) {
    if (b == "nccl") return true;
  }
  return false;
}

}  // namespace course::test

#define SKIP_WITHOUT_NCCL_GPU()                                               \
  if (!::course::cuda_available()) GTEST_SKIP() << "skipped: no CUDA device"; \
  if (!::course::test::build_has_nccl()) GTEST_SKIP() << "skipped: this build has no NCCL"
