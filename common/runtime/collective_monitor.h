// collective_monitor.h: when a collective fails, name the ranks that had not reached it.
//
// A rank that freezes (SIGSTOP, a debugger, an endless loop outside the collectives) says
// nothing; its peers fail with a consequence: "timed out waiting for rank 1", "peer closed
// the connection". The monitor turns that into the cause, in the spirit of torch's
// monitored_barrier and TORCH_DISTRIBUTED_DEBUG=DETAIL:
//
//   auto monitor = CollectiveMonitor::for_group(store, "pg", rank, world);
//   const uint64_t k = monitor->enter("all_reduce");   // every collective, in call order
//   try { ... the collective ... }
//   catch (...) { monitor->rethrow_with_report(k, "all_reduce"); }
//
// Each rank counts its collectives (1, 2, ...); the count is the same on every rank as long
// as they keep rule 1 of process_group.h. When collective k fails on a rank, it writes
// "k op" to the store under "monitor/<group>/failed/<rank>", waits up to `grace` (1.5 s)
// for every other rank's report, then rethrows its error (same type) with a diagnosis in
// front when there is one:
//   - a rank that sent no report had not reached collective k, or is stuck in it without
//     an error of its own (stopped, busy elsewhere, dead): it is named;
//   - a rank that failed at an earlier collective had not reached k: named, with its k;
//   - a rank at collective k with another op: the ranks disagree (a desync): both named.
// When every rank reported the same k and op, nothing is added (no rank is blamed).
// The diagnosis starts with "collective monitor:" (the launcher prefers it to the
// consequences, launch_diagnosis.h).
//
// COURSE_DEBUG_DESYNC=1 also records every entry in the store ("monitor/<group>/entered/
// <rank>" = "k op"), one store round trip per collective, so that a silent rank's last
// collective is known ("rank 2 entered collective 57 (all_reduce) and never reported"
// versus "rank 2's last collective was 56").
//
// The monitor has its own store connection (the rank's main one may be busy on another
// thread) with a short I/O timeout: if rank 0, which hosts the store, is the frozen one,
// the diagnosis says the store did not answer instead of hanging.
//
// What this is not: a watchdog. It acts only when a collective has already failed.
//
// Thread safety: enter() from the thread that issues collectives; rethrow_with_report()
// from any thread (the async worker's included); only the first failure is diagnosed.
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

  /// Counts the next collective, `op` ("all_reduce"), and returns its number (1, 2, ...).
  uint64_t enter(const std::string& op);

  /// Reports collective `seq` (`op`) as failed, waits for the others' reports and returns
  /// the diagnosis ("collective monitor: ..."), or "" when it names no rank. `error` is
  /// this rank's own error message, quoted at the end of the diagnosis.
  std::string report_failure(uint64_t seq, const std::string& op, const std::string& error);

  /// REQUIRES: called from a catch block. Rethrows the exception in flight, with
  /// report_failure()'s diagnosis in front of its message (same course error type). Only
  /// the first failure is diagnosed; later ones, and a NotImplementedError (a TODO, whose
  /// rank only reports without waiting), are rethrown unchanged.
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
  std::atomic<bool> diagnosed_{false};
};

/// True when COURSE_DEBUG_DESYNC is set to 1: monitors record every collective's entry.
bool debug_desync_enabled();

}  // namespace course
