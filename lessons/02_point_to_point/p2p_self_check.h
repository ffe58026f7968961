// p2p_self_check.h: lesson 02, given: the driver's four checks of point-to-point
// messages, run on your lesson functions over a TcpComm or on a ProcessGroup's (gloo) to
// compare:
//
//   1. the seed's ping-pong between ranks 0 and 1: a tensor starts at 0, rank 0 adds 1
//      and sends it, rank 1 adds 2 and sends it back; rank 0 must end with 3;
//   2. tagged messages of several sizes (0 and 1 included) arriving in order;
//   3. every rank isends 32 MiB to the next rank, then irecvs 32 MiB from the previous
//      one (with blocking sends, or an isend that blocks, this deadlocks: see the README;
//      with a 10 s timeout it fails in seconds, saying deadlock);
//   4. a receive into a buffer smaller than the message: it must fail, naming both sizes.
//
// Checks 2 and 3 send data_values(rank, count, index) (collective_oracle.h), so a message
// that arrives from the wrong rank or out of order is named. What this is not: the lesson's
// tests (make grade-lesson02), which cover more sizes, peers and failures.
#pragma once

#include <functional>
#include <span>
#include <string>

#include "driver.h"
#include "process_group.h"
#include "tcp_comm.h"
#include "work.h"

namespace course {

/// The four calls under test, with the group's rank, size and receive timeout.
struct P2p {
  int rank = 0, size = 0;
  Millis timeout = default_timeout();
  std::function<void(std::span<const float>, int dst, int tag)> send;
  std::function<void(std::span<float>, int src, int tag)> recv;
  std::function<WorkPtr(std::span<const float>, int dst, int tag)> isend;
  std::function<WorkPtr(std::span<float>, int src, int tag)> irecv;
};

/// Your p2p_send, p2p_recv, p2p_isend and p2p_irecv on `comm` (which must outlive it).
P2p lesson_p2p(TcpComm& comm);

/// The same calls of `pg` (which must outlive it).
P2p group_p2p(ProcessGroup& pg);

/// Checks 1 to 4 in order on every rank, printing what went wrong to standard output.
/// `on` ends the verdict's text: "" for your functions, " on gloo" for a group.
Verdict run_p2p_checks(const P2p& p2p, const std::string& on);

}  // namespace course
