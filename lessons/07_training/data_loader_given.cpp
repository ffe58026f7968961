// data_loader_given.cpp: lesson 07, given: the sequential sampler and the DataLoader's
// set-up and bookkeeping. RandomSampler::indices and DataLoader::next are the exercise.
#include <numeric>
#include <utility>

#include "data_loader.h"
#include "error.h"

namespace course {

std::vector<int64_t> SequentialSampler::indices(int64_t) const {
  std::vector<int64_t> order(static_cast<size_t>(n_));
  std::iota(order.begin(), order.end(), 0);
  return order;
}

DataLoader::DataLoader(const Dataset& data, int64_t batch_size,
                       std::shared_ptr<const Sampler> sampler, bool drop_last, Device device)
    : data_(data),
      batch_size_(batch_size),
      sampler_(std::move(sampler)),
      drop_last_(drop_last),
      device_(device) {
  if (batch_size < 1) throw ConfigError("DataLoader: batch_size must be at least 1");
  if (!sampler_) throw ConfigError("DataLoader: no sampler");
}

void DataLoader::start_epoch(int64_t epoch) {
  order_ = sampler_->indices(epoch);
  position_ = 0;
  started_ = true;
}

int64_t DataLoader::num_batches() const {
  const int64_t n = started_ ? static_cast<int64_t>(order_.size()) : data_.size();
  return drop_last_ ? n / batch_size_ : (n + batch_size_ - 1) / batch_size_;
}

}  // namespace course
