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
  // TODO(lesson09): broadcast every parameter's data, then every buffer, from rank 0
  COURSE_TODO();
}

void NaiveDdp::sync_gradients_per_param() {
  // TODO(lesson09): one all_reduce(SUM) per parameter's grad, in order, then scale by 1/N
  COURSE_TODO();
}

void NaiveDdp::sync_gradients_flat() {
  // TODO(lesson09): pack every grad into flat_, one all_reduce(SUM), scale, unpack
  COURSE_TODO();
}

}  // namespace course
