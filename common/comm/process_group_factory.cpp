// process_group_factory.cpp: see process_group_factory.h.
#include "process_group_factory.h"

#include "error.h"
#ifdef COURSE_HAVE_GLOO
#include "process_group_gloo.h"
#endif

namespace course {

std::vector<std::string> available_backends() {
#ifdef COURSE_HAVE_GLOO
  return {"tcp", "gloo"};
#else
  return {"tcp"};
#endif
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
    Mesh mesh = recipe.connect_mesh(store, rank, world, recipe.token, recipe.host,
                                    "mesh/" + recipe.name, recipe.timeout);
    const Transport transport = parse_transport(recipe.transport);
    std::vector<ByteStreamPtr> streams =
        connect_streams(std::move(mesh), store, transport, recipe.connect_shm,
                        "transport/" + recipe.name, recipe.timeout);
    return std::make_unique<TcpProcessGroup>(
        rank, world, std::move(streams), std::move(algorithms), recipe.timeout,
        recipe.monitor ? CollectiveMonitor::for_group(store, "tcp/" + recipe.name, rank, world)
                       : nullptr);
  }
  if (backend == "gloo") {
#ifdef COURSE_HAVE_GLOO
    GlooOptions options;
    options.host = recipe.host;
    options.prefix = "gloo/" + recipe.name;
    options.timeout = recipe.timeout;
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
  std::string known;
  for (const std::string& b : available_backends()) known += (known.empty() ? "" : ", ") + b;
  throw ConfigError("unknown backend '" + backend + "': this build has " + known);
}

}  // namespace course
