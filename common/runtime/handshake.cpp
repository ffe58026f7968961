// handshake.cpp: the hello frame and the job token (see handshake.h).
//
// The hello is one frame (socket.h) from the dialing side:
//
//   | "DTC1" | u32 token length | token | u32 rank | u32 purpose length | purpose |
//
// and the answer is one frame from the listening side: "ok", or "refused: <reason>" just
// before it closes. All integers are little-endian; the rank is a two's-complement int32.
//
// Why a stranger cannot hurt the listener: the hello frame may be at most 4 KiB, so garbage
// whose first 8 bytes read as a huge length is refused before anything is allocated, and a
// silent peer is dropped after the hello timeout.
//
// What this is not: authentication. The token keeps two jobs on one machine apart. The
// launcher's token is random per run, but one derived from MASTER_ADDR:MASTER_PORT (ranks
// started by hand, mpirun, srun, several nodes) can be computed by anyone who knows the
// port: export the same COURSE_JOB_TOKEN=<a secret> to every rank (or every node's
// launcher) to make it unguessable. Even then it is sent in the clear.
#include "handshake.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "env.h"
#include "error.h"

namespace course {
namespace {

constexpr char kMagic[4] = {'D', 'T', 'C', '1'};
constexpr size_t kMaxHelloBytes = 4096;

std::string encode(const Hello& hello) {
  std::string out(kMagic, sizeof(kMagic));
  put_u32(out, static_cast<uint32_t>(hello.token.size()));
  out += hello.token;
  put_u32(out, static_cast<uint32_t>(hello.rank));
  put_u32(out, static_cast<uint32_t>(hello.purpose.size()));
  out += hello.purpose;
  return out;
}

/// Parses a hello frame. Returns an empty string on success, else what is wrong with it.
std::string decode(const std::string& frame, Hello& hello) {
  if (frame.size() < sizeof(kMagic) || frame.compare(0, 4, kMagic, 4) != 0) {
    return "it does not start with the course magic \"DTC1\" (not a course process)";
  }
  size_t at = sizeof(kMagic);
  // Reads a length-prefixed string at `at`; false when the frame is too short for it.
  auto read_string = [&](std::string& out) {
    if (frame.size() < at + 4) return false;
    const uint32_t n = get_u32(frame.data() + at);
    at += 4;
    if (frame.size() - at < n) return false;
    out.assign(frame, at, n);
    at += n;
    return true;
  };
  if (!read_string(hello.token)) return "its hello is truncated (token)";
  if (frame.size() < at + 4) return "its hello is truncated (rank)";
  hello.rank = static_cast<int32_t>(get_u32(frame.data() + at));
  at += 4;
  if (!read_string(hello.purpose)) return "its hello is truncated (purpose)";
  return "";
}

uint64_t fnv1a64(const std::string& text) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

std::string derive_job_token(const std::string& master_addr, int master_port) {
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx",
                static_cast<unsigned long long>(
                    fnv1a64("course-job:" + master_addr + ":" + std::to_string(master_port))));
  return std::string("job-") + hex;
}

std::string job_token() {
  std::string token = env_or("COURSE_JOB_TOKEN", "");
  if (!token.empty()) return token;
  return derive_job_token(env_or("MASTER_ADDR", ""), std::atoi(env_or("MASTER_PORT", "0").c_str()));
}

void hello_send(Socket& sock, const Hello& hello, Millis timeout) {
  sock.send_frame(encode(hello), timeout);
  // A course listener answers at once (its accept loop never waits on anyone else), so a
  // listener that stays silent, or answers in another protocol, is some other program on
  // that port: say so in seconds instead of waiting out the whole timeout.
  const Millis wait = std::min(timeout, kHelloAnswerDeadline);
  const std::string not_course =
      ": the program listening there is not a course process (another program on that port? "
      "Pick a free MASTER_PORT)";
  std::string answer;
  try {
    answer = sock.recv_frame(wait, kMaxHelloBytes);
  } catch (const TimeoutError&) {
    throw ProtocolError(sock.peer_name() + " did not answer our hello (" + hello.purpose +
                        ") within " + std::to_string(wait.count() / 1000) + " s" + not_course);
  } catch (const ProtocolError&) {
    throw ProtocolError(sock.peer_name() + " answered our hello (" + hello.purpose +
                        ") with bytes that are not a course frame" + not_course);
  } catch (const PeerClosedError&) {
    // Most often a course rank that failed or died at that moment (its own error says why);
    // only a listener that never answers any hello is some other program.
    throw ProtocolError(sock.peer_name() + " closed the connection instead of answering our " +
                        "hello (" + hello.purpose +
                        "): that rank probably exited or crashed (look for its own error above); "
                        "if it keeps happening with every rank alive, the program listening "
                        "there is not a course process (pick a free MASTER_PORT)");
  }
  if (answer == "ok") return;
  const std::string prefix = "refused: ";
  if (answer.compare(0, prefix.size(), prefix) != 0) {
    throw ProtocolError(sock.peer_name() + " answered our hello (" + hello.purpose +
                        ") with something other than \"ok\" or a refusal" + not_course);
  }
  throw ProtocolError(sock.peer_name() + " refused our hello (" + hello.purpose +
                      "): " + answer.substr(prefix.size()) +
                      ". Every rank of one job needs the same MASTER_ADDR, MASTER_PORT and "
                      "COURSE_JOB_TOKEN");
}

Hello hello_accept(Socket& sock, const std::string& token, const std::string& purpose,
                   Millis timeout) {
  Hello hello;
  std::string reason;
  try {
    reason = decode(sock.recv_frame(timeout, kMaxHelloBytes), hello);
  } catch (const ProtocolError&) {
    reason = "its first bytes are not a course hello (garbage, or another protocol)";
  } catch (const TimeoutError&) {
    const auto ms = timeout.count();
    reason = "it sent no hello within " +
             (ms % 1000 == 0 ? std::to_string(ms / 1000) + " s" : std::to_string(ms) + " ms");
  } catch (const PeerClosedError&) {
    reason = "it closed the connection before finishing its hello";
  }
  if (reason.empty() && hello.token != token) {
    reason = "wrong job token (it belongs to another job: each run has its own token)";
  }
  if (reason.empty() && hello.purpose != purpose) {
    reason = "it asked for '" + hello.purpose + "' but this port serves '" + purpose + "'";
  }
  if (reason.empty()) {
    sock.send_frame(std::string("ok"), timeout);
    return hello;
  }
  // Log first, then answer: whoever reads the answer knows the warning is already out.
  log_warning("refused a connection from " + sock.peer_name() + ": " + reason);
  try {
    sock.send_frame("refused: " + reason, std::chrono::seconds(1));
  } catch (const Error&) {
    // The stranger may be gone already; there is nobody left to tell.
  }
  throw ProtocolError("refused a connection from " + sock.peer_name() + ": " + reason);
}

}  // namespace course
