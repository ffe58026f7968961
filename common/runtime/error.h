// error.h: the course's one error policy.
//
// Everything in common/ reports failure by throwing a course::Error subclass. The message
// always starts with who failed ("rank 3 (pid 4242 on lab07)") so that, in the interleaved
// output of eight ranks, the reader knows which process spoke, and ends with what to do.
// Each library's way of failing has one check that turns it into this hierarchy:
// COURSE_CHECK_SYS below for calls that set errno (sockets, files), COURSE_CHECK_GLOO
// (gloo_check.h) for Gloo's exceptions, check_cuda and check_cublas for CUDA's status
// codes (tensor_kernels_cuda.cu).
//
// What this is not: a logging framework. log_warning() prints one line to stderr.
#pragma once

#include <exception>
#include <stdexcept>
#include <string>

namespace course {

/// Records this process's rank for error messages (-1: not yet known, e.g. the launcher).
void set_process_rank(int rank);
/// The rank recorded by set_process_rank(), or -1.
int process_rank();
/// "rank 3 (pid 4242 on lab07)", or "launcher (pid 4242 on lab07)" before a rank is known.
std::string who();
/// This machine's host name (gethostname), "localhost" when it cannot be read.
std::string host_name();

/// Base of every error the course throws. what() is prefixed with who().
class Error : public std::runtime_error {
 public:
  /// `message` says what failed and what to do next; what() puts who() in front.
  explicit Error(const std::string& message);
  /// The message without the who() prefix.
  const std::string& detail() const { return detail_; }

 private:
  std::string detail_;
};

/// Bad configuration: a missing environment variable, a bad flag, inconsistent sizes.
class ConfigError : public Error {
 public:
  using Error::Error;
};

/// A system call or library call failed (socket, file, Gloo, NCCL, CUDA).
class SystemError : public Error {
 public:
  using Error::Error;
};

/// The network failed: a peer is unreachable, or the connection broke.
class NetworkError : public Error {
 public:
  using Error::Error;
};

/// The peer closed the connection (it exited or crashed).
class PeerClosedError : public NetworkError {
 public:
  using NetworkError::NetworkError;
};

/// A blocking operation did not complete within its timeout.
class TimeoutError : public NetworkError {
 public:
  using NetworkError::NetworkError;
};

/// A peer sent something that breaks the protocol: wrong job token, garbage, a message
/// of another size or tag than the receiver expects.
class ProtocolError : public Error {
 public:
  using Error::Error;
};

/// A lesson stub that the learner has not written yet. file() is relative to the repo
/// root ("lessons/02_point_to_point/point_to_point.cpp"), line() is the stub's line.
class NotImplementedError : public Error {
 public:
  /// The stub at `file` (from the repository root) and `line`; COURSE_TODO() passes both.
  NotImplementedError(std::string file, int line);
  /// The stub's file, from the repository root.
  const std::string& file() const { return file_; }
  /// The stub's line in file().
  int line() const { return line_; }
  /// "lessons/02_point_to_point/point_to_point.cpp:42"
  std::string location() const { return file_ + ":" + std::to_string(line_); }

 private:
  std::string file_;
  int line_;
};

/// Throws SystemError "<what>: <strerror(errno)> (errno N). <hint>" with who() in front.
[[noreturn]] void throw_system_error(const std::string& what, const std::string& hint = "");

/// Prints "warning: <who()>: <message>" on stderr (one line, one write).
void log_warning(const std::string& message);

/// The path of `file` from the repository root ("lessons/01_ranks/mesh.cpp").
std::string repo_relative(const char* file);

/// The what() of the exception `error` holds, for messages and abort reasons (a thrown
/// value that is not a std::exception is named as such). REQUIRES: error is not null.
std::string exception_message(const std::exception_ptr& error);

}  // namespace course

/// Checks a C call that returns -1 (or any negative value) and sets errno on failure.
/// Evaluates `expr` exactly once and yields its value.
///   int fd = COURSE_CHECK_SYS(::socket(AF_INET, SOCK_STREAM, 0), "socket()");
#define COURSE_CHECK_SYS(expr, what)                                  \
  ([&]() {                                                            \
    auto course_check_result_ = (expr);                               \
    if (course_check_result_ < 0) ::course::throw_system_error(what); \
    return course_check_result_;                                      \
  }())

/// The body of a lesson stub: throws NotImplementedError naming this file and line.
#define COURSE_TODO() \
  throw ::course::NotImplementedError(::course::repo_relative(__FILE__), __LINE__)
