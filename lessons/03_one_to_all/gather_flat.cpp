// gather_flat.cpp: lesson 03: every rank sends its block to the root (see gather_flat.h).
#include "gather_flat.h"

#include <algorithm>

#include "collective_checks.h"
#include "point_to_point.h"

namespace course {

void gather_flat(TcpComm& comm, std::span<const float> input, std::span<float> output, int root) {
  check_rooted_blocks("gather", "the root's output", output.size(), "input", input.size(), root,
                      comm.rank(), comm.size());
  [[maybe_unused]] const size_t k = input.size();
  // TODO(lesson03): root: recv block j from rank j, copy its own; others: send input
  COURSE_TODO();
}

}  // namespace course
