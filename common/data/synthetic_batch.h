// synthetic_batch.h: the made-up classification batch every training benchmark times its
// steps on (lessons 10, 13, 14, 15 and 16), written once: index-dependent values that
// differ per `salt` (a rank, a replica, a step), so no two rows and no two ranks agree.
//
//   auto [inputs, targets] = synthetic_batch(/*rows=*/64, /*inputs=*/784, /*classes=*/10,
//                                            /*salt=*/rank);
//
//   inputs[i][j] = sin(0.01 (j + 1) (i + 3 + 7 salt))      targets[i] = (i + salt) % classes
//
// What this is not: data to learn from. The drivers train on Fashion-MNIST; a benchmark
// only needs numbers of the right shape that are not all alike.
#pragma once

#include <cstdint>
#include <utility>

#include "tensor.h"

namespace course {

/// A batch of `rows` examples: inputs [rows, inputs] and targets [rows] (class indices
/// below `classes`, as floats), on the CPU, from the formulas above.
std::pair<Tensor, Tensor> synthetic_batch(int64_t rows, int64_t inputs, int64_t classes,
                                          int64_t salt);

}  // namespace course
