// scatter.h: lesson 08, part 1: cutting a batch into one chunk per device
// (torch.nn.parallel.scatter, i.e. Tensor.chunk along dimension 0).
//
//   scatter_chunk_sizes(10, 4)   // {3, 3, 3, 1}
//   scatter_chunk_sizes(6, 4)    // {2, 2, 2}      device 3 gets nothing and is skipped
//   scatter_chunk_sizes(2, 4)    // {1, 1}         a batch smaller than the devices
//   std::vector<Tensor> chunks = scatter(inputs, 4);   // views of inputs' rows
//
// torch's rule (Tensor.chunk): every chunk has c = ceil(B / K) rows except the last,
// which has what is left; so there are ceil(B / c) chunks, which can be fewer than K.
// DataParallel then replicates the module onto only as many devices as there are chunks.
//
//       inputs [B, ...]                   B = 10, K = 4, c = ceil(10 / 4) = 3
//   ┌───┬───┬───┬───┬───┬───┬───┬───┬───┬───┐
//   │ 0 │ 1 │ 2 │ 3 │ 4 │ 5 │ 6 │ 7 │ 8 │ 9 │
//   └───┴───┴───┴───┴───┴───┴───┴───┴───┴───┘
//    device 0    device 1    device 2    device 3
//    rows 0-2    rows 3-5    rows 6-8    row 9
//
// Scatter's backward is a gather (gather.h) and gather's backward is a scatter of the
// gradient with the same chunk sizes: the two are each other's adjoint.
//
// What this is not: a copy. On CPU "devices" the chunks are views (Tensor::rows) of the
// batch; on real GPUs each chunk is a host-to-device copy.
#pragma once

#include <cstdint>
#include <vector>

#include "tensor.h"

namespace course {

/// The rows each device gets, in device order, as torch.chunk computes them; every entry
/// is >= 1 and they sum to `batch`.
/// REQUIRES: batch >= 1 and devices >= 1 (ConfigError naming the value otherwise: an
/// empty batch has nothing to scatter).
std::vector<int64_t> scatter_chunk_sizes(int64_t batch, int devices);

/// `batch` cut along dimension 0 by scatter_chunk_sizes(batch.size(0), devices): chunk k
/// is a view of rows [offset_k, offset_k + size_k).
/// REQUIRES: batch.dim() >= 1 and the conditions above.
std::vector<Tensor> scatter(const Tensor& batch, int devices);

}  // namespace course
