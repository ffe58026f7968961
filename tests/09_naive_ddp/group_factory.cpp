// group_factory.cpp: test_09's process groups: the tcp backend with lessons 02-05 installed
// (all_reduce = the ring), which NaiveDdp calls, and the gloo backend (see
// tests/collectives/group_factory.h).
#include "../collectives/group_factory.h"

#include "all_reduce_ring.h"

namespace course::test {

std::unique_ptr<ProcessGroup> make_group(const std::string& backend, RankContext& ctx,
                                         const std::string& name) {
  if (backend == "tcp") {
    TcpAlgorithms algorithms;
    install_lesson05(algorithms);
    return make_tcp_group(ctx, std::move(algorithms), name);
  }
#ifdef COURSE_HAVE_GLOO
  if (backend == "gloo") return make_gloo_group(ctx, name);
#endif
  throw ConfigError("test_09 cannot make a '" + backend + "' process group");
}

}  // namespace course::test
