// barrier_dissemination.cpp: lesson 03: the dissemination barrier
// (see barrier_dissemination.h).
#include "barrier_dissemination.h"

#include "point_to_point.h"

namespace course {

void barrier_dissemination(TcpComm& comm) {
  // BEGIN SOLUTION: distance 1, 2, 4.. < N: send {} to r + distance, recv {} from r - distance
  const int n = comm.size();
  const int r = comm.rank();
  for (int distance = 1; distance < n; distance <<= 1) {
    p2p_send(comm, {}, (r + distance) % n, tags::kBarrier);
    p2p_recv(comm, {}, (r - distance + n) % n, tags::kBarrier);
  }
  // END SOLUTION
}

}  // namespace course
