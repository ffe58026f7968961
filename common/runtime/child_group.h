// child_group.h: a group of child processes started together and stopped together.
//
// Both the launcher (launcher.h, which execs each rank) and the test harness
// (tests/harness, which forks each rank and runs a function in it) start N children this
// way and must never leave one behind:
//
//   spawn    fork; the child joins one process group (the first child leads it), asks the
//            kernel for SIGKILL when this process dies (PR_SET_PDEATHSIG), checks that this
//            process did not die before that took hold, then runs the caller's code
//   watch    exited(pid) looks at a child's exit with waitid(WNOWAIT): the child stays a
//            zombie, and a zombie keeps the group's id from being reused, so signalling the
//            group can never hit a stranger
//   reap     SIGKILL to the whole group (grandchildren too), then reap every child and every
//            grandchild this process adopted as child subreaper; a child's shared-memory
//            segments (/dev/shm/course.<its pid>.*, see shm_owner_prefix) go with it, so a
//            rank killed before it could unlink them leaves nothing behind
//
// What this is not: a job scheduler; it restarts nothing and watches no output.
//
// Thread safety: one ChildGroup per launch or test run, used from one thread.
#pragma once

#include <signal.h>
#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace course {

/// The children of one launch; reaps them all when destroyed.
class ChildGroup {
 public:
  /// Becomes child subreaper, so orphaned grandchildren are re-parented here and reaped.
  ChildGroup();
  /// reap(), then restores the subreaper setting.
  ~ChildGroup();
  ChildGroup(const ChildGroup&) = delete;
  ChildGroup& operator=(const ChildGroup&) = delete;

  /// Forks one child into the group. In the child, `in_child` runs after the setup above
  /// and must not return (exec or _exit); when it does, the child _exits with 127. Between
  /// fork and exec only async-signal-safe calls are allowed. Returns the child's pid, or -1
  /// with errno set when fork() fails (the caller decides how to report it).
  pid_t spawn(const std::function<void()>& in_child);

  /// Sends `sig` to every process of the group. Nothing before the first spawn.
  void signal_all(int sig);

  /// The exit of child `pid` once it has exited, else nullopt. Never blocks; leaves the
  /// child a zombie until reap().
  static std::optional<siginfo_t> exited(pid_t pid);

  /// SIGKILL to the group, then reaps every child and adopted grandchild. Idempotent.
  void reap();

  /// The group id (the first child's pid), or 0 before the first spawn.
  pid_t id() const { return group_; }

 private:
  pid_t group_ = 0;
  std::vector<pid_t> pids_;
  int was_subreaper_ = 0;
};

/// "course.<pid>.": how the names of the POSIX shared-memory segments that process `pid`
/// creates begin (shm_open's "/course.<pid>...." is /dev/shm/course.<pid>....). The owner
/// unlinks them itself once mapped; reap() removes what a killed child could not.
std::string shm_owner_prefix(pid_t pid);

/// Unlinks every /dev/shm/course.<pid>.* of these processes; returns how many it removed.
/// Never throws (a missing /dev/shm removes nothing).
int remove_shm_of(const std::vector<pid_t>& pids) noexcept;

/// True when process `pid` is stopped (SIGSTOP, SIGTSTP or a debugger): state T or t in
/// /proc/pid/stat. Such a process is alive but answers nobody.
bool process_is_stopped(pid_t pid);

}  // namespace course
