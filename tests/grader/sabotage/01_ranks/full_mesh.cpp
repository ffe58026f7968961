// full_mesh.cpp: lesson 01's mesh, sabotaged (sabotage.h). The deadlock is the classic
// one of lessons/01_ranks/README.md: every rank accepts from everyone before dialing.
#include "full_mesh.h"

#include "handshake.h"
#include "sabotage.h"

namespace course {

Mesh connect_full_mesh(StoreClient& store, int rank, int world, const std::string& token,
                       const std::string& advertise_host, const std::string& name, Millis timeout) {
  sabotage::strike(true);
  Mesh mesh;
  mesh.rank = rank;
  mesh.world = world;
  mesh.peers.resize(world);
  Listener listener("0.0.0.0", 0);
  store.set(name + "/addr/" + std::to_string(rank),
            advertise_host + ":" + std::to_string(listener.port()));
  for (int peer = 0; peer < world; ++peer) {  // accept first: nobody ever dials
    if (peer == rank) continue;
    Socket sock = listener.accept(timeout);
    try {
      const Hello hello = hello_accept(sock, token, name);
      mesh.peers[hello.rank] = std::move(sock);
    } catch (const ProtocolError&) {
      --peer;  // a stranger: keep waiting for the real peer
    }
  }
  return mesh;
}

}  // namespace course
