// full_mesh_given.cpp: lesson 01, given: split_address, empty_mesh and listen_and_publish.
// The mesh itself is the exercise (full_mesh.cpp).
#include <string>
#include <utility>

#include "error.h"
#include "full_mesh.h"

namespace course {

std::pair<std::string, int> split_address(const std::string& address) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos) {
    throw ProtocolError("bad address '" + address + "' in the store: expected host:port");
  }
  return {address.substr(0, colon), std::stoi(address.substr(colon + 1))};
}

Mesh empty_mesh(int rank, int world) {
  if (world < 1 || rank < 0 || rank >= world) {
    throw ConfigError("connect_full_mesh: rank " + std::to_string(rank) +
                      " is outside a world of " + std::to_string(world));
  }
  Mesh mesh;
  mesh.rank = rank;
  mesh.world = world;
  mesh.peers.resize(world);
  return mesh;
}

Listener listen_and_publish(StoreClient& store, const std::string& name, int rank,
                            const std::string& advertise_host) {
  Listener listener("0.0.0.0", 0);
  store.set(name + "/addr/" + std::to_string(rank),
            advertise_host + ":" + std::to_string(listener.port()));
  return listener;
}

}  // namespace course
