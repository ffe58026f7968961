// one_to_all_self_check.h: lesson 03, given: the driver's checks of the one-to-all
// collectives, run on your lesson functions over a TcpComm or on a ProcessGroup's (gloo)
// to compare.
//
// For counts 0, 1, N+1 and 100003 and every root, with rank- and index-dependent inputs
// (collective_oracle.h): broadcast_flat, broadcast_binomial_tree, scatter_flat and
// gather_flat against the serial oracle; then barrier_dissemination, checked through the
// store (nobody may leave before everybody has arrived). When all pass, a 16 MiB broadcast
// from rank 0 is timed both ways, flat against tree (the slowest rank's time).
//
// What this is not: the lesson's tests (make grade-lesson03), which cover more world
// sizes, counts and failures.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "driver.h"
#include "process_group.h"
#include "tcp_comm.h"

namespace course {

/// The calls under test: your lesson functions on a TcpComm, or a ProcessGroup's.
struct OneToAll {
  using Broadcast = std::function<void(std::span<float>, int root)>;
  using Rooted = std::function<void(std::span<const float>, std::span<float>, int root)>;
  struct NamedBroadcast {
    std::string name, label;  // label: in the timing line
    Broadcast call;
  };
  int rank = 0, size = 0;
  std::vector<NamedBroadcast> broadcasts;
  std::string scatter_name, gather_name, barrier_name;
  Rooted scatter, gather;
  std::function<void()> barrier;
};

/// Your broadcast_flat, broadcast_binomial_tree, scatter_flat, gather_flat and
/// barrier_dissemination on `comm` (which must outlive the result).
OneToAll lesson_one_to_all(TcpComm& comm);

/// `pg`'s broadcast, scatter, gather and barrier (`pg` must outlive the result).
OneToAll group_one_to_all(ProcessGroup& pg);

/// The checks above on every rank, then the timing; prints to standard output. `on` ends
/// the verdict's text: "" for your functions, " on gloo" for a group.
Verdict run_one_to_all_checks(const OneToAll& ops, DriverContext& ctx, const std::string& on);

}  // namespace course
