// error.cpp: see error.h.
#include "error.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <iostream>

namespace course {
namespace {
std::atomic<int> g_rank{-1};
}  // namespace

std::string host_name() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof(buf) - 1) != 0) return "localhost";
  return buf;
}

void set_process_rank(int rank) {
  g_rank.store(rank);
}
int process_rank() {
  return g_rank.load();
}

std::string who() {
  static const std::string host = host_name();
  const int r = g_rank.load();
  std::string head = r >= 0 ? "rank " + std::to_string(r) : std::string("launcher");
  return head + " (pid " + std::to_string(::getpid()) + " on " + host + ")";
}

Error::Error(const std::string& message)
    : std::runtime_error(who() + ": " + message), detail_(message) {}

NotImplementedError::NotImplementedError(std::string file, int line)
    : Error("not implemented: " + file + ":" + std::to_string(line) +
            " (write this TODO, then rebuild)"),
      file_(std::move(file)),
      line_(line) {}

void throw_system_error(const std::string& what, const std::string& hint) {
  const int err = errno;
  std::string msg = what + ": " + std::strerror(err) + " (errno " + std::to_string(err) + ")";
  if (!hint.empty()) msg += ". " + hint;
  throw SystemError(msg);
}

void log_warning(const std::string& message) {
  std::string line = "warning: " + who() + ": " + message + "\n";
  std::cerr << line << std::flush;
}

std::string exception_message(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return e.what();
  } catch (...) {
    return "an exception that is not a std::exception";
  }
}

std::string repo_relative(const char* file) {
  std::string path(file);
  for (const char* root : {"/lessons/", "/solutions/", "/common/", "/tests/"}) {
    const auto pos = path.rfind(root);
    if (pos != std::string::npos) return path.substr(pos + 1);
  }
  return path;
}

}  // namespace course
