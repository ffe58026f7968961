// synthetic_batch.cpp: see synthetic_batch.h.
#include "synthetic_batch.h"

#include <cmath>

namespace course {

std::pair<Tensor, Tensor> synthetic_batch(int64_t rows, int64_t inputs, int64_t classes,
                                          int64_t salt) {
  Tensor x = Tensor::empty({rows, inputs});
  Tensor y = Tensor::empty({rows});
  for (int64_t i = 0; i < rows; ++i) {
    y.data()[i] = static_cast<float>((i + salt) % classes);
    for (int64_t j = 0; j < inputs; ++j) {
      x.data()[i * inputs + j] = static_cast<float>(
          std::sin(0.01 * static_cast<double>(j + 1) * static_cast<double>(i + 3 + 7 * salt)));
    }
  }
  return {x, y};
}

}  // namespace course
