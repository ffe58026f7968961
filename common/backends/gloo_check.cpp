// gloo_check.cpp: see gloo_check.h.
#include "gloo_check.h"

#include <gloo/common/error.h>
#include <gloo/common/logging.h>

#include "error.h"

namespace course {

void rethrow_gloo_error(const std::string& what) {
  const std::string hint =
      ". A peer rank may have exited or crashed (see its output), or the ranks called "
      "collectives in different orders or with different sizes";
  try {
    throw;
  } catch (const Error&) {
    throw;
  } catch (const gloo::IoException& e) {
    const std::string msg = e.what();
    if (msg.find("Timed out") != std::string::npos || msg.find("timed out") != std::string::npos) {
      throw TimeoutError("gloo " + what + " timed out: " + msg + hint);
    }
    throw NetworkError("gloo " + what + " failed: " + msg + hint);
  } catch (const gloo::EnforceNotMet& e) {
    throw ProtocolError("gloo " + what + " rejected its arguments: " + e.msg() + hint);
  } catch (const std::exception& e) {
    throw SystemError("gloo " + what + " failed: " + e.what() + hint);
  }
}

}  // namespace course
