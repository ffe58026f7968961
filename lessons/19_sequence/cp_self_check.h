// cp_self_check.h: lesson 19, given: ./lesson19's check of your exercise before it trains,
// on the mesh's cp group (every rank calls it together).
//
//   const std::string problem = run_lesson19_self_check(*mesh.group("cp"));   // "" when well
//
// For each layout (zig-zag and contiguous), S = 8 C tokens of 3 heads... (n = 2 x heads
// problems, d = 4), inputs that depend on the problem, the position and the feature, the
// same whole-sequence arrays on every rank, each rank handed its own tokens:
//   ring_attention_forward   o and lse on the rank's tokens against attention_naive_forward
//                            on the whole sequence (one process's answer), to 1e-5
//   ring_attention_backward  dq, dk, dv from a position-dependent dout, likewise
//   ulysses_attention        (heads dividing C) its output and input gradients through the
//                            autograd, likewise
// The problem names the function, the array, the rank and the position at fault.
#pragma once

#include <string>

#include "process_group.h"

namespace course {

/// "" when every check passed, else the first problem (the same on every rank: the ranks
/// agree on the verdict with one all-reduce).
std::string run_lesson19_self_check(ProcessGroup& cp);

/// What ./lesson19 prints when the self-check passed.
extern const char* const kLesson19SelfCheckPassed;

}  // namespace course
