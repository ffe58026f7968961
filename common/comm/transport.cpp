// transport.cpp: see transport.h.
#include "transport.h"

#include "error.h"

namespace course {

Transport parse_transport(const std::string& name) {
  if (name == "tcp") return Transport::tcp;
  if (name == "shm") return Transport::shm;
  if (name == "auto") return Transport::automatic;
  throw ConfigError("unknown transport '" + name +
                    "': use tcp (sockets), shm (shared memory, every rank on this machine) "
                    "or auto (shared memory for the ranks on this machine, tcp otherwise)");
}

const char* transport_name(Transport transport) {
  switch (transport) {
    case Transport::tcp:
      return "tcp";
    case Transport::shm:
      return "shm";
    case Transport::automatic:
      return "auto";
  }
  return "?";
}

std::vector<bool> same_host_ranks(StoreClient& store, int rank, int world, const std::string& name,
                                  Millis timeout) {
  const std::string me = host_name();
  store.set(name + "/host/" + std::to_string(rank), me);
  std::vector<bool> local(world, false);
  for (int r = 0; r < world; ++r) {
    local[r] = r == rank || store.get(name + "/host/" + std::to_string(r), timeout) == me;
  }
  return local;
}

std::vector<ByteStreamPtr> socket_streams(Mesh mesh) {
  const LinkSpec link = link_from_env();  // COURSE_LINK: pace every socket (emulated_link.h)
  std::vector<ByteStreamPtr> streams(mesh.peers.size());
  for (int peer = 0; peer < static_cast<int>(mesh.peers.size()); ++peer) {
    if (peer != mesh.rank) {
      streams[peer] = std::make_unique<SocketStream>(std::move(mesh.peers[peer]), link);
    }
  }
  return streams;
}

std::vector<ByteStreamPtr> connect_streams(Mesh mesh, StoreClient& store, Transport transport,
                                           const ShmConnector& connect_shm, const std::string& name,
                                           Millis timeout, const RankNames& names) {
  const int rank = mesh.rank;
  const int world = mesh.world;
  std::vector<ByteStreamPtr> streams = socket_streams(std::move(mesh));
  if (transport == Transport::tcp || world == 1) return streams;
  const std::string where = names(rank) + ", transport " + transport_name(transport);
  if (!connect_shm) {
    throw ConfigError(where +
                      ": this program has no shared-memory transport (lesson 12 installs it: "
                      "install_lesson12); use --transport tcp");
  }
  const std::vector<bool> local = same_host_ranks(store, rank, world, name, timeout);
  if (transport == Transport::shm) {
    for (int peer = 0; peer < world; ++peer) {
      if (!local[peer]) {
        throw ConfigError(where + ": " + names(peer) + " runs on host '" +
                          store.get(name + "/host/" + std::to_string(peer), timeout) +
                          "', not on this one ('" + host_name() +
                          "'); shared memory joins ranks of one machine only: use --transport "
                          "auto (shm between local ranks, tcp between hosts) or tcp");
      }
    }
  }
  // Pairs in increasing order of the other rank on every rank: each pair's two calls
  // meet, and no two ranks wait for each other in opposite orders.
  for (int peer = 0; peer < world; ++peer) {
    if (peer == rank || !local[peer]) continue;
    const std::string peer_name = streams[peer]->peer_name();
    ByteStreamPtr shm = connect_shm(store, rank, peer, name, timeout);
    shm->set_peer_name(names.is_world() && !peer_name.empty() ? peer_name : names(peer));
    streams[peer] = std::move(shm);
  }
  return streams;
}

}  // namespace course
