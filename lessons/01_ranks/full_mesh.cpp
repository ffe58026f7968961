// full_mesh.cpp: lesson 01, part 2: the full mesh through the store (see full_mesh.h).
#include "full_mesh.h"

#include <chrono>
#include <string>

#include "handshake.h"

namespace course {

namespace {
// Splits "host:port"; the host may itself contain colons (IPv6), the port never does.
[[maybe_unused]] std::pair<std::string, int> split_address(const std::string& address) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos) {
    throw ProtocolError("bad address '" + address + "' in the store: expected host:port");
  }
  return {address.substr(0, colon), std::stoi(address.substr(colon + 1))};
}
}  // namespace

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
