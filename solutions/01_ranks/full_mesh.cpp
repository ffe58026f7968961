// full_mesh.cpp: lesson 01, part 2: the full mesh through the store (see full_mesh.h).
#include "full_mesh.h"

#include <chrono>
#include <string>

#include "error.h"
#include "handshake.h"

namespace course {

Mesh connect_full_mesh(StoreClient& store, int rank, int world, const std::string& token,
                       const std::string& advertise_host, const std::string& name, Millis timeout) {
  Mesh mesh = empty_mesh(rank, world);
  if (world == 1) return mesh;
  // Step 1: listen first, then publish, so whoever reads our address can dial it.
  Listener listener = listen_and_publish(store, name, rank, advertise_host);

  // BEGIN SOLUTION: dial every lower rank, then accept every higher rank
  // Step 2: dial every lower rank. They listened before publishing, so each dial lands
  // in their backlog even if they are still dialing ranks below them.
  for (int peer = 0; peer < rank; ++peer) {
    const auto [host, port] =
        split_address(store.get(name + "/addr/" + std::to_string(peer), timeout));
    Socket sock = Socket::connect(host, port, timeout);
    hello_send(sock, Hello{token, rank, name}, timeout);
    sock.set_peer_name("rank " + std::to_string(peer));
    mesh.peers[peer] = std::move(sock);
  }

  // Step 3: accept every higher rank, in whatever order they arrive. The hello says who
  // is calling; strangers are refused (and logged) and we keep accepting.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int expected = world - 1 - rank;
  while (expected > 0) {
    const auto left =
        std::chrono::duration_cast<Millis>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      throw TimeoutError("connect_full_mesh: still waiting for " + std::to_string(expected) +
                         " higher rank(s) to dial in; are all " + std::to_string(world) +
                         " ranks running with the same MASTER_ADDR/MASTER_PORT?");
    }
    Socket sock = listener.accept(left);
    Hello hello;
    try {
      hello = hello_accept(sock, token, name);
    } catch (const ProtocolError&) {
      continue;  // a stranger: hello_accept has logged why
    }
    if (hello.rank <= rank || hello.rank >= world || mesh.peers[hello.rank].valid()) {
      throw ProtocolError("connect_full_mesh: a connection claims to be rank " +
                          std::to_string(hello.rank) + ", which should not dial rank " +
                          std::to_string(rank) + " (duplicate or out of range)");
    }
    sock.set_peer_name("rank " + std::to_string(hello.rank));
    mesh.peers[hello.rank] = std::move(sock);
    --expected;
  }
  // END SOLUTION
  return mesh;
}

}  // namespace course
