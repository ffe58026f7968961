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
  // TODO(lesson07): Fisher-Yates with Rng(seed + epoch), exactly as data_loader.h specifies
  COURSE_TODO();
  return order;
}

std::optional<Batch> DataLoader::next() {
  if (!started_) start_epoch(0);
  // The next batch_size indices of order_ from position_ (fewer at the end, or none when
  // drop_last), their rows gathered with gather_rows onto device_.
  // TODO(lesson07): the next slice of order_, gathered into a Batch
  COURSE_TODO();
}

}  // namespace course
