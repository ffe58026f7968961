// data_loader.cpp: lesson 07, part 3: shuffling and batching (see data_loader.h).
#include "data_loader.h"

#include <numeric>
#include <span>
#include <utility>

#include "error.h"
#include "rng.h"
#include "tensor_ops.h"

namespace course {

std::vector<int64_t> RandomSampler::indices(int64_t epoch) const {
  std::vector<int64_t> order(static_cast<size_t>(n_));
  std::iota(order.begin(), order.end(), 0);
  // BEGIN SOLUTION: Fisher-Yates with Rng(seed + epoch), exactly as data_loader.h specifies
  Rng rng(seed_ + static_cast<uint64_t>(epoch));
  for (int64_t i = n_ - 1; i >= 1; --i) {
    const auto j = static_cast<int64_t>(rng.below(static_cast<uint64_t>(i) + 1));
    std::swap(order[i], order[j]);
  }
  // END SOLUTION
  return order;
}

std::optional<Batch> DataLoader::next() {
  if (!started_) start_epoch(0);
  // The next batch_size indices of order_ from position_ (fewer at the end, or none when
  // drop_last), their rows gathered with gather_rows onto device_.
  // BEGIN SOLUTION: the next slice of order_, gathered into a Batch
  const size_t remaining = order_.size() - position_;
  const size_t take = std::min(remaining, static_cast<size_t>(batch_size_));
  if (take == 0 || (drop_last_ && take < static_cast<size_t>(batch_size_))) return std::nullopt;
  const std::span<const int64_t> ids(order_.data() + position_, take);
  position_ += take;
  return Batch{gather_rows(data_.inputs, ids, device_), gather_rows(data_.targets, ids, device_)};
  // END SOLUTION
}

}  // namespace course
