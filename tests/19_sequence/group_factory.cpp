// group_factory.cpp: test_19's tcp groups run lessons 02-05 (all_reduce is the ring), as
// the driver's do; gloo groups need nothing (tests/collectives/group_factory.h).
#include "../collectives/group_factory.h"

#include "ring_allreduce.h"

namespace course::test {

void install_suite_algorithms(TcpAlgorithms& algorithms) {
  install_lesson05(algorithms);
}

}  // namespace course::test
