// pp_self_check.h: lesson 16, given: ./lesson16's self-check of your exercise, before it
// trains (under a few seconds on 4 ranks).
//
//   const std::string problem = run_lesson16_self_check(mesh);   // "" when all is well
//
//   check_schedule    (first, whatever your builder does) accepts GPipe and 1F1B; refuses
//                     a schedule that deadlocks (deadlocking_schedule()) in the form of
//                     schedule.h's contract, a 1F1B of its own whose warm-up is counted
//                     from the wrong end (reversed_warmup_1f1b()), and one whose activations are
//                     received in another order than sent
//   build_1f1b        P = 2, M = 3, P = 4, M = 8 and P = 4, M = 2: each stage's order of
//                     computes against the closed form (warm-up min(P-1-s, M) forwards,
//                     then F/B pairs), with check_schedule's verdict on a wrong one; at
//                     most P - s micro-batches in flight on stage s
//   forward_action,   one stage holding a small MLP, M = 3 (check_one_stage_step): the
//   backward_action   gradients and loss of one process, the 1/M scale named; then
//                     GPipe and 1F1B on the mesh the run trains on (P stages x D
//                     replicas, the model deepened to P layers where P > 6:
//                     self_check_sizes) against one process on the whole batch, 3 SGD
//                     steps, within kPipelineTolerance (pp_equivalence.h)
//
// The problem names the function at fault and the case, not a consequence.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "device_mesh.h"
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

/// 1F1B's closed form with P = 4, M = 4 and the warm-up counted from the wrong end,
/// min(s, M) forwards on stage s: stage 0 runs F0 B0, and its B0 waits for stage 1's
/// gradient, which stage 1 sends only after its F1, which waits for the activation stage 0
/// sends after B0. Built without build_1f1b, so the check is shown whatever it does.
PipelineSchedule reversed_warmup_1f1b();

/// What check_schedule says of reversed_warmup_1f1b() ("check_schedule refuses ...:
/// deadlock: ..."), or that it accepted it. ./lesson16 prints it after the self-check.
std::string deadlock_demonstration();

/// The MLP compare_with_one_process trains in the self-check on `stages` stages: the sizes
/// of EquivalenceCase (6 layers), deeper where there are more stages than layers.
std::vector<int64_t> self_check_sizes(int stages);

/// One stage holding a small MLP (P = 1, no messages: `group` only hosts the executor), GPipe
/// and 1F1B with M = 3, against one process on the whole batch: "" or the problem, naming
/// the loss scaled by 1/M not at all or twice (gradients M or 1/M times one process's), or
/// the action at fault (PipelineExecutor's own checks of what each action keeps).
/// `world_ranks`: the world rank of each rank of `group`, for the errors (empty: the
/// group's ranks are world ranks).
std::string check_one_stage_step(ProcessGroup& group, const std::vector<int>& world_ranks = {});

/// "" when every check passed, else the first problem. Collective over the mesh {dp: D,
/// pp: P} (init_pipeline_mesh, stage_runner.h).
std::string run_lesson16_self_check(const DeviceMesh& mesh);
extern const char* const kLesson16SelfCheckPassed;

}  // namespace course
