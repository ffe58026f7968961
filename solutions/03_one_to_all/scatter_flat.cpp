// scatter_flat.cpp: lesson 03: the root sends each rank its block (see scatter_flat.h).
#include "scatter_flat.h"

#include <algorithm>

#include "collective_checks.h"
#include "point_to_point.h"

namespace course {

void scatter_flat(TcpComm& comm, std::span<const float> input, std::span<float> output, int root) {
  check_rooted_blocks("scatter", "the root's input", input.size(), "output", output.size(), root,
                      comm.rank(), comm.size());
  const size_t k = output.size();
  // BEGIN SOLUTION: root: send block j to rank j, copy its own; others: receive
  if (comm.rank() == root) {
    for (int peer = 0; peer < comm.size(); ++peer) {
      if (peer != root) p2p_send(comm, input.subspan(peer * k, k), peer, tags::kScatter);
    }
    const std::span<const float> mine = input.subspan(root * k, k);
    if (mine.data() != output.data()) std::copy(mine.begin(), mine.end(), output.begin());
  } else {
    p2p_recv(comm, output, root, tags::kScatter);
  }
  // END SOLUTION
}

}  // namespace course
