// mnist.h: MNIST and Fashion-MNIST from their IDX files (idx.h).
//
//   Dataset train = load_mnist(kFashionMnistDir, MnistSplit::train);   // 60000 examples
//   Dataset test  = load_mnist(kFashionMnistDir, MnistSplit::test);    // 10000 examples
//
// Both data sets use the same four file names, so one reader serves both:
//   train-images-idx3-ubyte[.gz]  train-labels-idx1-ubyte[.gz]
//   t10k-images-idx3-ubyte[.gz]   t10k-labels-idx1-ubyte[.gz]
// Debian's dataset-fashion-mnist package installs the gzip files in kFashionMnistDir;
// drivers take --data DIR for another copy (plain MNIST included).
//
// Result: inputs [N, rows*cols] with pixels scaled to [0, 1], targets [N] with labels
// 0..9 as floats, classes = 10. Standardise with dataset.h if the model wants it.
//
// Errors: ConfigError naming the file and the fix: a file missing (both names tried),
// anything idx.h rejects (wrong magic, truncated), a label count that differs from the
// image count, a label above 9.
#pragma once

#include <string>

#include "dataset.h"

namespace course {

inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

enum class MnistSplit { train, test };

Dataset load_mnist(const std::string& dir, MnistSplit split);

/// "T-shirt/top", "Trouser", ... for Fashion-MNIST labels 0..9.
const char* fashion_mnist_class_name(int label);

}  // namespace course
