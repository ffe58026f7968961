// backends_test.cpp: lessons 02-05's collective suites over shared memory: the tcp
// backend with lesson 05's ring, every peer connected through lesson 12's channel
// ("shm"), and with "auto" (which, on one machine, picks shm for every peer). The large
// cases move 32 MiB between each pair under the short large-message timeout (suite.h).
// Each connection first runs the channel's self-check (connect_checked_shm below).
//
//   ctest -L lesson12     or     ./build/solutions/test_12 --gtest_filter='Shm/*'
#include "../collectives/suite_one_to_all.h"
#include "../collectives/suite_point_to_point.h"
#include "../collectives/suite_reductions.h"
#include "channel_self_check.h"
#include "error.h"
#include "ring_allreduce.h"
#include "shm_transport.h"

namespace course::test {

void install_suite_algorithms(TcpAlgorithms& algorithms) {
  install_lesson05(algorithms);
}

namespace {
// Every peer's stream is your channel: its self-check (channel_self_check.h: full, empty,
// a message that wraps the ring's end) runs before each connection, so a ring that is
// wrong there fails each case at once, naming the call, instead of crashing a rank or
// timing out mid-collective.
ByteStreamPtr connect_checked_shm(StoreClient& store, int rank, int peer, const std::string& name,
                                  Millis timeout) {
  const std::string wrong = self_check_shm_channel();
  if (!wrong.empty()) throw Error("self-check: " + wrong);
  return connect_shm_default(store, rank, peer, name, timeout);
}
const bool kShmConnector = (suite_shm_connector() = connect_checked_shm, true);
}  // namespace

INSTANTIATE_TEST_SUITE_P(Shm, PointToPoint, testing::Values("shm", "auto"), backend_param_name);
INSTANTIATE_TEST_SUITE_P(Shm, OneToAll, testing::ValuesIn(world_params({"shm"})), world_param_name);
INSTANTIATE_TEST_SUITE_P(Shm, Reductions, testing::ValuesIn(world_params({"shm"})),
                         world_param_name);
INSTANTIATE_TEST_SUITE_P(Auto, Reductions, testing::ValuesIn(world_params({"auto"}, 3, 3)),
                         world_param_name);
INSTANTIATE_TEST_SUITE_P(Shm, LargeOneToAll, testing::ValuesIn(world_params({"shm"}, 2, 3)),
                         world_param_name);
INSTANTIATE_TEST_SUITE_P(Shm, LargeReductions, testing::ValuesIn(world_params({"shm"}, 2, 3)),
                         world_param_name);

}  // namespace course::test
