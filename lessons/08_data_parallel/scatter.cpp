// scatter.cpp: lesson 08, part 1: torch.chunk's sizes, and the chunks as views (see scatter.h).
#include "scatter.h"

#include <algorithm>

#include "error.h"
#include "exercise_checks.h"

namespace course {

std::vector<int64_t> scatter_chunk_sizes(int64_t batch, int devices) {
  check_scatter_sizes(batch, devices);
  std::vector<int64_t> sizes;
  // TODO(lesson08): chunks of ceil(batch / devices) rows, the last what is left
  COURSE_TODO();
  return sizes;
}

std::vector<Tensor> scatter(const Tensor& batch, int devices) {
  check_scatter_batch(batch);
  const std::vector<int64_t> sizes = scatter_chunk_sizes(batch.size(0), devices);
  std::vector<Tensor> chunks;
  // TODO(lesson08): one view of consecutive rows per size (Tensor::rows)
  COURSE_TODO();
  return chunks;
}

}  // namespace course
