// point_to_point_test.cpp: lesson 02's suite (tests/collectives/suite_point_to_point.h) on
// the tcp backend built from lesson 02.
//
//   ctest -L lesson02        or        ./build/solutions/test_02 --gtest_filter='Tcp/*'
#include "point_to_point.h"

#include "../collectives/suite_point_to_point.h"

namespace course::test {

void install_suite_algorithms(TcpAlgorithms& algorithms) {
  install_lesson02(algorithms);
}

INSTANTIATE_TEST_SUITE_P(Tcp, PointToPoint, testing::Values("tcp"), backend_param_name);

}  // namespace course::test
