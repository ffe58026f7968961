// broadcast_binomial_tree.cpp: lesson 03: broadcast down a binomial tree
// (see broadcast_binomial_tree.h for the picture).
#include "broadcast_binomial_tree.h"

#include "collective_checks.h"
#include "point_to_point.h"

namespace course {

void broadcast_binomial_tree(TcpComm& comm, std::span<float> data, int root) {
  check_root("broadcast", root, comm.size());
  const int n = comm.size();
  const int v = (comm.rank() - root + n) % n;  // my rank relative to the root
  // BEGIN SOLUTION: recv from parent v - lowbit(v); send to v + 2^k < N, 2^k < lowbit(v)
  const auto real = [&](int relative) { return (relative + root) % n; };
  // Receive: the lowest set bit of v is the round distance to my parent.
  int mask = 1;
  while (mask < n) {
    if (v & mask) {
      p2p_recv(comm, data, real(v - mask), tags::kBroadcast);
      break;
    }
    mask <<= 1;
  }
  // Send: to every child v + 2^k below that bit (the root, v = 0, has mask >= n here).
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (v + mask < n) p2p_send(comm, data, real(v + mask), tags::kBroadcast);
  }
  // END SOLUTION
}

}  // namespace course
