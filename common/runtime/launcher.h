// launcher.h: starts N ranks as processes and watches them (the course's mp.spawn / torchrun).
//
// Each rank gets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT,
// COURSE_JOB_TOKEN and, unless already set, OMP_NUM_THREADS=1 and OPENBLAS_NUM_THREADS=1.
// Its stdout and stderr lines are printed with a "[rank r] " prefix (whole lines, never
// interleaved mid-line). When any rank dies (non-zero exit or a signal) the others get
// SIGTERM, then SIGKILL after a grace period, and launch() reports which rank died and how.
// Ranks die with the launcher (PR_SET_PDEATHSIG), so no orphan outlives it.
//
// Several machines: run one launcher per node with the same nnodes, master_addr and
// master_port, and node_rank 0..nnodes-1; global rank = node_rank * nproc_per_node + local.
#pragma once

#include <string>
#include <vector>

namespace course {

/// How launch() starts the ranks of this node.
struct LaunchOptions {
  int nproc_per_node = 1;                 ///< ranks to start on this node
  int nnodes = 1;                         ///< nodes in the job (one launcher each)
  int node_rank = 0;                      ///< this node, 0 to nnodes - 1
  std::string master_addr = "127.0.0.1";  ///< where rank 0 hosts the store
  int master_port = 0;                    ///< 0: pick a free port (single node only)
  std::string job_token;      ///< empty: random (single node) or derived (several nodes)
  bool prefix_output = true;  ///< prefix each output line with "[rank r] "
  int grace_ms = 2000;        ///< between SIGTERM and SIGKILL when stopping ranks
};

/// How one local rank ended.
struct RankExit {
  int rank = -1;                     ///< its global rank
  int exit_code = 0;                 ///< valid when signal == 0
  int signal = 0;                    ///< the signal that killed it, or 0
  bool stopped_by_launcher = false;  ///< killed because another rank failed first
  std::string last_verdict;          ///< the last output line of the form "lessonNN: ..." if any
};

/// What launch() returns: how every local rank ended.
struct LaunchResult {
  std::vector<RankExit> ranks;  ///< indexed by local rank
  int first_failed = -1;        ///< global rank that failed first, or -1
  /// 0 when every rank exited 0, else the first failing rank's exit code, or 128+signal.
  int exit_code = 0;
  /// "rank 2 was killed by signal 9 (SIGKILL)" / "rank 1 exited with code 3"; empty on success.
  std::string failure;
};

/// Runs `argv` (argv[0] is the program) as nproc_per_node local ranks and waits for them.
/// Never throws for a rank's failure (that is in the result); throws SystemError when a
/// process cannot be started.
LaunchResult launch(const std::vector<std::string>& argv, const LaunchOptions& options);

/// The absolute path of the running executable (/proc/self/exe).
std::string self_executable();

/// "SIGKILL" for 9: how a signal is named in failure messages.
std::string signal_name(int sig);

/// 32 random hex digits: the job token of a single-node launch.
std::string random_job_token();

}  // namespace course
