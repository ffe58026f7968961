// launch_diagnosis.h: which rank's failure the launcher reports, and who froze.
//
// When one rank of a job fails, the others usually fail soon after because of it: their
// connection to it closes or is reset, or they time out waiting for it. The verdict has to
// quote the cause, not a consequence (torchrun's "first failure"):
//
//   1. the first failure in time, when it is a clear error of the rank's own (not a
//      timeout, not a consequence, not a report about another rank): rank 0 failing first
//      with "cannot open --init ..." is the cause, whatever the others say after it;
//   2. a rank's own error or its death by a signal beats another rank's report that names
//      it ("the store did not answer ... rank 0, which hosts it, is likely ... dead" is
//      about rank 0, which said why, or was killed by signal 9);
//   3. a collective monitor's report (collective_monitor.h: "collective monitor: ...
//      rank 2 has not reached it") beats other errors: it names the cause itself;
//   4. a rank's own error (a mismatch, a protocol error, a timeout) beats a consequence
//      ("the peer closed the connection", "connection reset");
//   5. among those, the earliest in time wins; and when the ranks failed alike (the same
//      verdict but for their own rank number, as a missed accuracy target), the lowest
//      rank of them is named; when they all printed the very same verdict (a self-check's
//      problem agreed across ranks) and it names exactly one of them ("... element 0 on
//      rank 2 ..."), that rank, whose check failed.
//
// A rank that freezes (stopped by SIGSTOP or a debugger, or spinning) never prints
// anything; its peers time out waiting for it, naming it in their message ("... from rank
// 2"). diagnose_launch() names such a rank: it is stopped, or it is named by a timed-out
// peer's message and never ended on its own.
//
// What this is not: a debugger. It reads exit codes, verdict lines and /proc, nothing else.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace course {

/// What the launcher observed of one rank, in the terms the diagnosis needs.
struct RankObservation {
  int rank = -1;                  ///< the rank this is about
  bool failed = false;            ///< non-zero exit or a signal, on its own (not stopped by us)
  bool ended_on_its_own = false;  ///< exited before the launcher stopped it
  bool stopped = false;           ///< was in state T (SIGSTOP, debugger) when the job stopped
  uint64_t order = 0;             ///< when it ended (or printed its verdict): smaller is earlier
  std::string verdict;            ///< its last verdict line, or ""
  std::string how;                ///< "exited with code 1", "was killed by signal 9 (SIGKILL)"
  int signal = 0;                 ///< the signal that ended it on its own, or 0
};

/// True when a verdict describes a consequence of another rank's failure (its connection
/// closed or reset) rather than an error of the rank's own.
bool is_consequence(const std::string& verdict);

/// True when a verdict carries a collective monitor's diagnosis (collective_monitor.h).
bool is_collective_report(const std::string& verdict);

/// The ranks a collective monitor's report names (before its "The error here:"), sorted:
/// "... rank 2 is frozen or dead ..." -> {2}; "... ranks 1, 3 are ..." -> {1, 3}.
std::vector<int> ranks_named_by_report(const std::string& verdict);

/// The index (into `ranks`) of the failure to report, or -1 when none failed.
int pick_cause(const std::vector<RankObservation>& ranks);

/// "; rank 2 was frozen (its process was stopped: SIGSTOP or a debugger) and never
/// answered", "; rank 2 never answered: rank 3 timed out waiting for it", or "".
std::string describe_frozen(const std::vector<RankObservation>& ranks);

}  // namespace course
