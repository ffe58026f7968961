// naive_ddp.cpp: lesson 09, part 2: broadcast at construction, every gradient averaged
// after backward (see naive_ddp.h).
#include "naive_ddp.h"

#include <algorithm>
#include <cstring>

#include "error.h"
#include "tensor_ops.h"

namespace course {

void NaiveDdp::broadcast_state() {
  // Parameters in named_parameters() order, then buffers: every rank calls broadcast with
  // the same sequence of sizes, so message i on every rank is tensor i.
  // BEGIN SOLUTION: broadcast every parameter's data, then every buffer, from rank 0
  for (auto& [name, p] : params_) pg_.broadcast(p.data().device_span(), 0);
  for (auto& [name, b] : model_.named_buffers()) pg_.broadcast(b.span(), 0);
  // END SOLUTION
}

void NaiveDdp::sync_gradients_per_param() {
  // BEGIN SOLUTION: one all_reduce(SUM) per parameter's grad, in order, then scale by 1/N
  const float inv_world = 1.0f / static_cast<float>(pg_.size());
  for (auto& [name, p] : params_) {
    const Tensor g = p.grad();
    pg_.all_reduce(g.device_span(), ReduceOp::SUM);
    scale_(g, inv_world);
  }
  // END SOLUTION
}

void NaiveDdp::sync_gradients_flat() {
  // BEGIN SOLUTION: pack every grad into flat_, one all_reduce(SUM), scale, unpack
  const float inv_world = 1.0f / static_cast<float>(pg_.size());
  size_t total = 0;
  for (const auto& [name, p] : params_) total += static_cast<size_t>(p.numel());
  flat_.resize(total);
  size_t offset = 0;
  for (const auto& [name, p] : params_) {
    const std::span<const float> g = p.grad().span();
    std::copy(g.begin(), g.end(), flat_.begin() + static_cast<std::ptrdiff_t>(offset));
    offset += g.size();
  }
  pg_.all_reduce(flat_, ReduceOp::SUM);
  offset = 0;
  for (const auto& [name, p] : params_) {
    const std::span<float> g = p.grad().span();
    for (size_t i = 0; i < g.size(); ++i) g[i] = flat_[offset + i] * inv_world;
    offset += g.size();
  }
  // END SOLUTION
}

}  // namespace course
