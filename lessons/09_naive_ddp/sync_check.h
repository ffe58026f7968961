// sync_check.h: lesson 09, given: what the drivers' self-checks (ddp_self_check.h, lesson
// 10's reducer_self_check.h) share: gradients with a closed-form mean over ranks, a reading
// of how a synchronised gradient went wrong, and one problem agreed on every rank.
//
//   rank r sets parameter j's gradient to   own_j[i]  = (r + 1) * c_j[i]
//   so the mean over N ranks is             mean_j[i] = (N + 1) / 2 * c_j[i]
//   and a synchronised gradient that is     N * mean_j   forgot the 1/N
//                                           mean_j / N   divided twice
//                                           own_j        never received the mean
//                                           0            was zeroed, not written back
//
//   std::string problem = describe_gradient_error(name, got, mean, own, world);
//   problem = first_problem_on_any_rank(problem, pg);   // the same line on every rank
//
// What this is not: a test; the lesson's tests (make grade-lesson09) check far more cases.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "process_group.h"

namespace course {

/// c_j[i]: the rank-independent part of the self-checks' gradients (never 0, differs
/// between parameters and between elements).
float self_check_gradient_base(size_t param, size_t element);

/// "" when `got` equals `mean` (relative tolerance 1e-5); otherwise one clause saying how
/// it differs, for the named parameter on this rank, e.g. "\"0.weight\" on rank 1 is 2
/// times the mean over ranks (the sum: multiply by 1/N after all_reduce(SUM))".
/// REQUIRES: the three spans have the same length.
std::string describe_gradient_error(const std::string& name, int rank, int world,
                                    std::span<const float> got, std::span<const float> mean,
                                    std::span<const float> own);

/// Collective. "" when `problem` is empty on every rank; otherwise the lowest failing
/// rank's `problem`, returned on every rank (so every rank prints the same verdict).
std::string first_problem_on_any_rank(const std::string& problem, ProcessGroup& pg);

/// "{3, 2, 1, 0}" (for messages).
std::string format_list(const std::vector<size_t>& values);

}  // namespace course
