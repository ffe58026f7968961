// install_lesson02.cpp: lesson 02, given: puts the learner's send and receive into the
// algorithm table of the TCP process group (see point_to_point.h).
#include "point_to_point.h"

namespace course {

void install_lesson02(TcpAlgorithms& algorithms) {
  algorithms.send = p2p_send;
  algorithms.recv = p2p_recv;
  algorithms.isend = p2p_isend;
  algorithms.irecv = p2p_irecv;
  for (const char* entry : {"send", "recv", "isend", "irecv"}) {
    algorithms.names[entry] = "message (lesson 02)";
  }
}

}  // namespace course
