// recompute.cpp: lesson 18, part 1: activation recomputation (see recompute.h).
//
// Two halves of one idea: the forward runs fn without recording and keeps only its inputs;
// the backward runs fn again, recording, and back-propagates through what it recorded.
#include "recompute.h"

#include "error.h"
#include "tensor_ops.h"

namespace course {

Variable checkpoint(const CheckpointFn& fn, const std::vector<Variable>& inputs) {
  if (!fn) throw ConfigError("checkpoint: fn is empty");
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      throw ConfigError("checkpoint: input " + std::to_string(i) + " is undefined");
    }
  }
  // TODO(lesson18): run fn without recording, then record one CheckpointBackward on inputs
  COURSE_TODO();
}

std::vector<Tensor> CheckpointBackward::apply(const Tensor& g) {
  // TODO(lesson18): fresh leaves, fn again with recording on, backward from its result
  COURSE_TODO();
}

}  // namespace course
