// point_to_point_test.cpp: lesson 02's suite (tests/collectives/suite_point_to_point.h) on
// the tcp backend built from lesson 02.
//
//   ctest -L lesson02        or        ./build/solutions/test_02 --gtest_filter='Tcp/*'
#include "../collectives/suite_point_to_point.h"

namespace course::test {

INSTANTIATE_TEST_SUITE_P(Tcp, PointToPoint, testing::Values("tcp"), backend_param_name);

}  // namespace course::test
