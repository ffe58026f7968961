// hooks_self_check.h: lesson 14, given: the self-check ./lesson14 runs before anything else.
//
//   const std::string problem = run_lesson14_self_check(*group);   // "" when all matched
//
// THE SELF-CHECK (run_lesson14_self_check, under a second), on rank-dependent data against
// serial oracles, naming the first thing that differs:
//   compress_and_all_reduce  fp16 and bf16: every element equals the oracle's (the halves
//                            of x_r / N summed in rank order in float32, rounded once);
//                            "the sum, not the mean" when the division is missing
//   orthogonalize            orthonormal columns spanning the input's; a dependent column
//                            becomes zeros
//   PowerSgd                 before start_iter the bucket is the plain mean; with the
//                            rank at min(n, m) it is the plain mean too;
//                            over three compressed steps with rank 1, what each rank meant
//                            to send equals what it sent plus its final error
//
#pragma once

#include <string>

#include "process_group.h"

namespace course {

/// The self-check above: "" when everything matched, else the first difference (the same
/// text on every rank). Collective.
std::string run_lesson14_self_check(ProcessGroup& group);
/// What rank 0 prints when the self-check passed.
extern const char* const kLesson14SelfCheckPassed;

}  // namespace course
