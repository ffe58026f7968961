// gloo_check.h: the one checking macro for Gloo calls (the gloo backend's COURSE_CHECK_SYS).
//
//   COURSE_CHECK_GLOO(gloo::allreduce(opts), "all_reduce(count 1000, op sum)");
//
// Gloo reports failure by throwing its own exceptions (gloo::IoException for I/O and
// timeouts, gloo::EnforceNotMet for broken preconditions). The macro runs the statement
// and turns whatever it throws into the course's hierarchy (error.h), naming this rank
// (who()), the operation, Gloo's message, and what to check next:
//   Gloo "Timed out ..."      -> TimeoutError
//   other gloo::IoException   -> NetworkError (a peer closed, or a pair was closed)
//   gloo::EnforceNotMet       -> ProtocolError (sizes or arguments the ranks disagree on)
//   anything else             -> SystemError; course errors pass through unchanged
//
// What this is not: public. Only the gloo backend's .cpp files include it (they are
// compiled only when CMake found Gloo).
#pragma once

#include <string>

namespace course {

/// Rethrows the exception in flight as a course error naming `what` (see above).
/// REQUIRES: called from a catch block.
[[noreturn]] void rethrow_gloo_error(const std::string& what);

}  // namespace course

#define COURSE_CHECK_GLOO(stmt, what)     \
  do {                                    \
    try {                                 \
      stmt;                               \
    } catch (...) {                       \
      ::course::rethrow_gloo_error(what); \
    }                                     \
  } while (0)
