// p2p_self_check.cpp: lesson 02, given: the driver's checks (see the header).
#include "p2p_self_check.h"

#include <iostream>
#include <vector>

#include "collective_oracle.h"
#include "error.h"
#include "point_to_point.h"

namespace course {
namespace {

// 1. The ping-pong, on ranks 0 and 1.
bool ping_pong(const P2p& p2p) {
  std::vector<float> tensor{0.0f};
  if (p2p.rank == 0) {
    tensor[0] += 1;
    p2p.send(tensor, 1, 0);
    p2p.recv(tensor, 1, 0);
    std::cout << "ping-pong: sent 1, got back " << tensor[0] << " (expected 3)" << std::endl;
    return tensor[0] == 3.0f;
  }
  if (p2p.rank == 1) {
    p2p.recv(tensor, 0, 0);
    const bool ok = tensor[0] == 1.0f;
    tensor[0] += 2;
    p2p.send(tensor, 0, 0);
    return ok;
  }
  return true;
}

// 2. Messages with different tags and sizes, matched in order, from rank 0 to rank 1.
bool tagged_messages(const P2p& p2p) {
  const std::vector<std::pair<int, size_t>> messages{{7, 5}, {8, 0}, {7, 1}, {42, 1000}};
  bool ok = true;
  for (size_t m = 0; m < messages.size(); ++m) {
    const auto [tag, count] = messages[m];
    if (p2p.rank == 0) {
      p2p.send(data_values(0, count, m), 1, tag);
    } else if (p2p.rank == 1) {
      std::vector<float> got(count, -1.0f);
      p2p.recv(got, 0, tag);
      const std::string wrong = describe_wrong(got, data_values(0, count, m));
      if (!wrong.empty()) {
        std::cout << "message " << m << " (tag " << tag << "): " << wrong << std::endl;
        ok = false;
      }
    }
  }
  return ok;
}

// 3. Everyone isends 32 MiB to the right, then irecvs 32 MiB from the left. 32 MiB is
// more than a socket buffers: an isend that sends on the calling thread before it returns
// never gets to the receive, and neither does its neighbour. The socket timeout (10 s
// here) turns that deadlock into an error that says so.
bool ring_exchange(const P2p& p2p) {
  const int n = p2p.size, r = p2p.rank;
  const int right = (r + 1) % n, left = (r + n - 1) % n;
  const size_t count = (32u << 20) / sizeof(float);
  const std::vector<float> mine = data_values(r, count);
  std::vector<float> theirs(count, -1.0f);
  try {
    WorkPtr send = p2p.isend(mine, right, 1);
    WorkPtr recv = p2p.irecv(theirs, left, 1);
    wait_all({send, recv}, p2p.timeout);
  } catch (const TimeoutError& e) {
    throw TimeoutError(
        "deadlock in the 32 MiB exchange on rank " + std::to_string(r) + " (isend to rank " +
        std::to_string(right) + ", then irecv from rank " + std::to_string(left) +
        "): 32 MiB do not fit in a socket's buffers, so an isend that sends before it "
        "returns waits for a receive its peer never reaches. p2p_isend must queue the send "
        "on the channel's thread and return at once. The error: " +
        e.detail());
  }
  const std::string wrong = describe_wrong(theirs, data_values(left, count));
  if (!wrong.empty()) std::cout << "32 MiB from rank " << left << ": " << wrong << std::endl;
  if (r == 0) {
    std::cout << "isend/irecv: every rank sent 32 MiB right and received 32 MiB from the left"
              << std::endl;
  }
  return wrong.empty();
}

// 4. Rank 1 receives 8 elements into a buffer of 4: it must fail, naming both sizes. The
// error aborts rank 1's comm, so this comes last.
bool too_small_buffer(const P2p& p2p) {
  if (p2p.rank == 0) {
    p2p.send(data_values(0, 8), 1, 9);
    return true;
  }
  if (p2p.rank != 1) return true;
  std::vector<float> small(4);
  try {
    p2p.recv(small, 0, 9);
  } catch (const ProtocolError& e) {
    const std::string& what = e.detail();
    const bool names_sizes = what.find("8 elements") != std::string::npos &&
                             what.find("4 elements") != std::string::npos;
    std::cout << "too small a buffer: " << what << std::endl;
    if (!names_sizes) std::cout << "the error should name both sizes (8 and 4 elements)\n";
    return names_sizes;
  }
  std::cout << "a receive of 4 elements accepted a message of 8: it must throw ProtocolError"
            << std::endl;
  return false;
}

}  // namespace

P2p lesson_p2p(TcpComm& comm) {
  return {comm.rank(),
          comm.size(),
          comm.timeout(),
          [&comm](auto data, int dst, int tag) { p2p_send(comm, data, dst, tag); },
          [&comm](auto data, int src, int tag) { p2p_recv(comm, data, src, tag); },
          [&comm](auto data, int dst, int tag) { return p2p_isend(comm, data, dst, tag); },
          [&comm](auto data, int src, int tag) { return p2p_irecv(comm, data, src, tag); }};
}

P2p group_p2p(ProcessGroup& pg) {
  return {pg.rank(),
          pg.size(),
          default_timeout(),
          [&pg](auto data, int dst, int tag) { pg.send(data, dst, tag); },
          [&pg](auto data, int src, int tag) { pg.recv(data, src, tag); },
          [&pg](auto data, int dst, int tag) { return pg.isend(data, dst, tag); },
          [&pg](auto data, int src, int tag) { return pg.irecv(data, src, tag); }};
}

Verdict run_p2p_checks(const P2p& p2p, const std::string& on) {
  std::vector<std::string> failed;
  if (!ping_pong(p2p)) failed.push_back("ping-pong");
  if (!tagged_messages(p2p)) failed.push_back("tagged messages");
  if (!ring_exchange(p2p)) failed.push_back("isend/irecv exchange");
  if (!too_small_buffer(p2p)) failed.push_back("too-small receive buffer");
  if (!failed.empty()) {
    std::string what;
    for (const std::string& f : failed) what += (what.empty() ? "" : ", ") + f;
    return Verdict::fail("wrong" + on + ": " + what);
  }
  return Verdict::pass(
      "ping-pong 0 -> 1 -> 0 ends with 3; tags in order; 32 MiB isend/irecv ring; size "
      "mismatch named" +
      on);
}

}  // namespace course
