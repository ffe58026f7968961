// child_group.cpp: spawn, watch and reap a group of children (see child_group.h).
#include "child_group.h"

#include <dirent.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

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
  // Each child's segments are removed while it is a zombie, before waitpid frees its pid
  // for reuse: the names removed can only be its own.
  std::vector<pid_t> dead;
  for (pid_t pid : pids_) {
    siginfo_t info{};
    while (::waitid(P_PID, pid, &info, WEXITED | WNOWAIT) != 0 && errno == EINTR) {
    }
    dead.push_back(pid);
  }
  remove_shm_of(dead);
  for (pid_t pid : pids_) {
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  pids_.clear();
  if (group_ > 0) {
    pid_t pid;
    while ((pid = ::waitpid(-group_, nullptr, 0)) > 0 || errno == EINTR) {
      if (pid > 0) remove_shm_of({pid});  // an adopted grandchild's, just reaped
    }
  }
}

std::string shm_owner_prefix(pid_t pid) {
  return "course." + std::to_string(pid) + ".";
}

int remove_shm_of(const std::vector<pid_t>& pids) noexcept {
  if (pids.empty()) return 0;
  DIR* dir = ::opendir("/dev/shm");
  if (dir == nullptr) return 0;
  int removed = 0;
  try {
    std::vector<std::string> prefixes;
    for (pid_t pid : pids) prefixes.push_back(shm_owner_prefix(pid));
    while (const dirent* entry = ::readdir(dir)) {
      const std::string_view name = entry->d_name;
      for (const std::string& prefix : prefixes) {
        if (name.substr(0, prefix.size()) != prefix) continue;
        if (::shm_unlink(("/" + std::string(name)).c_str()) == 0) ++removed;
        break;
      }
    }
  } catch (...) {  // out of memory for a name: leave the rest
  }
  ::closedir(dir);
  return removed;
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
