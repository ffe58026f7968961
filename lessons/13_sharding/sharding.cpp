// sharding.cpp: see sharding.h.
#include "sharding.h"

#include "ring_allreduce.h"
#include "ring_halves.h"

namespace course {

void install_lesson13(TcpAlgorithms& algorithms) {
  install_lesson05(algorithms);
  algorithms.reduce_scatter = [](TcpComm& comm, std::span<const float> input,
                                 std::span<float> output,
                                 ReduceOp op) { reduce_scatter_ring(comm, input, output, op); };
  algorithms.all_gather = [](TcpComm& comm, std::span<const float> input, std::span<float> output) {
    all_gather_ring(comm, input, output);
  };
  algorithms.names["reduce_scatter"] = "ring, reduce-scatter half (lesson 13)";
  algorithms.names["all_gather"] = "ring, all-gather half (lesson 13)";
}

}  // namespace course
