// full_mesh.h: lesson 01, part 2: connecting every rank to every other rank.
//
// Each rank opens a listening socket and publishes its address in the store under
// "<name>/addr/<rank>". Then it must end up with one connected socket per peer. Who
// dials whom, and in which order, decides whether this finishes or deadlocks:
//
//     rank r dials every rank j < r        (they are already listening: they published
//                                           their address only after listen())
//     rank r accepts from every rank j > r (in whatever order they arrive; the hello
//                                           frame of handshake.h says who is calling)
//
// A dial completes in the peer's kernel backlog before the peer calls accept(), so no
// rank waits on a rank that waits on it. Strangers (a wrong job token, garbage bytes)
// are refused by hello_accept and the rank keeps accepting.
#pragma once

#include <string>
#include <utility>

#include "mesh.h"
#include "store.h"

namespace course {

/// Splits a store entry "host:port" into host and port; the host may itself contain colons
/// (IPv6), the port never does. ProtocolError when there is no colon.
std::pair<std::string, int> split_address(const std::string& address);

/// The start of connect_full_mesh: checks 0 <= rank < world (ConfigError otherwise) and
/// returns this rank's Mesh with `world` peers, none connected yet.
Mesh empty_mesh(int rank, int world);

/// Step 1 of connect_full_mesh: listens on a free port of every interface, then publishes
/// "advertise_host:port" under "<name>/addr/<rank>". In that order: whoever reads the
/// address can dial it at once, and the dial waits in the kernel's backlog until accepted.
Listener listen_and_publish(StoreClient& store, const std::string& name, int rank,
                            const std::string& advertise_host);

/// Connects this rank to every other rank of the world, rendezvousing through `store`.
///   rank, world:   this rank and the world size (0 <= rank < world)
///   token:         the job token (handshake.h); connections without it are refused
///   advertise_host: the address other ranks dial to reach this rank ("127.0.0.1" on
///                  one machine, this host's name or IP across machines)
///   name:          the store key prefix, so one job can build several meshes
/// Returns a Mesh whose peers[j] is connected to rank j. world == 1 returns no sockets.
/// Throws TimeoutError when a peer does not show up in time, ProtocolError when a
/// connection claims a rank it cannot be (out of range, duplicate, or lower than ours).
Mesh connect_full_mesh(StoreClient& store, int rank, int world, const std::string& token,
                       const std::string& advertise_host = "127.0.0.1",
                       const std::string& name = "mesh", Millis timeout = default_timeout());

}  // namespace course
