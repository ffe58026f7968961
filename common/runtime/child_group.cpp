// child_group.cpp: spawn, watch and reap a group of children (see child_group.h).
#include "child_group.h"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace course {

ChildGroup::ChildGroup() {
  ::prctl(PR_GET_CHILD_SUBREAPER, &was_subreaper_);
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
}

ChildGroup::~ChildGroup() {
  reap();
  ::prctl(PR_SET_CHILD_SUBREAPER, was_subreaper_);
}

pid_t ChildGroup::spawn(const std::function<void()>& in_child) {
  const pid_t parent = ::getpid();
  const pid_t group = group_;
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, group);  // group 0: lead a new group (the first child); else join it
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl took hold
    in_child();
    ::_exit(127);
  }
  if (pid < 0) return -1;
  if (group_ == 0) group_ = pid;
  ::setpgid(pid, group_);  // also from this side, so no signal can race the child's own
  pids_.push_back(pid);
  return pid;
}

void ChildGroup::signal_all(int sig) {
  if (group_ > 0) ::kill(-group_, sig);
}

std::optional<siginfo_t> ChildGroup::exited(pid_t pid) {
  siginfo_t info{};
  if (::waitid(P_PID, pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) {
    return std::nullopt;
  }
  return info;
}

void ChildGroup::reap() {
  signal_all(SIGKILL);
  for (pid_t pid : pids_) {
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  pids_.clear();
  if (group_ > 0) {
    while (::waitpid(-group_, nullptr, 0) > 0 || errno == EINTR) {
    }
  }
}

bool process_is_stopped(pid_t pid) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
  FILE* f = std::fopen(path, "re");
  if (f == nullptr) return false;
  char buf[512];
  const size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  // "pid (comm) S ...": the state follows the last ')' (comm may contain anything).
  const char* close = std::strrchr(buf, ')');
  if (close == nullptr || close[1] != ' ') return false;
  return close[2] == 'T' || close[2] == 't';
}

}  // namespace course
