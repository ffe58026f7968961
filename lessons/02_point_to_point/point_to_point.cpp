// point_to_point.cpp: lesson 02, part 2: blocking and non-blocking send and receive
// (see point_to_point.h).
#include "point_to_point.h"

#include <string>

#include "error.h"

namespace course {

void p2p_send(TcpComm& comm, std::span<const float> data, int dst, int tag) {
  // TODO(lesson02): run send_message on dst's send channel, on this thread (run_inline)
  COURSE_TODO();
}

void p2p_recv(TcpComm& comm, std::span<float> data, int src, int tag) {
  // TODO(lesson02): run recv_message on src's receive channel, on this thread (run_inline)
  COURSE_TODO();
}

WorkPtr p2p_isend(TcpComm& comm, std::span<const float> data, int dst, int tag) {
  // TODO(lesson02): submit send_message to dst's send channel and return its Work
  COURSE_TODO();
}

WorkPtr p2p_irecv(TcpComm& comm, std::span<float> data, int src, int tag) {
  // TODO(lesson02): submit recv_message to src's receive channel and return its Work
  COURSE_TODO();
}

}  // namespace course
