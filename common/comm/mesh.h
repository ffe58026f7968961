// mesh.h: a full mesh of connections, one socket per peer rank.
//
// Lesson 01 builds it (connect_full_mesh); lessons 02-05 move bytes over it. peers[j] is
// this rank's connection to rank j; peers[rank] stays empty (a rank never talks to itself
// over TCP).
//
// Thread safety: as Socket: one sender and one receiver per peer socket at a time.
#pragma once

#include <string>
#include <vector>

#include "error.h"
#include "socket.h"

namespace course {

/// One connected socket per peer rank (see the top of this file).
struct Mesh {
  int rank = 0;               ///< This rank.
  int world = 1;              ///< The number of ranks.
  std::vector<Socket> peers;  ///< peers[j]: the connection to rank j; peers[rank] stays empty.

  /// The socket to `peer`. Throws ConfigError when peer is out of range or this rank.
  Socket& to(int peer) {
    if (peer < 0 || peer >= world || peer == rank) {
      throw ConfigError("no connection to rank " + std::to_string(peer) + " in a world of " +
                        std::to_string(world) + " (this is rank " + std::to_string(rank) +
                        "): pass a peer in [0, world) other than yourself");
    }
    return peers[peer];
  }
};

}  // namespace course
