// scatter.cpp: lesson 08, part 1: torch.chunk's sizes, and the chunks as views (see scatter.h).
#include "scatter.h"

#include <string>

#include "error.h"

namespace course {

std::vector<int64_t> scatter_chunk_sizes(int64_t batch, int devices) {
  if (batch < 1 || devices < 1) {
    throw ConfigError("scatter: a batch of " + std::to_string(batch) + " rows over " +
                      std::to_string(devices) +
                      " devices; need at least one row and one device (is the batch empty?)");
  }
  std::vector<int64_t> sizes;
  // TODO(lesson08): chunks of ceil(batch / devices) rows, the last what is left
  COURSE_TODO();
  return sizes;
}

std::vector<Tensor> scatter(const Tensor& batch, int devices) {
  if (!batch.defined() || batch.dim() < 1) {
    throw ConfigError("scatter: need a batch with a dimension 0 to cut, got " +
                      (batch.defined() ? shape_str(batch.shape()) : std::string("undefined")));
  }
  const std::vector<int64_t> sizes = scatter_chunk_sizes(batch.size(0), devices);
  std::vector<Tensor> chunks;
  // TODO(lesson08): one view of consecutive rows per size (Tensor::rows)
  COURSE_TODO();
  return chunks;
}

}  // namespace course
