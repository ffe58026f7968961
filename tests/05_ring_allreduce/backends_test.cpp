// backends_test.cpp: the collective suites of lessons 02-05 (tests/collectives/) on both
// backends this lesson has: tcp, with the ring installed as all_reduce (install_lesson05),
// and gloo, the real Gloo library (common/backends/process_group_gloo.h), when the build has it.
//
//   ctest -L lesson05     or     ./build/solutions/test_05 --gtest_filter='Gloo/*'
//
// On tcp, only the reductions suite runs here (its all_reduce is now the ring); lessons
// 02-04's binaries already run the rest on tcp. Gloo runs all three.
#include "../collectives/suite_one_to_all.h"
#include "../collectives/suite_point_to_point.h"
#include "../collectives/suite_reductions.h"
#include "ring_allreduce.h"

namespace course::test {

void install_suite_algorithms(TcpAlgorithms& algorithms) {
  install_lesson05(algorithms);
}

INSTANTIATE_TEST_SUITE_P(Ring, Reductions, testing::ValuesIn(world_params({"tcp"})),
                         world_param_name);
// The large-message cases of lessons 03-04 ran in their own binaries; the ring's is in
// all_reduce_ring_test.cpp (AllReduceRingLarge), and Gloo does not deadlock on size.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(LargeOneToAll);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(LargeReductions);

#ifdef COURSE_HAVE_GLOO
INSTANTIATE_TEST_SUITE_P(Gloo, PointToPoint, testing::Values("gloo"), backend_param_name);
INSTANTIATE_TEST_SUITE_P(Gloo, OneToAll, testing::ValuesIn(world_params({"gloo"})),
                         world_param_name);
INSTANTIATE_TEST_SUITE_P(Gloo, Reductions, testing::ValuesIn(world_params({"gloo"})),
                         world_param_name);
#endif

}  // namespace course::test
