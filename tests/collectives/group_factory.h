// group_factory.h: how the collective suites get a process group, whatever the backend:
// through make_process_group (common/backends/process_group_factory.h), as the drivers do.
//
// The suites (suite_*.h) are compiled into several test binaries, each linking different
// lessons: test_02 can build a tcp group with lesson 02 only, test_04 with lessons 02-04,
// test_05 adds the ring. So each binary says which algorithms its tcp groups run, once,
// beside the suites it instantiates:
//
//   void install_suite_algorithms(TcpAlgorithms& algorithms) { install_lesson04(algorithms); }
//
// Lesson 12's binary also runs the suites over shared memory: the backend names "shm" and
// "auto" make a tcp group whose peers are connected as that transport says
// (common/comm/transport.h), through the connector that binary sets once:
//
//   const bool kShm = (suite_shm_connector() = connect_shm_default, true);
//
// What this is not: a registry. One function per binary, chosen at link time.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "full_mesh.h"
#include "harness.h"
#include "process_group.h"
#include "process_group_factory.h"
#include "process_group_tcp.h"
#include "subgroups.h"

namespace course::test {

/// Defined by each test binary that uses make_group: fills the tcp backend's algorithms
/// with the lessons the binary links (install_lesson02 ... install_lesson05).
void install_suite_algorithms(TcpAlgorithms& algorithms);

/// The shared-memory connector of the "shm" and "auto" backends (empty: they throw
/// ConfigError saying so). Set by the binary that links lesson 12.
inline ShmConnector& suite_shm_connector() {
  static ShmConnector connector;
  return connector;
}

/// A recipe for make_process_group on this rank: the harness's token, loopback.
inline GroupRecipe suite_recipe(RankContext& ctx, const std::string& name, Millis timeout) {
  GroupRecipe recipe;
  recipe.name = name;
  recipe.token = ctx.token;
  recipe.timeout = timeout;
  recipe.connect_mesh = connect_full_mesh;
  recipe.install = install_suite_algorithms;
  return recipe;
}

/// The backend and recipe that make_process_group gets for `backend` ("shm" and "auto":
/// tcp over that transport), with make_group's name and loopback.
inline std::pair<std::string, GroupRecipe> suite_backend_recipe(const std::string& backend,
                                                                RankContext& ctx,
                                                                const std::string& name) {
  GroupRecipe recipe = suite_recipe(ctx, name, default_timeout());
  if (backend == "shm" || backend == "auto") {
    recipe.transport = backend;
    recipe.connect_shm = suite_shm_connector();
    return {"tcp", recipe};
  }
  return {backend, recipe};
}

/// A group on `backend` ("tcp": install_suite_algorithms over a fresh full mesh; "shm" and
/// "auto": the same over that transport; "gloo"). Every rank calls it with the same
/// backend and name; two groups alive at once in one test need two names (they key the
/// rendezvous).
inline std::unique_ptr<ProcessGroup> make_group(const std::string& backend, RankContext& ctx,
                                                const std::string& name = "pg") {
  const auto [maker_backend, recipe] = suite_backend_recipe(backend, ctx, name);
  return make_process_group(maker_backend, ctx.store(), ctx.rank, ctx.world, recipe);
}

/// The test body's world as Subgroups (common/comm/subgroups.h) on `backend` (as
/// make_group): its groups are made with make_group's recipe, named
/// "<prefix>/<prefix>/<k>-<name>". `timeout` bounds new_group's order check.
inline Subgroups make_subgroups(const std::string& backend, RankContext& ctx,
                                const std::string& prefix = "subgroups",
                                Millis timeout = default_timeout()) {
  const auto [maker_backend, recipe] = suite_backend_recipe(backend, ctx, prefix);
  return Subgroups(ctx.store(), ctx.rank, ctx.world, group_maker(maker_backend, recipe), prefix,
                   timeout);
}

/// A tcp group running `algorithms` (a test of one lesson's own calls).
inline std::unique_ptr<ProcessGroup> make_tcp_group(RankContext& ctx, TcpAlgorithms algorithms,
                                                    const std::string& name = "pg",
                                                    Millis timeout = default_timeout()) {
  GroupRecipe recipe = suite_recipe(ctx, name, timeout);
  recipe.install = [algorithms = std::move(algorithms)](TcpAlgorithms& out) { out = algorithms; };
  return make_process_group("tcp", ctx.store(), ctx.rank, ctx.world, recipe);
}

/// The comm alone (lesson code called directly, no group around it).
inline std::unique_ptr<TcpComm> make_tcp_comm(RankContext& ctx, const std::string& name = "comm",
                                              Millis timeout = default_timeout()) {
  Mesh mesh =
      connect_full_mesh(ctx.store(), ctx.rank, ctx.world, ctx.token, "127.0.0.1", "mesh/" + name);
  return std::make_unique<TcpComm>(std::move(mesh), timeout);
}

}  // namespace course::test
