// blobs.h: a small classification set for the training tests: three classes of
// 8-dimensional points around different centres, with noise that depends on the index, so
// every rank and every run builds the same set and a model learns it in a few steps.
//
//   const Dataset train = course::test::blobs(300);
//
// What this is not: a benchmark set; lessons' drivers train on Fashion-MNIST.
#pragma once

#include <cmath>
#include <cstdint>

#include "dataset.h"
#include "tensor.h"

namespace course::test {

inline Dataset blobs(int64_t n) {
  Dataset d;
  d.classes = 3;
  d.inputs = Tensor::empty({n, 8});
  d.targets = Tensor::empty({n});
  for (int64_t i = 0; i < n; ++i) {
    const int64_t c = (i * 7) % 3;
    d.targets.data()[i] = static_cast<float>(c);
    for (int64_t j = 0; j < 8; ++j) {
      const float centre = (j % 3 == c) ? 2.0f : -1.0f;
      d.inputs.data()[i * 8 + j] = centre + 0.8f * static_cast<float>(std::sin(3.7 * i + 1.3 * j));
    }
  }
  return d;
}

}  // namespace course::test
