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
  // BEGIN SOLUTION: chunks of ceil(batch / devices) rows, the last what is left
  const int64_t chunk = (batch + devices - 1) / devices;
  for (int64_t begin = 0; begin < batch; begin += chunk) {
    sizes.push_back(std::min(chunk, batch - begin));
  }
  // END SOLUTION
  return sizes;
}

std::vector<Tensor> scatter(const Tensor& batch, int devices) {
  if (!batch.defined() || batch.dim() < 1) {
    throw ConfigError("scatter: need a batch with a dimension 0 to cut, got " +
                      (batch.defined() ? shape_str(batch.shape()) : std::string("undefined")));
  }
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
