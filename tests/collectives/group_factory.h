// group_factory.h: how the collective suites get a process group, whatever the backend.
//
// The suites (suite_*.h) are compiled into several test binaries, each linking different
// lessons: test_02 can build a tcp group with lesson 02 only, test_04 with lessons 02-04,
// test_05 adds the ring and the gloo backend. So each test binary defines make_group()
// once, in its own group_factory.cpp, from the helpers below:
//
//   std::unique_ptr<ProcessGroup> make_group(const std::string& backend,
//                                            test::RankContext& ctx, const std::string& name) {
//     if (backend == "tcp") {
//       TcpAlgorithms algorithms;
//       install_lesson04(algorithms);
//       return make_tcp_group(ctx, std::move(algorithms), name);
//     }
//     if (backend == "gloo") return make_gloo_group(ctx, name);
//     throw ConfigError("test_04 has no backend " + backend);
//   }
//
// What this is not: a registry. One function per binary, chosen at link time.
#pragma once

#include <memory>
#include <string>

#include "full_mesh.h"
#include "harness.h"
#include "process_group.h"
#include "process_group_tcp.h"
#ifdef COURSE_HAVE_GLOO
#include "process_group_gloo.h"
#endif

namespace course::test {

/// Defined by each test binary. Every rank calls it with the same backend and name; two
/// groups alive at once in one test need two names (they key the rendezvous).
std::unique_ptr<ProcessGroup> make_group(const std::string& backend, RankContext& ctx,
                                         const std::string& name = "pg");

/// A tcp group over a fresh full mesh (lesson 01), running `algorithms`.
inline std::unique_ptr<TcpProcessGroup> make_tcp_group(RankContext& ctx, TcpAlgorithms algorithms,
                                                       const std::string& name = "pg",
                                                       Millis timeout = default_timeout()) {
  Mesh mesh =
      connect_full_mesh(ctx.store(), ctx.rank, ctx.world, ctx.token, "127.0.0.1", "mesh/" + name);
  return std::make_unique<TcpProcessGroup>(std::move(mesh), std::move(algorithms), timeout);
}

/// The comm alone (lesson code called directly, no group around it).
inline std::unique_ptr<TcpComm> make_tcp_comm(RankContext& ctx, const std::string& name = "comm",
                                              Millis timeout = default_timeout()) {
  Mesh mesh =
      connect_full_mesh(ctx.store(), ctx.rank, ctx.world, ctx.token, "127.0.0.1", "mesh/" + name);
  return std::make_unique<TcpComm>(std::move(mesh), timeout);
}

#ifdef COURSE_HAVE_GLOO
/// A group over the real Gloo library (common/backends/process_group_gloo.h).
inline std::unique_ptr<ProcessGroup> make_gloo_group(RankContext& ctx,
                                                     const std::string& name = "pg") {
  GlooOptions options;
  options.prefix = "gloo/" + name;
  return std::make_unique<GlooProcessGroup>(ctx.store(), ctx.rank, ctx.world, options);
}
#endif

}  // namespace course::test
