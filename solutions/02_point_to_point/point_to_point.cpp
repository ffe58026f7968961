// point_to_point.cpp: lesson 02, part 2: blocking and non-blocking send and receive
// (see point_to_point.h).
#include "point_to_point.h"

#include <string>

#include "error.h"

namespace course {

void p2p_send(TcpComm& comm, std::span<const float> data, int dst, int tag) {
  // BEGIN SOLUTION: run send_message on dst's send channel, on this thread (run_inline)
  Socket& sock = comm.socket(dst);
  const Millis timeout = comm.timeout();
  comm.send_channel(dst).run_inline([&] { send_message(sock, data, tag, timeout); });
  // END SOLUTION
}

void p2p_recv(TcpComm& comm, std::span<float> data, int src, int tag) {
  // BEGIN SOLUTION: run recv_message on src's receive channel, on this thread (run_inline)
  Socket& sock = comm.socket(src);
  const Millis timeout = comm.timeout();
  const int me = comm.rank();
  comm.recv_channel(src).run_inline([&] { recv_message(sock, data, tag, src, me, timeout); });
  // END SOLUTION
}

WorkPtr p2p_isend(TcpComm& comm, std::span<const float> data, int dst, int tag) {
  // BEGIN SOLUTION: submit send_message to dst's send channel and return its Work
  Socket& sock = comm.socket(dst);
  const Millis timeout = comm.timeout();
  // The task runs later on another thread: capture by value (the span is a pointer and a
  // length; the caller keeps the memory alive until wait()), and the socket by reference
  // (it lives as long as the comm).
  return comm.send_channel(dst).submit(
      [&sock, data, tag, timeout] { send_message(sock, data, tag, timeout); },
      "isend to rank " + std::to_string(dst) + " (" + tags::tag_name(tag) + ", " +
          std::to_string(data.size()) + " elements)");
  // END SOLUTION
}

WorkPtr p2p_irecv(TcpComm& comm, std::span<float> data, int src, int tag) {
  // BEGIN SOLUTION: submit recv_message to src's receive channel and return its Work
  Socket& sock = comm.socket(src);
  const Millis timeout = comm.timeout();
  const int me = comm.rank();
  return comm.recv_channel(src).submit(
      [&sock, data, tag, src, me, timeout] { recv_message(sock, data, tag, src, me, timeout); },
      "irecv from rank " + std::to_string(src) + " (" + tags::tag_name(tag) + ", " +
          std::to_string(data.size()) + " elements)");
  // END SOLUTION
}

}  // namespace course
