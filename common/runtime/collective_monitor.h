// collective_monitor.h: when a collective fails, name the ranks that had not reached it.
//
// A rank that freezes (SIGSTOP, a debugger, an endless loop outside the collectives) says
// nothing; its peers fail with a consequence: "timed out waiting for rank 1", "peer closed
// the connection". The monitor turns that into the cause, in the spirit of torch's
// monitored_barrier and TORCH_DISTRIBUTED_DEBUG=DETAIL:
//
//   auto monitor = CollectiveMonitor::for_group(store, "pg", rank, world);
//   const uint64_t k = monitor->enter("all_reduce");   // every collective, in call order
//   try { ... the collective ...; monitor->leave(k); }
//   catch (...) { monitor->rethrow_with_report(k, "all_reduce"); }
//
// Each rank counts its collectives (1, 2, ...) per group, and which it has finished; the
// count is the same on every rank as long as they keep rule 1 of process_group.h. Every
// process that has a monitor also runs one AGENT thread, blocked in the store on an alarm
// key (no polling, no cost while all is well). When collective k of group G fails on a
// rank, that rank rings the alarm and waits up to `grace` (1.5 s) for every other rank's
// agent to answer with where each of its groups stands; then it rethrows its error (same
// type) with a diagnosis in front when there is one:
//   - a rank that did not answer is frozen (SIGSTOP, a debugger) or dead: it is named;
//   - a rank whose count in G is below k had not reached collective k: named, with where
//     it is (alive: busy outside the collectives, or stuck in another group's collective);
//   - a rank at collective k of G with another op: the ranks disagree (a desync): named;
//   - ranks that had passed k are mentioned with the collective they are in now.
// When every rank answered and reached collective k with the same op, nothing is added (no
// rank is blamed). The diagnosis starts with "collective monitor:" (the launcher prefers
// it to the consequences, launch_diagnosis.h). A rank idling through a long phase of its
// own (lesson 05's link measurement) answers, so it is never taken for a frozen one.
//
// COURSE_DEBUG_DESYNC=1 also records every entry in the store ("monitor/<group>/entered/
// <rank>" = "k op"), one store round trip per collective, so that even a frozen rank's
// last collective is known ("rank 2 had entered collective 57 (all_reduce)").
//
// The monitor has its own store connection (the rank's main one may be busy on another
// thread) with a short I/O timeout: if rank 0, which hosts the store, is the frozen one,
// the diagnosis says the store did not answer instead of hanging.
//
// What this is not: a watchdog. It acts only when a collective has already failed.
//
// Thread safety: enter() and leave() from the thread that issues collectives (or runs
// them, for async ones); rethrow_with_report() from any thread; only the first failure of
// a monitor is diagnosed.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "store.h"

namespace course {

/// How long a failing rank waits for the other ranks' reports.
constexpr Millis kCollectiveMonitorGrace{1500};

/// Counts a group's collectives and diagnoses the first that fails (see the top of this file).
class CollectiveMonitor {
 public:
  /// `store`: a connection of this monitor's own; `group` keys the reports (two groups of
  /// one job need two names); `record_entries`: the COURSE_DEBUG_DESYNC mode above.
  CollectiveMonitor(std::unique_ptr<StoreClient> store, std::string group, int rank, int world,
                    Millis grace = kCollectiveMonitorGrace, bool record_entries = false);
  CollectiveMonitor(const CollectiveMonitor&) = delete;
  CollectiveMonitor& operator=(const CollectiveMonitor&) = delete;

  /// A monitor on a new connection to the same store as `store`, recording entries when
  /// COURSE_DEBUG_DESYNC=1.
  static std::unique_ptr<CollectiveMonitor> for_group(StoreClient& store, const std::string& group,
                                                      int rank, int world);

  /// Stops answering for this group (the agent forgets it).
  ~CollectiveMonitor();

  /// Counts the next collective, `op` ("all_reduce"), and returns its number (1, 2, ...).
  uint64_t enter(const std::string& op);
  /// Collective `seq` has finished on this rank.
  void leave(uint64_t seq);
  /// What the agent answers for this group: "group<TAB>entered<TAB>finished<TAB>op".
  std::string state_line() const;

  /// Rings the alarm for collective `seq` (`op`), waits for the other ranks' answers and
  /// returns the diagnosis ("collective monitor: ..."), or "" when it names no rank.
  /// `error` is this rank's own error message, quoted at the end of the diagnosis.
  std::string report_failure(uint64_t seq, const std::string& op, const std::string& error);

  /// REQUIRES: called from a catch block. Rethrows the exception in flight, with
  /// report_failure()'s diagnosis in front of its message (same course error type). Only
  /// the first failure is diagnosed; later ones, and a NotImplementedError (a TODO, which
  /// the driver reports its own way), are rethrown unchanged.
  [[noreturn]] void rethrow_with_report(uint64_t seq, const std::string& op);

  /// The group name the reports are keyed by.
  const std::string& group() const { return group_; }

 private:
  std::string key(const char* kind, int rank) const;

  std::unique_ptr<StoreClient> store_;
  std::mutex store_mu_;  // store_ is one connection: one request at a time
  std::string group_;
  int rank_;
  int world_;
  Millis grace_;
  bool record_entries_;
  std::atomic<uint64_t> entered_{0};
  std::atomic<uint64_t> left_{0};
  mutable std::mutex op_mu_;
  std::string last_op_;  // the op of collective entered_
  std::atomic<bool> diagnosed_{false};
};

/// True when COURSE_DEBUG_DESYNC is set to 1: monitors record every collective's entry.
bool debug_desync_enabled();

}  // namespace course
