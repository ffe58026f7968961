// training_data.h: lesson 07, given: the data of the training drivers (lessons 07 to 11).
//
//   TrainingData d = load_training_data(kFashionMnistDir, /*limit=*/0, {512, 512});
//   auto model = make_mlp(d.sizes, rng);   // 784 -> 512 -> 512 -> 10
//
// The MNIST-format training and test sets of a directory, both standardised with the
// statistics of the training set (as torchvision's transforms.Normalize with the training
// set's mean and std), and the layer sizes of the MLP that fits them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dataset.h"

namespace course {

/// What load_training_data returns.
struct TrainingData {
  Dataset train, test;
  Standardization norm;        ///< the training set's statistics, applied to both sets
  std::vector<int64_t> sizes;  ///< the MLP: inputs, hidden..., classes
};

/// Loads dir's training and test sets (load_mnist), keeps the first `limit` training
/// examples when 0 < limit < their count, standardises both sets with the training set's
/// mean and std, and lists the MLP's sizes for the `hidden` layer sizes.
TrainingData load_training_data(const std::string& dir, int64_t limit,
                                const std::vector<int64_t>& hidden);

}  // namespace course
