// reductions_self_check.h: lesson 04, given: the driver's checks of the reductions, run on
// your lesson functions over a TcpComm, on the tcp ProcessGroup your lessons 02-04 make
// up, or on a ProcessGroup's (gloo) to compare.
//
// Inputs depend on rank and index (collective_oracle.h: powers of two, so every result is
// exact); every result is checked against a serial oracle, and each wrong one is recorded
// in a ResultChecker (result_checks.h) under the call's name, count and op.
//
// What this is not: the lesson's tests (make grade-lesson04), which cover more world
// sizes, counts and failures.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "driver.h"
#include "process_group.h"
#include "reduce_op.h"
#include "result_checks.h"
#include "tcp_comm.h"

namespace course {

/// The calls under test: your lesson functions on a TcpComm, or a ProcessGroup's.
struct Reductions {
  using InPlace = std::function<void(std::span<float>, ReduceOp)>;
  using Reducing = std::function<void(std::span<const float>, std::span<float>, ReduceOp)>;
  using Moving = std::function<void(std::span<const float>, std::span<float>)>;
  int rank = 0, size = 0;
  std::string prefix;  // put before every name below
  std::string reduce_name, all_reduce_name, reduce_scatter_name, all_gather_name, all_to_all_name;
  std::function<void(std::span<float>, ReduceOp, int root)> reduce;
  bool reduce_keeps_non_root = true;  // the lesson's reduce leaves non-roots' data alone
  InPlace all_reduce;
  Reducing reduce_scatter;
  Moving all_gather, all_to_all;
};

/// Your reduce_binomial_tree, all_reduce_naive, all_gather_naive, reduce_scatter_naive and
/// all_to_all_direct on `comm` (which must outlive the result).
Reductions lesson_reductions(TcpComm& comm);

/// `pg`'s reduce, all_reduce, all_gather, reduce_scatter and all_to_all (`pg` must outlive
/// the result).
Reductions group_reductions(ProcessGroup& pg);

/// Every call of `ops` for each of `counts` and every op (sum, prod, min, max, avg), the
/// reduce to every root, against the oracle.
void check_reductions(const Reductions& ops, const std::vector<size_t>& counts,
                      ResultChecker& checker);

/// The same through the ProcessGroup interface, async calls included: what lessons 09-11
/// will call.
void check_process_group(ProcessGroup& pg, ResultChecker& checker);

/// With 2 to 8 ranks, on a mesh of its own with a 10 s socket timeout: your
/// all_reduce_naive of 32 MiB and all_to_all_direct of 16 MiB per block, more than a
/// socket buffers. Returns "" or the deadlock's description (ranks that all send before
/// they receive wait for each other).
std::string check_large_messages(DriverContext& ctx, ResultChecker& checker);

}  // namespace course
