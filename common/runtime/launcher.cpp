// launcher.cpp: start N ranks, relay their output, stop them all when one dies (launcher.h).
//
// The life of one launch, one function each:
//
//   1. spawn   start_ranks(): fork N children into one process group (child_group.h), each
//              with stdout and stderr on pipes, exec'ing the command with its rank's
//              environment.
//   2. watch   watch(): one poll() loop over every child's two pipes and a self-pipe fed by
//              the signal handlers (SIGCHLD, SIGINT, SIGTERM). Output goes out as whole
//              lines with "[rank r] " (rank_output.h). Exits are observed without reaping.
//   3. stop    inside watch(): a SIGINT/SIGTERM to the launcher goes to every rank at once.
//              The first rank to fail opens a window of last_words_ms in which the others
//              may still report their own errors; then SIGTERM to the group, and SIGKILL to
//              whatever is alive grace_ms later.
//   4. reap    finish(): drain the pipes, SIGKILL the group (grandchildren too), reap every
//              child and adopted grandchild; pick the cause (launch_diagnosis.h).
//
// What this is not: a job scheduler. It does not restart ranks (torchrun's elastic mode) and
// does not start processes on other machines; run one launcher per node for that.
//
// Thread safety: launch() installs process-wide signal handlers for its duration, so calls
// are serialized by a mutex.
#include "launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <mutex>

#include "child_group.h"
#include "env.h"
#include "error.h"
#include "handshake.h"
#include "launch_diagnosis.h"
#include "rank_output.h"
#include "socket.h"

extern char** environ;

namespace course {
namespace {

using Clock = std::chrono::steady_clock;

// ---- signals: the handlers only write the signal number into a pipe the loop polls. The
// write end is atomic: the handler may run on any thread while ~SignalRelay closes it.
std::atomic<int> g_signal_read{-1}, g_signal_write{-1};

void on_signal(int sig) {
  const int saved = errno;
  const unsigned char byte = static_cast<unsigned char>(sig);
  const int fd = g_signal_write.load(std::memory_order_acquire);  // after the pipe was made
  if (fd >= 0) (void)!::write(fd, &byte, 1);
  errno = saved;
}

/// Installs the handlers for one launch and restores the previous ones afterwards.
class SignalRelay {
 public:
  SignalRelay() {
    int fds[2];
    COURSE_CHECK_SYS(::pipe2(fds, O_CLOEXEC | O_NONBLOCK), "pipe2() for signals");
    g_signal_read = fds[0];
    g_signal_write = fds[1];
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    for (int i = 0; i < 3; ++i) ::sigaction(kSignals[i], &sa, &saved_[i]);
  }
  ~SignalRelay() {
    for (int i = 0; i < 3; ++i) ::sigaction(kSignals[i], &saved_[i], nullptr);
    // A handler already running on another thread may still hold the old fd number: take
    // it away first, so no new write starts, then close.
    const int w = g_signal_write.exchange(-1), r = g_signal_read.exchange(-1);
    ::close(w);
    ::close(r);
  }
  int fd() const { return g_signal_read.load(); }

 private:
  static constexpr int kSignals[3] = {SIGCHLD, SIGINT, SIGTERM};
  struct sigaction saved_[3];
};

/// One local rank as the launcher sees it.
struct Child {
  pid_t pid = -1;
  RankOutput out;
  bool exited = false;    // observed without reaping; reaped only at the end
  uint64_t exit_seq = 0;  // the order of its exit among the ranks, from 1
  RankExit exit;
};

/// The environment of one rank: the launcher's own, with the rank's variables set.
std::vector<std::string> rank_environment(const std::map<std::string, std::string>& vars) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry(*e);
    if (vars.count(entry.substr(0, entry.find('='))) == 0) env.push_back(entry);
  }
  for (const auto& [name, value] : vars) env.push_back(name + "=" + value);
  return env;
}

std::vector<char*> c_strings(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

/// In the child, after ChildGroup's setup: only async-signal-safe calls from here on.
[[noreturn]] void exec_rank(int out_fd, int err_fd, int status_fd, char** argv, char** envp) {
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::signal(SIGPIPE, SIG_DFL);
  ::dup2(out_fd, STDOUT_FILENO);
  ::dup2(err_fd, STDERR_FILENO);
  ::execvpe(argv[0], argv, envp);
  const int err = errno;  // exec failed: tell the launcher why through the status pipe
  (void)!::write(status_fd, &err, sizeof(err));
  ::_exit(127);
}

/// What every rank of this node is started with.
struct Job {
  std::vector<std::string> argv;
  std::string master_addr;
  int port = 0;
  std::string token;
  int node_rank = 0;
  int local_size = 1;
  int world = 1;
};

// ---- 1. spawn
std::vector<Child> start_ranks(const Job& job, ChildGroup& group) {
  std::vector<Child> children(job.local_size);
  for (int local = 0; local < job.local_size; ++local) {
    Child& c = children[local];
    c.exit.rank = job.node_rank * job.local_size + local;
    c.out.rank = c.exit.rank;
    std::vector<std::string> args = job.argv;
    std::map<std::string, std::string> vars{
        {"RANK", std::to_string(c.exit.rank)},
        {"WORLD_SIZE", std::to_string(job.world)},
        {"LOCAL_RANK", std::to_string(local)},
        {"LOCAL_WORLD_SIZE", std::to_string(job.local_size)},
        {"MASTER_ADDR", job.master_addr},
        {"MASTER_PORT", std::to_string(job.port)},
        {"COURSE_JOB_TOKEN", job.token},
        {"OMP_NUM_THREADS", env_or("OMP_NUM_THREADS", "1")},
        {"OPENBLAS_NUM_THREADS", env_or("OPENBLAS_NUM_THREADS", "1")},
    };
    const std::string coretype = env_or("OPENBLAS_CORETYPE", blas_coretype_for_cpu());
    if (!coretype.empty()) vars["OPENBLAS_CORETYPE"] = coretype;
    std::vector<std::string> env = rank_environment(vars);
    std::vector<char*> argv_c = c_strings(args), envp_c = c_strings(env);
    int out[2], err[2], status[2];
    if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0 ||
        ::pipe2(status, O_CLOEXEC) != 0) {
      for (Child& done : children) done.out.close();
      throw_system_error("pipe2() for rank " + std::to_string(c.exit.rank),
                         "Too many ranks for this process's file descriptor limit (ulimit -n)?");
    }
    c.pid =
        group.spawn([&] { exec_rank(out[1], err[1], status[1], argv_c.data(), envp_c.data()); });
    const int fork_errno = errno;
    ::close(out[1]), ::close(err[1]), ::close(status[1]);
    c.out.fds[0] = out[0], c.out.fds[1] = err[0];
    // The status pipe closes on a successful exec with nothing in it; a failed exec
    // writes its errno first.
    int exec_errno = 0;
    ssize_t got = 0;
    while (c.pid > 0 && (got = ::read(status[0], &exec_errno, sizeof(exec_errno))) < 0 &&
           errno == EINTR) {
    }
    ::close(status[0]);
    if (c.pid < 0 || got > 0) {
      for (Child& done : children) done.out.close();
      errno = c.pid < 0 ? fork_errno : exec_errno;
      throw_system_error(
          "cannot start rank " + std::to_string(c.exit.rank) + " as '" + job.argv[0] + "'",
          "Check that the program exists and is executable");
    }
    for (int fd : c.out.fds) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  }
  return children;
}

// ---- 2. watch, and 3. stop. Returns the signal the launcher received (SIGINT, SIGTERM)
// or 0.
int watch(std::vector<Child>& children, ChildGroup& group, const SignalRelay& relay,
          const LaunchOptions& opt) {
  int interrupted_by = 0;
  bool failed = false, stopping = false, killed = false;
  Clock::time_point stop_at = Clock::time_point::max(), kill_at{};
  uint64_t exits = 0;
  auto stop_all = [&](int sig) {
    if (!stopping) {
      stopping = true;
      kill_at = Clock::now() + std::chrono::milliseconds(opt.grace_ms);
      for (Child& c : children) {
        c.exit.stopped_by_launcher = !c.exited;
        c.exit.frozen = !c.exited && process_is_stopped(c.pid);
      }
    }
    group.signal_all(sig);
  };
  int running = static_cast<int>(children.size());
  while (running > 0) {
    std::vector<pollfd> fds{{relay.fd(), POLLIN, 0}};
    std::vector<std::pair<Child*, int>> owners{{nullptr, 0}};
    for (Child& c : children) {
      for (int s = 0; s < 2; ++s) {
        if (c.out.fds[s] >= 0) fds.push_back({c.out.fds[s], POLLIN, 0}), owners.push_back({&c, s});
      }
    }
    // Wake at least every 200 ms: a rank whose pipes a grandchild still holds open can exit
    // without any pipe event, and a SIGCHLD may coincide with one we already consumed.
    const auto next = std::min(stop_at, stopping && !killed ? kill_at : Clock::time_point::max());
    long long wait_ms = 200;
    if (next != Clock::time_point::max()) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(next - Clock::now());
      wait_ms = std::clamp<long long>(left.count(), 0, wait_ms);
    }
    if (::poll(fds.data(), fds.size(), static_cast<int>(wait_ms)) < 0 && errno != EINTR) {
      throw_system_error("poll() in the launcher");  // the ChildGroup reaps the ranks
    }
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents != 0) owners[i].first->out.drain(owners[i].second, opt.prefix_output);
    }
    unsigned char sig;
    while (::read(relay.fd(), &sig, 1) == 1) {
      if (sig == SIGINT || sig == SIGTERM) {
        if (interrupted_by == 0) interrupted_by = sig;
        stop_all(sig);  // forward the launcher's signal to every rank, now
      }
    }
    for (Child& c : children) {
      if (c.exited) continue;
      const std::optional<siginfo_t> info = ChildGroup::exited(c.pid);
      if (!info) continue;
      c.exited = true;
      c.exit_seq = ++exits;
      --running;
      if (info->si_code == CLD_EXITED) {
        c.exit.exit_code = info->si_status;
      } else {
        c.exit.signal = info->si_status;
      }
      const bool bad = c.exit.signal != 0 || c.exit.exit_code != 0;
      if (bad && !c.exit.stopped_by_launcher && !failed && !interrupted_by) {
        failed = true;  // the others get their last words, then they are stopped
        stop_at = Clock::now() + std::chrono::milliseconds(opt.last_words_ms);
      }
    }
    // Ranks that are all stopped (SIGSTOP, a debugger) have no last words to wait for, and
    // a SIGTERM waits until they are continued: they go at once.
    const bool all_frozen =
        failed && running > 0 && std::all_of(children.begin(), children.end(), [](Child& c) {
          return c.exited || process_is_stopped(c.pid);
        });
    if (failed && !stopping && running > 0 && (all_frozen || Clock::now() >= stop_at)) {
      stop_all(SIGTERM);
    }
    if (stopping && !killed && running > 0 && (all_frozen || Clock::now() >= kill_at)) {
      group.signal_all(SIGKILL);
      killed = true;
    }
  }
  return interrupted_by;
}

std::string describe_exit(const RankExit& e) {
  return "rank " + std::to_string(e.rank) +
         (e.signal != 0 ? " was killed by signal " + std::to_string(e.signal) + " (" +
                              signal_name(e.signal) + ")"
                        : " exited with code " + std::to_string(e.exit_code));
}

// ---- 4. reap: every rank has exited. Kill what is left of the group (grandchildren that
// would hold the pipes open), print the last output, reap, and name the cause.
LaunchResult finish(std::vector<Child>& children, ChildGroup& group, int interrupted_by,
                    const LaunchOptions& opt) {
  group.signal_all(SIGKILL);
  const auto drain_until = Clock::now() + std::chrono::seconds(1);
  for (Child& c : children) {
    for (int s = 0; s < 2; ++s) {
      while (c.out.fds[s] >= 0 && Clock::now() < drain_until) {
        pollfd p{c.out.fds[s], POLLIN, 0};
        ::poll(&p, 1, 50);
        c.out.drain(s, opt.prefix_output);
      }
      if (c.out.fds[s] >= 0) c.out.flush(s, opt.prefix_output);
    }
    c.out.close();
  }
  group.reap();

  LaunchResult result;
  std::vector<RankObservation> seen;
  for (Child& c : children) {
    c.exit.last_verdict = c.out.last_verdict;
    result.ranks.push_back(c.exit);
    RankObservation o;
    o.rank = c.exit.rank;
    o.ended_on_its_own = !c.exit.stopped_by_launcher;
    o.failed = o.ended_on_its_own && (c.exit.signal != 0 || c.exit.exit_code != 0);
    o.stopped = c.exit.frozen;
    o.signal = o.failed ? c.exit.signal : 0;
    // The verdict's arrival when there is one, else the exit: both are in launch order.
    o.order = c.out.verdict_seq != 0 ? c.out.verdict_seq : (1ull << 40) + c.exit_seq;
    o.verdict = c.out.last_verdict;
    seen.push_back(o);
  }
  if (interrupted_by != 0) {
    result.exit_code = 128 + interrupted_by;
    result.failure =
        "the launcher received " + signal_name(interrupted_by) + " and stopped every rank";
    return result;
  }
  const int cause = pick_cause(seen);
  if (cause >= 0) {
    const RankExit& e = result.ranks[cause];
    result.first_failed = e.rank;
    result.exit_code = e.signal != 0 ? 128 + e.signal : e.exit_code;
    result.failure = describe_exit(e) + describe_frozen(seen);
  }
  return result;
}

std::mutex g_launch_mutex;

}  // namespace

std::string signal_name(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

std::string random_job_token() {
  unsigned char bytes[16];
  if (::getrandom(bytes, sizeof(bytes), 0) != static_cast<ssize_t>(sizeof(bytes))) {
    throw_system_error("getrandom() for the job token");
  }
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char b : bytes) hex += {kHex[b >> 4], kHex[b & 15]};
  return hex;
}

std::string self_executable() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n < 0) throw_system_error("readlink(/proc/self/exe)");
  return std::string(buf, static_cast<size_t>(n));
}

LaunchResult launch(const std::vector<std::string>& argv, const LaunchOptions& opt) {
  if (argv.empty()) throw ConfigError("launch: no command given");
  if (opt.nproc_per_node < 1 || opt.nnodes < 1 || opt.node_rank < 0 ||
      opt.node_rank >= opt.nnodes) {
    throw ConfigError("launch: need nproc_per_node >= 1 and 0 <= node_rank < nnodes (got " +
                      std::to_string(opt.nproc_per_node) + ", " + std::to_string(opt.node_rank) +
                      ", " + std::to_string(opt.nnodes) + ")");
  }
  if (opt.nnodes > 1 && opt.master_port == 0) {
    throw ConfigError(
        "launch: several nodes need an agreed port: pass --master-port to every "
        "node's launcher");
  }
  std::lock_guard<std::mutex> serial(g_launch_mutex);
  Job job;
  job.argv = argv;
  job.master_addr = opt.master_addr;
  job.port = opt.master_port != 0 ? opt.master_port : find_free_port(opt.master_addr);
  const std::string secret = env_or("COURSE_JOB_TOKEN", "");
  job.token = !opt.job_token.empty() ? opt.job_token
              : !secret.empty()      ? secret
              : opt.nnodes == 1      ? random_job_token()
                                     : derive_job_token(opt.master_addr, job.port);
  job.node_rank = opt.node_rank;
  job.local_size = opt.nproc_per_node;
  job.world = opt.nnodes * opt.nproc_per_node;

  SignalRelay relay;
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  ChildGroup group;  // its destructor reaps every rank, whatever throws below
  std::vector<Child> children = start_ranks(job, group);
  const int interrupted_by = watch(children, group, relay, opt);
  return finish(children, group, interrupted_by, opt);
}

}  // namespace course
