// process_group_factory.h: a process group by backend name, for drivers (--backend).
//
//   GroupRecipe recipe;
//   recipe.token = job_token();
//   recipe.host = ctx.advertise_host();
//   recipe.connect_mesh = connect_full_mesh;   // lesson 01
//   recipe.install = install_lesson05;         // the algorithms the tcp backend runs
//   auto pg = make_process_group(ctx.args().backend, ctx.store(), ctx.rank(), ctx.world(),
//                                recipe);
//
// "tcp" builds a TcpProcessGroup over a fresh full mesh with the recipe's algorithms (the
// lesson code: common/ cannot name it, so the caller hands it over), its peers connected
// as recipe.transport says (transport.h: sockets, or lesson 12's shared memory); "gloo" builds a
// GlooProcessGroup, or throws ConfigError when this build has no Gloo; "nccl" builds an
// NcclProcessGroup on GPU recipe.device (CUDA buffers only), or throws ConfigError naming
// what the build lacks (CUDA, NCCL). In common/, this is the only file that asks whether
// Gloo or NCCL was compiled in (COURSE_HAVE_GLOO, COURSE_HAVE_NCCL); the backends' own
// files are compiled only when they were.
//
// Devices: tcp and gloo move host memory, nccl moves CUDA memory. check_backend_device()
// is the one place a driver's --backend and --device are matched: CUDA tensors on tcp or
// gloo are refused (not staged through the host) with a ConfigError naming --backend nccl.
//
// What this is not: the tests' factory (tests/collectives/group_factory.h picks the
// algorithms per test binary at link time).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "mesh.h"
#include "process_group.h"
#include "process_group_tcp.h"
#include "rank_names.h"
#include "store.h"
#include "subgroups.h"
#include "transport.h"

namespace course {

/// What make_process_group needs besides the backend name (see the top of this file).
struct GroupRecipe {
  /// Keys the rendezvous in the store: two groups alive at once need two names.
  std::string name = "pg";
  /// The address other ranks dial to reach this one (DriverContext::advertise_host()).
  std::string host = "127.0.0.1";
  /// The job token (handshake.h); the tcp mesh refuses connections without it.
  std::string token;
  /// Bounds the rendezvous and every operation of the group.
  Millis timeout = default_timeout();
  /// tcp only: builds the mesh (lesson 01's connect_full_mesh has this signature).
  std::function<Mesh(StoreClient& store, int rank, int world, const std::string& token,
                     const std::string& host, const std::string& name, Millis timeout)>
      connect_mesh;
  /// tcp only: fills the algorithms (install_lesson02 ... install_lesson05).
  std::function<void(TcpAlgorithms&)> install;
  /// Gives the group a CollectiveMonitor (collective_monitor.h, on its own store
  /// connection): a failed collective names the ranks that had not reached it.
  bool monitor = true;
  /// tcp only: what carries each peer's bytes, "tcp", "shm" or "auto" (transport.h).
  std::string transport = "tcp";
  /// tcp only, for "shm" and "auto": connects two local ranks over shared memory
  /// (lesson 12's connect_shm; install_lesson12 sets it).
  ShmConnector connect_shm;
  /// nccl only: the CUDA device of this rank (LOCAL_RANK); -1 keeps the current one.
  int device = -1;
  /// How errors name the ranks (rank_names.h). The default is the world's
  /// ("rank 3"); group_maker sets a subgroup's, so that its peers are named by their
  /// world ranks ("rank 3 (group rank 1 of 'tp1')").
  RankNames names;
};

/// The backends on host memory this build can make: "tcp", and "gloo" when Gloo was
/// found (what the CPU benchmarks and comparisons loop over).
std::vector<std::string> available_backends();

/// Every backend --backend accepts in this build: available_backends(), then "nccl" when
/// CUDA and NCCL were found. For drivers' --backend help and errors.
std::vector<std::string> backend_choices();

/// backend_choices() joined: "tcp, gloo, nccl".
std::string backend_choices_str();

/// Throws ConfigError when tensors on `device` ("cpu" or "cuda") cannot go through
/// `backend`: CUDA tensors on tcp or gloo (use --backend nccl), CPU tensors on nccl (use
/// --device cuda), or nccl in a build without it.
void check_backend_device(const std::string& backend, const std::string& device);

/// A group of `world` ranks on `backend`. Every rank calls it with the same backend and
/// recipe.name. Throws ConfigError for an unknown or unavailable backend, or a tcp recipe
/// without connect_mesh or install.
std::unique_ptr<ProcessGroup> make_process_group(const std::string& backend, StoreClient& store,
                                                 int rank, int world, const GroupRecipe& recipe);

/// The GroupMaker of Subgroups (subgroups.h) on `backend`: make_process_group with
/// `recipe`, renamed "<recipe.name>/<name>" per group, and without a collective monitor
/// (its agent knows world ranks only), its errors naming the peers by world rank
/// (GroupRecipe::names). Checks the backend now (ConfigError as above).
GroupMaker group_maker(const std::string& backend, GroupRecipe recipe);

}  // namespace course
