// reductions.cpp: lesson 04's entries in the tcp backend (see reductions.h).
#include "reductions.h"

namespace course {

void install_lesson04(TcpAlgorithms& algorithms) {
  install_lesson03(algorithms);
  algorithms.reduce = reduce_binomial_tree;
  algorithms.all_reduce = all_reduce_naive;
  algorithms.all_gather = all_gather_naive;
  algorithms.reduce_scatter = reduce_scatter_naive;
  algorithms.all_to_all = all_to_all_direct;
  algorithms.names["reduce"] = "binomial_tree (lesson 04)";
  algorithms.names["all_reduce"] = "naive: reduce, then broadcast (lesson 04)";
  algorithms.names["all_gather"] = "naive: gather, then broadcast (lesson 04)";
  algorithms.names["reduce_scatter"] = "naive: reduce, then scatter (lesson 04)";
  algorithms.names["all_to_all"] = "direct (lesson 04)";
}

}  // namespace course
