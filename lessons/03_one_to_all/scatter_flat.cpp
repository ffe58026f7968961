// scatter_flat.cpp: lesson 03: the root sends each rank its block (see scatter_flat.h).
#include "scatter_flat.h"

#include <algorithm>

#include "collective_checks.h"
#include "point_to_point.h"

namespace course {

void scatter_flat(TcpComm& comm, std::span<const float> input, std::span<float> output, int root) {
  check_rooted_blocks("scatter", "the root's input", input.size(), "output", output.size(), root,
                      comm.rank(), comm.size());
  [[maybe_unused]] const size_t k = output.size();
  // TODO(lesson03): root: send block j to rank j, copy its own; others: receive
  COURSE_TODO();
}

}  // namespace course
