// reducer_self_check.h: lesson 10, given: the driver's self-check, run before training, of
// what a default run cannot see (an MLP's gradients arrive in the same order on every rank,
// so launching buckets as they become ready would pass it). Each failure names the
// function, the case, and where it can the parameter and the bucket.
//
//   1. compute_bucket_assignment_by_size against worked tables (bucket_assignment.h's
//      example, an order that is not reverse, limit 0, a limit larger than the model).
//   2. A Reducer over six parameters of 16 bytes each, limits 32 bytes: three buckets
//      {w5, w4}, {w3, w2}, {w1, w0}. Every rank uses the parameters in its own order, so
//      its gradients, and its buckets, become ready in a rank-dependent order:
//
//        rank 0  uses w5 w4 w3 w2 w1 w0   gradients arrive w0 w1 ... w5   ready 2, 1, 0
//        rank 1  uses w0 w2 w4 w1 w3 w5   gradients arrive w5 w3 w1 ...   ready 0, 1, 2
//        rank 2  uses w3 w0 w5 w1 w4 w2   gradients arrive w2 w4 w1 ...   ready 1, 2, 0
//
//      After backward: nothing pending; launch_log() is {0, 1, 2} on every rank;
//      ready_log() is this rank's ready order; every gradient is the mean over ranks of
//      (r + 1) * c (sync_check.h), or the first parameter that is not is named with its
//      bucket and the kind of difference (the sum, this rank's own, zero, ...).
//   3. rebuild_buckets(): every rank adopts the layout of rank 0's arrival order,
//      {w0, w1}, {w2, w3}, {w4, w5}; then a second iteration, checked as in 2.
//
// The buckets are all the same size, so a rank that launches them out of order still
// meets its peers' all-reduces with the same byte counts: the mistake shows as a wrong
// launch_log() or wrong gradients, named, instead of a hang or a protocol error.
// What this is not: the lesson's tests (make grade-lesson10), which cover more layouts,
// find_unused_parameters, no_sync, gradient_as_bucket_view and the trace.
#pragma once

#include <string>

#include "process_group.h"

namespace course {

/// Part 1: "" or the first worked table the assignment gets wrong. Local.
std::string self_check_bucket_assignment();

/// Parts 2 and 3, collectively: "" or the first problem (the same text on every rank).
std::string self_check_reducer(ProcessGroup& pg);

/// What the driver prints when run_lesson10_self_check passes.
constexpr const char* kLesson10SelfCheckPassed =
    "self-check: bucket assignment tables, launch order with rank-dependent gradient "
    "arrival, ready_log, every bucket's mean written back, rebuilt buckets: as expected";

/// Parts 1 to 3; every rank returns the same text.
std::string run_lesson10_self_check(ProcessGroup& pg);

}  // namespace course
