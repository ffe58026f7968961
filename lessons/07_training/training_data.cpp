// training_data.cpp: lesson 07, given: the drivers' data (see training_data.h).
#include "training_data.h"

#include "mnist.h"

namespace course {

TrainingData load_training_data(const std::string& dir, int64_t limit,
                                const std::vector<int64_t>& hidden) {
  TrainingData d;
  d.train = load_mnist(dir, MnistSplit::train);
  d.test = load_mnist(dir, MnistSplit::test);
  if (limit > 0 && limit < d.train.size()) d.train = dataset_head(d.train, limit);
  d.norm = input_statistics(d.train);
  standardize_(d.train, d.norm);
  standardize_(d.test, d.norm);
  d.sizes = {d.train.inputs.size(1)};
  d.sizes.insert(d.sizes.end(), hidden.begin(), hidden.end());
  d.sizes.push_back(d.train.classes);
  return d;
}

}  // namespace course
