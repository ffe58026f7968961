// one_to_all.cpp: lesson 03's entries in the tcp backend (see one_to_all.h).
#include "one_to_all.h"

namespace course {

void install_lesson03(TcpAlgorithms& algorithms) {
  install_lesson02(algorithms);
  algorithms.broadcast = broadcast_binomial_tree;
  algorithms.scatter = scatter_flat;
  algorithms.gather = gather_flat;
  algorithms.barrier = barrier_dissemination;
  algorithms.names["broadcast"] = "binomial_tree (lesson 03)";
  algorithms.names["scatter"] = "flat (lesson 03)";
  algorithms.names["gather"] = "flat (lesson 03)";
  algorithms.names["barrier"] = "dissemination (lesson 03)";
}

}  // namespace course
