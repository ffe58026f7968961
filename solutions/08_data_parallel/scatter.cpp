// scatter.cpp: lesson 08, part 1: torch.chunk's sizes, and the chunks as views (see scatter.h).
#include "scatter.h"

#include <algorithm>

#include "error.h"
#include "exercise_checks.h"

namespace course {

std::vector<int64_t> scatter_chunk_sizes(int64_t batch, int devices) {
  check_scatter_sizes(batch, devices);
  std::vector<int64_t> sizes;
  // BEGIN SOLUTION: chunks of ceil(batch / devices) rows, the last what is left
  const int64_t chunk = (batch + devices - 1) / devices;
  for (int64_t begin = 0; begin < batch; begin += chunk) {
    sizes.push_back(std::min(chunk, batch - begin));
  }
  // END SOLUTION
  return sizes;
}

std::vector<Tensor> scatter(const Tensor& batch, int devices) {
  check_scatter_batch(batch);
  const std::vector<int64_t> sizes = scatter_chunk_sizes(batch.size(0), devices);
  std::vector<Tensor> chunks;
  // BEGIN SOLUTION: one view of consecutive rows per size (Tensor::rows)
  int64_t begin = 0;
  for (const int64_t rows : sizes) {
    chunks.push_back(batch.rows(begin, rows));
    begin += rows;
  }
  // END SOLUTION
  return chunks;
}

}  // namespace course
