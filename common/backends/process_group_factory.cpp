// process_group_factory.cpp: see process_group_factory.h.
#include "process_group_factory.h"

#include <algorithm>

#include "error.h"
#ifdef COURSE_HAVE_GLOO
#include "process_group_gloo.h"
#endif
#ifdef COURSE_HAVE_NCCL
#include "process_group_nccl.h"
#endif

namespace course {

std::vector<std::string> available_backends() {
#ifdef COURSE_HAVE_GLOO
  return {"tcp", "gloo"};
#else
  return {"tcp"};
#endif
}

std::vector<std::string> backend_choices() {
  std::vector<std::string> choices = available_backends();
#ifdef COURSE_HAVE_NCCL
  choices.push_back("nccl");
#endif
  return choices;
}

std::string backend_choices_str() {
  std::string known;
  for (const std::string& b : backend_choices()) known += (known.empty() ? "" : ", ") + b;
  return known;
}

namespace {

// Lesson 01's connect_full_mesh names the ranks it connects as it knows them ("rank 1"):
// for a subgroup those are group ranks. Rethrows the error in flight, of the same type,
// with the group's world ranks beside them, so it reads as the launcher's summary does.
[[noreturn]] void rethrow_with_world_ranks(const RankNames& names) {
  std::string where = " [in group '" + names.group + "':";
  for (size_t i = 0; i < names.world_ranks.size(); ++i) {
    where += (i == 0 ? " " : ", ") + std::string("group rank ") + std::to_string(i) + " is rank " +
             std::to_string(names.world_ranks[i]);
  }
  where += "]";
  try {
    throw;
  } catch (const TimeoutError& e) {
    throw TimeoutError(e.detail() + where);
  } catch (const PeerClosedError& e) {
    throw PeerClosedError(e.detail() + where);
  } catch (const NetworkError& e) {
    throw NetworkError(e.detail() + where);
  } catch (const ProtocolError& e) {
    throw ProtocolError(e.detail() + where);
  } catch (const ConfigError& e) {
    throw ConfigError(e.detail() + where);
  } catch (const SystemError& e) {
    throw SystemError(e.detail() + where);
  }
}

}  // namespace

#ifndef COURSE_HAVE_NCCL
namespace {

// Why this build has no nccl backend, and what to do about it.
[[noreturn]] void throw_no_nccl() {
#if defined(COURSE_HAVE_CUDA) && !defined(COURSE_HAVE_NCCL)
  throw ConfigError(
      "this build has CUDA but no NCCL, so no nccl backend: install NCCL (libnccl-dev, "
      "nccl.h and libnccl.so beside the CUDA toolkit), then reconfigure (make clean, or "
      "delete the build directory); or run on --backend " +
      backend_choices_str() + " with --device cpu");
#else
  throw ConfigError(
      "this build has no CUDA, so no nccl backend: install the CUDA toolkit (nvcc in "
      "/usr/local/cuda/bin) and NCCL, then reconfigure (make clean, or delete the build "
      "directory; -DCOURSE_ENABLE_CUDA=OFF turns CUDA off); or run on --backend " +
      backend_choices_str() + " with --device cpu");
#endif
}

}  // namespace
#endif

void check_backend_device(const std::string& backend, const std::string& device) {
  if (device != "cpu" && device != "cuda") {
    throw ConfigError("unknown device '" + device + "': pass --device cpu or --device cuda");
  }
  if (backend == "nccl") {
#ifndef COURSE_HAVE_NCCL
    throw_no_nccl();
#endif
    if (device != "cuda") {
      throw ConfigError(
          "--backend nccl is for tensors on the GPU, and --device cpu keeps them on the host "
          "(every gradient would cross to the GPU and back): pass --device cuda, or keep "
          "--device cpu on --backend tcp or gloo");
    }
    return;
  }
  if (device == "cuda") {
    throw ConfigError("--backend " + backend +
                      " moves host memory, and --device cuda puts the tensors on the GPU "
                      "(they are not staged through the host): pass --backend nccl with "
                      "--device cuda, or --device cpu with --backend " +
                      backend);
  }
}

std::unique_ptr<ProcessGroup> make_process_group(const std::string& backend, StoreClient& store,
                                                 int rank, int world, const GroupRecipe& recipe) {
  if (backend == "tcp") {
    if (!recipe.connect_mesh || !recipe.install) {
      throw ConfigError(
          "make_process_group(tcp): the recipe needs connect_mesh (lesson 01) "
          "and install (the lesson's algorithms)");
    }
    parse_transport(recipe.transport);  // a bad name fails before any connection is made
    TcpAlgorithms algorithms;
    recipe.install(algorithms);
    Mesh mesh;
    try {
      mesh = recipe.connect_mesh(store, rank, world, recipe.token, recipe.host,
                                 "mesh/" + recipe.name, recipe.timeout);
    } catch (const Error&) {
      if (recipe.names.is_world()) throw;
      rethrow_with_world_ranks(recipe.names);
    }
    const Transport transport = parse_transport(recipe.transport);
    std::vector<ByteStreamPtr> streams =
        connect_streams(std::move(mesh), store, transport, recipe.connect_shm,
                        "transport/" + recipe.name, recipe.timeout, recipe.names);
    return std::make_unique<TcpProcessGroup>(
        rank, world, std::move(streams), std::move(algorithms), recipe.timeout,
        recipe.monitor ? CollectiveMonitor::for_group(store, "tcp/" + recipe.name, rank, world)
                       : nullptr,
        recipe.names);
  }
  if (backend == "gloo") {
#ifdef COURSE_HAVE_GLOO
    GlooOptions options;
    options.host = recipe.host;
    options.prefix = "gloo/" + recipe.name;
    options.timeout = recipe.timeout;
    options.names = recipe.names;
    if (recipe.monitor) {
      options.monitor = CollectiveMonitor::for_group(store, "gloo/" + recipe.name, rank, world);
    }
    return std::make_unique<GlooProcessGroup>(store, rank, world, options);
#else
    throw ConfigError(
        "this build has no Gloo: install libgloo-dev (make setup), then "
        "reconfigure (make clean, or delete the build directory)");
#endif
  }
  if (backend == "nccl") {
#ifdef COURSE_HAVE_NCCL
    NcclOptions options;
    options.prefix = "nccl/" + recipe.name;
    options.device = recipe.device;
    options.timeout = recipe.timeout;
    options.names = recipe.names;
    return std::make_unique<NcclProcessGroup>(store, rank, world, options);
#else
    throw_no_nccl();
#endif
  }
  throw ConfigError("unknown backend '" + backend + "': this build has " + backend_choices_str());
}

GroupMaker group_maker(const std::string& backend, GroupRecipe recipe) {
  const std::vector<std::string> host_backends = available_backends();
  if (backend == "nccl") {
    check_backend_device(backend, "cuda");  // names what a build without NCCL lacks
  } else if (std::ranges::find(host_backends, backend) == host_backends.end()) {
    throw ConfigError("unknown backend '" + backend + "': this build has " + backend_choices_str());
  }
  recipe.monitor = false;
  return [backend, recipe](StoreClient& store, int rank, int size, const std::string& name,
                           const RankNames& names) {
    GroupRecipe group = recipe;
    group.name = recipe.name + "/" + name;
    group.names = names;
    return make_process_group(backend, store, rank, size, group);
  };
}

}  // namespace course
