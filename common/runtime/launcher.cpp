// launcher.cpp: start N ranks, relay their output, stop them all when one dies (launcher.h).
//
// The life of one launch:
//
//   1. spawn   fork N children. Each joins one new process group (led by rank 0's child),
//              asks the kernel for SIGKILL when the launcher dies (PR_SET_PDEATHSIG), points
//              stdout and stderr at pipes, and execs the command with its rank's environment.
//   2. watch   one poll() loop over every child's two pipes and a self-pipe fed by the
//              signal handlers (SIGCHLD, SIGINT, SIGTERM). Output is cut into whole lines and
//              printed with "[rank r] ". Exits are observed with waitid(WNOWAIT), which leaves
//              each child a zombie: a zombie keeps the group's id from being reused, so
//              signalling the group can never hit a stranger.
//   3. stop    the first rank to fail (or a SIGINT/SIGTERM to the launcher) sends SIGTERM to
//              the whole group; whatever is still alive after grace_ms gets SIGKILL.
//   4. reap    SIGKILL to the group (grandchildren too), drain the pipes, reap every child,
//              and reap the orphaned grandchildren the launcher adopted as child subreaper.
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
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <mutex>

#include "env.h"
#include "error.h"
#include "handshake.h"
#include "socket.h"

extern char** environ;

namespace course {
namespace {

using Clock = std::chrono::steady_clock;

// ---- signals: the handlers only write the signal number into a pipe the loop polls.
int g_signal_pipe[2] = {-1, -1};

void on_signal(int sig) {
  const int saved = errno;
  const unsigned char byte = static_cast<unsigned char>(sig);
  (void)!::write(g_signal_pipe[1], &byte, 1);
  errno = saved;
}

/// Installs the handlers for one launch and restores the previous ones afterwards.
class SignalRelay {
 public:
  SignalRelay() {
    COURSE_CHECK_SYS(::pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK), "pipe2() for signals");
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    for (int i = 0; i < 3; ++i) ::sigaction(kSignals[i], &sa, &saved_[i]);
  }
  ~SignalRelay() {
    for (int i = 0; i < 3; ++i) ::sigaction(kSignals[i], &saved_[i], nullptr);
    ::close(g_signal_pipe[0]);
    ::close(g_signal_pipe[1]);
    g_signal_pipe[0] = g_signal_pipe[1] = -1;
  }
  int fd() const { return g_signal_pipe[0]; }

 private:
  static constexpr int kSignals[3] = {SIGCHLD, SIGINT, SIGTERM};
  struct sigaction saved_[3];
};

/// Writes all of `text` to fd (the launcher's stdout or stderr); gives up quietly if the
/// reader is gone, since the ranks matter more than their echo.
void write_out(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t k = ::write(fd, text.data() + done, text.size() - done);
    if (k > 0) {
      done += static_cast<size_t>(k);
    } else if (k < 0 && errno == EAGAIN) {
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, 100);
    } else if (!(k < 0 && errno == EINTR)) {
      return;
    }
  }
}

/// One local rank as the launcher sees it.
struct Child {
  int local = 0;
  pid_t pid = -1;
  int fds[2] = {-1, -1};   // read ends of the rank's stdout and stderr pipes
  std::string pending[2];  // bytes after the last newline, per stream
  bool exited = false;     // observed with waitid(WNOWAIT); reaped only at the end
  RankExit exit;
};

constexpr size_t kMaxLine = 1 << 20;  // a "line" longer than this is printed in pieces

/// True for a driver's verdict line: "lessonNN: PASS ...", "... FAIL ...", "... TODO ...".
bool is_verdict(const std::string& line) {
  size_t at = 6;  // after "lesson"
  if (line.rfind("lesson", 0) != 0) return false;
  while (at < line.size() && std::isdigit(static_cast<unsigned char>(line[at]))) ++at;
  if (at == 6) return false;
  for (const char* verdict : {": PASS", ": FAIL", ": TODO"}) {
    if (line.compare(at, 6, verdict) == 0) return true;
  }
  return false;
}

/// Prints every complete line in child.pending[stream] (all of it when `flush`).
void emit_lines(Child& child, int stream, bool prefix, bool flush) {
  std::string& buf = child.pending[stream];
  std::string out;
  size_t start = 0;
  while (true) {
    size_t nl = buf.find('\n', start);
    if (nl == std::string::npos) {
      if (!flush && buf.size() - start < kMaxLine) break;
      if (start == buf.size()) break;
      nl = buf.size();  // the unterminated tail: print it as a line of its own
    }
    const std::string line = buf.substr(start, nl - start);
    if (is_verdict(line)) child.exit.last_verdict = line;
    if (prefix) out += "[rank " + std::to_string(child.exit.rank) + "] ";
    out += line + "\n";
    start = std::min(nl + 1, buf.size());
  }
  buf.erase(0, start);
  if (!out.empty()) write_out(stream == 0 ? STDOUT_FILENO : STDERR_FILENO, out);
}

/// Reads whatever the pipe holds now; closes it at end of file.
void drain(Child& child, int stream, bool prefix) {
  char chunk[65536];
  while (child.fds[stream] >= 0) {
    const ssize_t k = ::read(child.fds[stream], chunk, sizeof(chunk));
    if (k > 0) {
      child.pending[stream].append(chunk, static_cast<size_t>(k));
      continue;
    }
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && errno == EAGAIN) break;
    ::close(child.fds[stream]);  // end of file (or a broken pipe): the stream is over
    child.fds[stream] = -1;
    emit_lines(child, stream, prefix, /*flush=*/true);
    return;
  }
  emit_lines(child, stream, prefix, /*flush=*/false);
}

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

/// In the child, between fork and exec: only async-signal-safe calls from here on.
[[noreturn]] void exec_rank(pid_t launcher, pid_t group, int out_fd, int err_fd, int status_fd,
                            char** argv, char** envp) {
  ::setpgid(0, group);  // group 0: lead a new group (rank 0); else join rank 0's
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != launcher) ::_exit(127);  // the launcher died before prctl took hold
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

LaunchResult launch(const std::vector<std::string>& argv_in, const LaunchOptions& opt) {
  if (argv_in.empty()) throw ConfigError("launch: no command given");
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
  const int port = opt.master_port != 0 ? opt.master_port : find_free_port(opt.master_addr);
  const std::string token = !opt.job_token.empty() ? opt.job_token
                            : opt.nnodes == 1      ? random_job_token()
                                                   : derive_job_token(opt.master_addr, port);
  const int n = opt.nproc_per_node;
  const int world = opt.nnodes * n;

  // Orphaned grandchildren are re-parented to us rather than to init, so step 4 reaps them.
  int was_subreaper = 0;
  ::prctl(PR_GET_CHILD_SUBREAPER, &was_subreaper);
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  SignalRelay relay;
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);

  // ---- 1. spawn
  std::vector<Child> children(n);
  pid_t group = 0;
  auto kill_group = [&](int sig) {
    if (group > 0) ::kill(-group, sig);
  };
  auto reap_all = [&] {  // step 4; also the cleanup when spawning fails
    kill_group(SIGKILL);
    for (Child& c : children) {
      for (int& fd : c.fds) {
        if (fd >= 0) ::close(fd), fd = -1;
      }
      if (c.pid > 0) ::waitpid(c.pid, nullptr, 0);
    }
    if (group > 0) {
      while (::waitpid(-group, nullptr, 0) > 0 || errno == EINTR) {
      }
    }
    ::prctl(PR_SET_CHILD_SUBREAPER, was_subreaper);
  };
  for (int local = 0; local < n; ++local) {
    Child& c = children[local];
    c.local = local;
    c.exit.rank = opt.node_rank * n + local;
    std::vector<std::string> args = argv_in;
    std::vector<std::string> env = rank_environment({
        {"RANK", std::to_string(c.exit.rank)},
        {"WORLD_SIZE", std::to_string(world)},
        {"LOCAL_RANK", std::to_string(local)},
        {"LOCAL_WORLD_SIZE", std::to_string(n)},
        {"MASTER_ADDR", opt.master_addr},
        {"MASTER_PORT", std::to_string(port)},
        {"COURSE_JOB_TOKEN", token},
        {"OMP_NUM_THREADS", env_or("OMP_NUM_THREADS", "1")},
        {"OPENBLAS_NUM_THREADS", env_or("OPENBLAS_NUM_THREADS", "1")},
    });
    std::vector<char*> argv_c = c_strings(args), envp_c = c_strings(env);
    int out[2], err[2], status[2];
    if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0 ||
        ::pipe2(status, O_CLOEXEC) != 0) {
      const int pipe_errno = errno;  // out of file descriptors, most likely
      reap_all();
      errno = pipe_errno;
      throw_system_error("pipe2() for rank " + std::to_string(c.exit.rank),
                         "Too many ranks for this process's file descriptor limit (ulimit -n)?");
    }
    const pid_t launcher = ::getpid();
    c.pid = ::fork();
    if (c.pid == 0) {
      exec_rank(launcher, group, out[1], err[1], status[1], argv_c.data(), envp_c.data());
    }
    const int fork_errno = errno;
    ::close(out[1]), ::close(err[1]), ::close(status[1]);
    c.fds[0] = out[0], c.fds[1] = err[0];
    if (c.pid > 0) {
      if (group == 0) group = c.pid;
      ::setpgid(c.pid, group);  // also from this side, so no signal can race the child's own
    }
    // The status pipe closes on a successful exec with nothing in it; a failed exec
    // writes its errno first.
    int exec_errno = 0;
    ssize_t got = 0;
    while (c.pid > 0 && (got = ::read(status[0], &exec_errno, sizeof(exec_errno))) < 0 &&
           errno == EINTR) {
    }
    ::close(status[0]);
    if (c.pid < 0 || got > 0) {
      reap_all();
      errno = c.pid < 0 ? fork_errno : exec_errno;
      throw_system_error(
          "cannot start rank " + std::to_string(c.exit.rank) + " as '" + argv_in[0] + "'",
          "Check that the program exists and is executable");
    }
    for (int fd : c.fds) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  }

  // ---- 2. watch, and 3. stop
  LaunchResult result;
  int interrupted_by = 0;  // SIGINT or SIGTERM received by the launcher
  bool stopping = false, killed = false;
  Clock::time_point kill_at{};
  auto stop_all = [&](int sig) {
    if (!stopping) {
      stopping = true;
      kill_at = Clock::now() + std::chrono::milliseconds(opt.grace_ms);
      for (Child& c : children) c.exit.stopped_by_launcher = !c.exited;
    }
    kill_group(sig);
  };
  int running = n;
  while (running > 0) {
    std::vector<pollfd> fds{{relay.fd(), POLLIN, 0}};
    std::vector<std::pair<Child*, int>> owners{{nullptr, 0}};
    for (Child& c : children) {
      for (int s = 0; s < 2; ++s) {
        if (c.fds[s] >= 0) fds.push_back({c.fds[s], POLLIN, 0}), owners.push_back({&c, s});
      }
    }
    // Wake at least every 200 ms: a rank whose pipes a grandchild still holds open can exit
    // without any pipe event, and a SIGCHLD may coincide with one we already consumed.
    long long wait_ms = 200;
    if (stopping && !killed) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(kill_at - Clock::now());
      wait_ms = std::clamp<long long>(left.count(), 0, wait_ms);
    }
    if (::poll(fds.data(), fds.size(), static_cast<int>(wait_ms)) < 0 && errno != EINTR) {
      const int poll_errno = errno;
      reap_all();  // never leave ranks behind, even when the launcher itself fails
      errno = poll_errno;
      throw_system_error("poll() in the launcher");
    }
    for (size_t i = 1; i < fds.size(); ++i) {
      if (fds[i].revents != 0) drain(*owners[i].first, owners[i].second, opt.prefix_output);
    }
    unsigned char sig;
    while (::read(relay.fd(), &sig, 1) == 1) {
      if (sig == SIGINT || sig == SIGTERM) {
        if (interrupted_by == 0) interrupted_by = sig;
        stop_all(sig);  // forward the launcher's signal to every rank
      }
    }
    for (Child& c : children) {
      if (c.exited) continue;
      siginfo_t info{};
      if (::waitid(P_PID, c.pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) {
        continue;  // still running
      }
      c.exited = true;
      --running;
      if (info.si_code == CLD_EXITED) {
        c.exit.exit_code = info.si_status;
      } else {
        c.exit.signal = info.si_status;
      }
      const bool failed = c.exit.signal != 0 || c.exit.exit_code != 0;
      if (failed && !c.exit.stopped_by_launcher && result.first_failed < 0 && !interrupted_by) {
        result.first_failed = c.exit.rank;
        result.exit_code = c.exit.signal != 0 ? 128 + c.exit.signal : c.exit.exit_code;
        result.failure =
            "rank " + std::to_string(c.exit.rank) +
            (c.exit.signal != 0 ? " was killed by signal " + std::to_string(c.exit.signal) + " (" +
                                      signal_name(c.exit.signal) + ")"
                                : " exited with code " + std::to_string(c.exit.exit_code));
        stop_all(SIGTERM);
      }
    }
    if (stopping && !killed && running > 0 && Clock::now() >= kill_at) {
      kill_group(SIGKILL);
      killed = true;
    }
  }

  // ---- 4. reap: every rank has exited. Kill what is left of the group (grandchildren that
  // would hold the pipes open), print the last output, reap.
  kill_group(SIGKILL);
  const auto drain_until = Clock::now() + std::chrono::seconds(1);
  for (Child& c : children) {
    for (int s = 0; s < 2; ++s) {
      while (c.fds[s] >= 0 && Clock::now() < drain_until) {
        pollfd p{c.fds[s], POLLIN, 0};
        ::poll(&p, 1, 50);
        drain(c, s, opt.prefix_output);
      }
      if (c.fds[s] >= 0) emit_lines(c, s, opt.prefix_output, /*flush=*/true);
    }
  }
  reap_all();
  if (interrupted_by != 0 && result.first_failed < 0) {
    result.exit_code = 128 + interrupted_by;
    result.failure =
        "the launcher received " + signal_name(interrupted_by) + " and stopped every rank";
  }
  for (Child& c : children) result.ranks.push_back(c.exit);
  return result;
}

}  // namespace course
