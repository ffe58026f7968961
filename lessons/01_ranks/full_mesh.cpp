// full_mesh.cpp: lesson 01, part 2: the full mesh through the store (see full_mesh.h).
#include "full_mesh.h"

#include <chrono>
#include <string>

#include "error.h"
#include "handshake.h"

namespace course {

Mesh connect_full_mesh(StoreClient& store, int rank, int world, const std::string& token,
                       const std::string& advertise_host, const std::string& name, Millis timeout) {
  if (world < 1 || rank < 0 || rank >= world) {
    throw ConfigError("connect_full_mesh: rank " + std::to_string(rank) +
                      " is outside a world of " + std::to_string(world));
  }
  Mesh mesh;
  mesh.rank = rank;
  mesh.world = world;
  mesh.peers.resize(world);
  if (world == 1) return mesh;

  // Step 1: listen first, then publish, so whoever reads our address can dial it.
  Listener listener("0.0.0.0", 0);
  store.set(name + "/addr/" + std::to_string(rank),
            advertise_host + ":" + std::to_string(listener.port()));

  // TODO(lesson01): dial every lower rank, then accept every higher rank
  COURSE_TODO();
  return mesh;
}

}  // namespace course
