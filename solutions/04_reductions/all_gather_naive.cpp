// all_gather_naive.cpp: lesson 04: gather to rank 0, then broadcast (see all_gather_naive.h).
#include "all_gather_naive.h"

#include "broadcast_binomial_tree.h"
#include "collective_checks.h"
#include "gather_flat.h"

namespace course {

void all_gather_naive(TcpComm& comm, std::span<const float> input, std::span<float> output) {
  check_world_multiple("all_gather", "output", output.size(), "input", input.size(), comm.size());
  // BEGIN SOLUTION: gather_flat to root 0, then broadcast_binomial_tree from 0
  gather_flat(comm, input, output, /*root=*/0);
  broadcast_binomial_tree(comm, output, /*root=*/0);
  // END SOLUTION
}

}  // namespace course
