// mnist.cpp: see mnist.h.
#include "mnist.h"

#include <sys/stat.h>

#include "error.h"
#include "idx.h"

namespace course {
namespace {

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// dir/name.gz if it exists, else dir/name if it exists, else ConfigError.
std::string find_file(const std::string& dir, const std::string& name) {
  std::string plain = dir + "/" + name;  // not const: `return plain` moves it
  if (file_exists(plain + ".gz")) return plain + ".gz";
  if (file_exists(plain)) return plain;
  throw ConfigError("cannot find " + plain + ".gz nor " + plain +
                    ": install dataset-fashion-mnist (make setup), or pass --data DIR with "
                    "the MNIST-format files");
}

}  // namespace

Dataset load_mnist(const std::string& dir, MnistSplit split) {
  const std::string prefix = split == MnistSplit::train ? "train" : "t10k";
  const std::string images_path = find_file(dir, prefix + "-images-idx3-ubyte");
  const std::string labels_path = find_file(dir, prefix + "-labels-idx1-ubyte");
  const IdxArray images = read_idx(images_path, 3);
  const IdxArray labels = read_idx(labels_path, 1);
  const int64_t n = images.dims[0];
  if (labels.dims[0] != n) {
    throw ConfigError(labels_path + " holds " + std::to_string(labels.dims[0]) + " labels but " +
                      images_path + " holds " + std::to_string(n) +
                      " images: the two files must come from the same data set and split");
  }
  const int64_t pixels = images.dims[1] * images.dims[2];
  Dataset data;
  data.classes = 10;
  data.inputs = Tensor::empty({n, pixels});
  data.targets = Tensor::empty({n});
  float* x = data.inputs.data();
  for (size_t i = 0; i < images.data.size(); ++i) x[i] = images.data[i] * (1.0f / 255.0f);
  float* y = data.targets.data();
  for (int64_t i = 0; i < n; ++i) {
    const int label = labels.data[static_cast<size_t>(i)];
    if (label >= data.classes) {
      throw ConfigError(labels_path + ": label " + std::to_string(label) + " at index " +
                        std::to_string(i) + " is not a class 0..9");
    }
    y[i] = static_cast<float>(label);
  }
  return data;
}

const char* fashion_mnist_class_name(int label) {
  static constexpr const char* kNames[] = {"T-shirt/top", "Trouser",   "Pullover", "Dress",
                                           "Coat",        "Sandal",    "Shirt",    "Sneaker",
                                           "Bag",         "Ankle boot"};
  return label >= 0 && label < 10 ? kNames[label] : "?";
}

}  // namespace course
