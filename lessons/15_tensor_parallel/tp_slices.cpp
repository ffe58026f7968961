// tp_slices.cpp: lesson 15, given: column slices of row-major [rows, cols] tensors and
// the all-gather along the columns that gather_from_tp and scatter_to_tp's backward use.
#include <algorithm>
#include <vector>

#include "error.h"
#include "tp_ops.h"

namespace course {

Tensor column_slice(const Tensor& x, int64_t begin, int64_t count) {
  if (x.dim() != 2 || begin < 0 || count < 0 || begin + count > x.size(1)) {
    throw ConfigError("column_slice: columns [" + std::to_string(begin) + ", " +
                      std::to_string(begin + count) + ") of " + shape_str(x.shape()));
  }
  const int64_t rows = x.size(0), cols = x.size(1);
  Tensor out = Tensor::empty({rows, count});
  const float* src = x.data();
  float* dst = out.data();
  for (int64_t r = 0; r < rows; ++r) {
    std::copy_n(src + r * cols + begin, count, dst + r * count);
  }
  return out;
}

Tensor all_gather_columns(const Tensor& x, ProcessGroup& tp) {
  if (x.dim() != 2) {
    throw ConfigError("all_gather_columns: expected [B, n], got " + shape_str(x.shape()));
  }
  const int T = tp.size();
  const int64_t rows = x.size(0), n = x.size(1);
  // The all-gather puts rank t's [B, n] block at offset t*B*n; each row of the output
  // takes n columns from every block.
  std::vector<float> blocks(static_cast<size_t>(T * rows * n));
  tp.all_gather(x.span(), blocks);
  Tensor out = Tensor::empty({rows, n * T});
  float* dst = out.data();
  for (int t = 0; t < T; ++t) {
    const float* block = blocks.data() + static_cast<int64_t>(t) * rows * n;
    for (int64_t r = 0; r < rows; ++r) {
      std::copy_n(block + r * n, n, dst + r * n * T + t * n);
    }
  }
  return out;
}

}  // namespace course
