// group_factory.cpp: test_subgroups' tcp groups run lessons 02-05, the ring as all_reduce
// (tests/collectives/group_factory.h); gloo groups need nothing.
#include "../collectives/group_factory.h"

#include "ring_allreduce.h"

namespace course::test {

void install_suite_algorithms(TcpAlgorithms& algorithms) {
  install_lesson05(algorithms);
}

}  // namespace course::test
