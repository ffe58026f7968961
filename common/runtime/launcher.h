// launcher.h: starts N ranks as processes and watches them (the course's mp.spawn / torchrun).
//
// Each rank gets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT,
// COURSE_JOB_TOKEN and, unless already set, OMP_NUM_THREADS=1, OPENBLAS_NUM_THREADS=1 and
// OPENBLAS_CORETYPE=blas_coretype_for_cpu() (env.h: the kernels the CPU's features allow).
// Its stdout and stderr lines are printed with a "[rank r] " prefix (whole lines, never
// interleaved mid-line). When any rank dies (non-zero exit or a signal) the others get a
// moment for their last words (their own errors, a timeout naming the peer they waited
// for), then SIGTERM, then SIGKILL after a grace period. launch() reports the cause, not its
// consequences (launch_diagnosis.h): a rank's own error over "the peer closed the
// connection", the earliest first, and a rank that froze. Ranks die with the launcher
// (PR_SET_PDEATHSIG), so no orphan outlives it.
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
  /// Empty: COURSE_JOB_TOKEN from the environment if set (a secret shared by the nodes of a
  /// job), else random (single node) or derived from master_addr:master_port (several).
  std::string job_token;
  bool prefix_output = true;  ///< prefix each output line with "[rank r] "
  int grace_ms = 2000;        ///< between SIGTERM and SIGKILL when stopping ranks
  /// After the first failure, how long the other ranks may go on to report their own
  /// errors (or end) before they are stopped.
  int last_words_ms = 2000;
};

/// How one local rank ended.
struct RankExit {
  int rank = -1;                     ///< its global rank
  int exit_code = 0;                 ///< valid when signal == 0
  int signal = 0;                    ///< the signal that killed it, or 0
  bool stopped_by_launcher = false;  ///< killed because another rank failed first
  bool frozen = false;               ///< was stopped (SIGSTOP, a debugger) when the job ended
  std::string last_verdict;          ///< the last output line of the form "lessonNN: ..." if any
};

/// What launch() returns: how every local rank ended.
struct LaunchResult {
  std::vector<RankExit> ranks;  ///< indexed by local rank
  /// The global rank whose failure caused the others (launch_diagnosis.h), or -1.
  int first_failed = -1;
  /// 0 when every rank exited 0, else that rank's exit code (128+signal for a signal), or
  /// 128+signal when the launcher itself got SIGINT or SIGTERM.
  int exit_code = 0;
  /// "rank 2 was killed by signal 9 (SIGKILL)" / "rank 1 exited with code 3", then any rank
  /// that froze ("; rank 2 was frozen ..."); empty on success.
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
