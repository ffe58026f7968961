// dataset.h: a labelled data set held in memory, as two tensors (torch's TensorDataset).
//
//   Dataset train = load_mnist(kFashionMnistDir, MnistSplit::train);   // mnist.h
//   train.inputs   [60000, 784]   pixel values
//   train.targets  [60000]        class indices 0..9, stored as floats
//
// Example i is (inputs.rows(i, 1), targets[i]). Samplers and data loaders (lesson 07,
// lesson 09's DistributedSampler) choose the order; gather_rows (tensor_ops.h) assembles
// a batch.
//
// What this is not: a streaming loader. Everything is in memory (Fashion-MNIST is 188 MB
// as floats).
#pragma once

#include <cstdint>

#include "tensor.h"

namespace course {

/// A labelled data set: example i is (inputs.rows(i, 1), targets[i]).
struct Dataset {
  Tensor inputs;        ///< [N, ...] features, on the CPU
  Tensor targets;       ///< [N] class indices as floats (exact below 2^24)
  int64_t classes = 0;  ///< number of classes; every target is in [0, classes)

  /// The number of examples (0 when empty).
  int64_t size() const { return inputs.defined() ? inputs.size(0) : 0; }
};

/// The first `count` examples, sharing storage with `data` (no copy).
/// REQUIRES: 0 <= count <= data.size() (ConfigError otherwise).
Dataset dataset_head(const Dataset& data, int64_t count);

/// The mean and standard deviation of all input values.
struct Standardization {
  float mean = 0;    ///< of every input value
  float stddev = 1;  ///< of every input value
};
/// Computed over every value of data.inputs (in double). An empty data set gives {0, 1}.
Standardization input_statistics(const Dataset& data);
/// inputs = (inputs - mean) / stddev, in place (every view of the storage sees it).
/// REQUIRES: stddev > 0.
void standardize_(Dataset& data, const Standardization& s);

}  // namespace course
