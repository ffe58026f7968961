// broadcast_flat.cpp: lesson 03: the root sends to every rank in turn (see broadcast_flat.h).
#include "broadcast_flat.h"

#include "collective_checks.h"
#include "point_to_point.h"

namespace course {

void broadcast_flat(TcpComm& comm, std::span<float> data, int root) {
  check_root("broadcast", root, comm.size());
  // BEGIN SOLUTION: the root p2p_sends data to every other rank; the others p2p_recv it
  if (comm.rank() == root) {
    for (int peer = 0; peer < comm.size(); ++peer) {
      if (peer != root) p2p_send(comm, data, peer, tags::kBroadcast);
    }
  } else {
    p2p_recv(comm, data, root, tags::kBroadcast);
  }
  // END SOLUTION
}

}  // namespace course
