// reductions_test.cpp: lesson 04's suite (tests/collectives/suite_reductions.h) on the tcp
// backend built from lessons 02-04.
//
//   ctest -L lesson04        or        ./build/solutions/test_04 --gtest_filter='*AllReduce*'
#include "reductions.h"

#include "../collectives/suite_reductions.h"

namespace course::test {

void install_suite_algorithms(TcpAlgorithms& algorithms) {
  install_lesson04(algorithms);
}

INSTANTIATE_TEST_SUITE_P(Tcp, Reductions, testing::ValuesIn(world_params({"tcp"})),
                         world_param_name);
INSTANTIATE_TEST_SUITE_P(Tcp, LargeReductions, testing::ValuesIn(world_params({"tcp"}, 2, 3)),
                         world_param_name);

}  // namespace course::test
