// all_to_all_direct.cpp: lesson 04: every rank exchanges one block with every other rank
// (see all_to_all_direct.h).
#include "all_to_all_direct.h"

#include <algorithm>
#include <vector>

#include "collective_checks.h"
#include "error.h"
#include "point_to_point.h"
#include "work.h"

namespace course {

void all_to_all_direct(TcpComm& comm, std::span<const float> input, std::span<float> output) {
  const size_t k = check_all_to_all(input, output, comm.size());
  const int n = comm.size();
  const int r = comm.rank();
  // BEGIN SOLUTION: irecv and isend with every peer, copy your own block, wait_all
  std::vector<WorkPtr> works;
  for (int step = 1; step < n; ++step) {
    const int from = (r - step + n) % n;
    works.push_back(p2p_irecv(comm, output.subspan(from * k, k), from, tags::kAllToAll));
  }
  for (int step = 1; step < n; ++step) {
    const int to = (r + step) % n;
    works.push_back(p2p_isend(comm, input.subspan(to * k, k), to, tags::kAllToAll));
  }
  const std::span<const float> mine = input.subspan(r * k, k);
  std::copy(mine.begin(), mine.end(), output.subspan(r * k, k).begin());
  wait_all(works, comm.timeout());
  // END SOLUTION
}

}  // namespace course
