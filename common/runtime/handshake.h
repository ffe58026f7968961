// handshake.h: the first bytes of every course connection, and the job token in them.
//
// Every connection (to the store, or between ranks) opens with a hello frame from the
// dialing side: magic "DTC1", the job token, the dialer's rank, and a purpose string
// ("store", "mesh", ...). The listening side checks magic and token and answers "ok" or a
// reason, then closes. A stranger (another job's rank, a port scanner, garbage bytes) is
// refused and logged; the listener keeps serving its own job.
//
// The token comes from COURSE_JOB_TOKEN (set by the launcher to a random value per run;
// export a secret of your own to every rank, or to every node's launcher, and it is used
// as is). When it is unset (ranks started by hand, mpirun, srun) it is derived from
// MASTER_ADDR and MASTER_PORT, so all ranks of one job agree and two jobs on one machine
// differ; such a token is computable by anyone who knows the port.
#pragma once

#include <string>

#include "socket.h"

namespace course {

/// The hello frame that opens every connection.
struct Hello {
  std::string token;    ///< The dialer's job token; the listener refuses any other.
  int rank = -1;        ///< The dialer's rank (-1: not a rank, e.g. a tool).
  std::string purpose;  ///< What the connection is for: "store", "mesh", ...
};

/// The job token of this process (see above).
std::string job_token();

/// The token every rank of a job derives from MASTER_ADDR and MASTER_PORT when
/// COURSE_JOB_TOKEN is unset ("job-" and 16 hex digits). The launcher uses it for several
/// nodes, so that its ranks and ranks started by hand agree.
std::string derive_job_token(const std::string& master_addr, int master_port);

/// How long hello_send waits for the answer (at most): a course listener answers at once.
constexpr Millis kHelloAnswerDeadline{10'000};

/// Dialing side: sends the hello and waits for the answer (up to kHelloAnswerDeadline).
/// Throws ProtocolError with the listener's reason when refused, and one saying that
/// another program listens there when the answer does not come or is not a course answer.
void hello_send(Socket& sock, const Hello& hello, Millis timeout = default_timeout());

/// Listening side: reads the hello within `timeout`, checks magic, token and purpose.
/// Returns the hello on success (answering "ok"); on failure answers the reason, logs a
/// warning naming the peer address and the reason, and throws ProtocolError.
Hello hello_accept(Socket& sock, const std::string& token, const std::string& purpose,
                   Millis timeout = std::chrono::seconds(10));

}  // namespace course
