// group_factory.cpp: test_16's tcp groups run lessons 02-05 (the pipeline's messages are
// lesson 02's isend/irecv), as the driver's do; gloo groups need nothing
// (tests/collectives/group_factory.h).
#include "../collectives/group_factory.h"

#include "ring_allreduce.h"

namespace course::test {

void install_suite_algorithms(TcpAlgorithms& algorithms) {
  install_lesson05(algorithms);
}

}  // namespace course::test
