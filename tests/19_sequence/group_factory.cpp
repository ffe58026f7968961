// group_factory.cpp: test_19's tcp groups run lessons 02-05 and 13 (all_reduce, and SP's
// reduce_scatter and all_gather, are rings), as the driver's do; gloo groups need nothing
// (tests/collectives/group_factory.h).
#include "../collectives/group_factory.h"

#include "sharding.h"

namespace course::test {

void install_suite_algorithms(TcpAlgorithms& algorithms) {
  install_lesson13(algorithms);
}

}  // namespace course::test
