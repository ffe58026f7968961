// pp_self_check.h: lesson 16, given: ./lesson16's self-check of your exercise, before it
// trains (under a few seconds on 4 ranks).
//
//   const std::string problem = run_lesson16_self_check(group);   // "" when all is well
//
//   build_1f1b        P = 2, M = 3 and P = 4, M = 8: each stage's order of computes against
//                     the closed form (warm-up min(P-1-s, M) forwards, then F/B pairs);
//                     at most P - s micro-batches in flight on stage s
//   check_schedule    accepts GPipe and 1F1B; refuses a schedule that deadlocks
//                     (deadlocking_schedule()) naming the stage and micro-batch, and one
//                     whose activations are sent in another order than received
//   forward_action,   GPipe and 1F1B on the whole group (P = N) against one process on
//   backward_action   the whole batch, 3 SGD steps, within kPipelineTolerance
//
// The problem names the function at fault and the case, not a consequence.
#pragma once

#include <string>

#include "process_group.h"
#include "schedule.h"

namespace course {

/// Largest |pipeline - one process| the checks and tests allow over the parameters after
/// 20 SGD steps: both compute the same sums, in another order (per micro-batch, then
/// accumulated), so float32 rounding differs in the last bits.
inline constexpr double kPipelineTolerance = 1e-5;

/// P = 2, M = 2: stage 0 runs F0 B0 F1 B1, stage 1 runs F0 F1 B0 B1. Stage 1's F1 waits for
/// an activation stage 0 sends only after B0, which waits for stage 1's B0: a deadlock,
/// although every message pairs up.
PipelineSchedule deadlocking_schedule();

/// "" when every check passed, else the first problem. Collective over the group.
std::string run_lesson16_self_check(ProcessGroup& group);
extern const char* const kLesson16SelfCheckPassed;

}  // namespace course
