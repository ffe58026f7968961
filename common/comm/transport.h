// transport.h: what carries each peer's bytes: TCP sockets, or shared memory for ranks on
// the same machine (lesson 12).
//
//   tcp    every peer over lesson 01's full mesh of sockets (the default)
//   shm    every peer over shared memory; every rank must be on this host
//   auto   shm for the peers on this host, tcp for the others
//
// Which peers share a host: every rank publishes its host name in the store (key
// "<name>/host/<rank>") and reads the others'. LOCAL_RANK alone cannot say it: two jobs'
// ranks 0 on two machines both have LOCAL_RANK 0.
//
// common/ never includes lesson code, so shared memory is a seam: the caller hands over a
// ShmConnector (lesson 12's connect_shm), as GroupRecipe::connect_shm. The full mesh is
// always built first (it is the rendezvous, and the carrier for remote peers); the socket
// of a peer that moves to shared memory is closed once its shm stream is up.
//
// What this is not: the shared-memory channel itself (lessons/12_shm_transport).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "byte_stream.h"
#include "mesh.h"
#include "rank_names.h"
#include "store.h"

namespace course {

/// Which carrier connects the peers (see the top of this file).
enum class Transport { tcp, shm, automatic };

/// "tcp", "shm" or "auto" to a Transport; anything else throws ConfigError listing them.
Transport parse_transport(const std::string& name);
/// The name parse_transport reads.
const char* transport_name(Transport transport);

/// Connects this rank to `peer` over shared memory; both ranks call it with the same
/// `name` (it keys the store). Lesson 12's connect_shm has this signature.
using ShmConnector = std::function<ByteStreamPtr(StoreClient& store, int rank, int peer,
                                                 const std::string& name, Millis timeout)>;

/// local[j] is true when rank j runs on this host (local[rank] too). Every rank calls it
/// with the same `name`.
std::vector<bool> same_host_ranks(StoreClient& store, int rank, int world, const std::string& name,
                                  Millis timeout);

/// One SocketStream per peer (streams[rank] null): the mesh's sockets, paced on the
/// emulated link of COURSE_LINK when it is set (emulated_link.h).
std::vector<ByteStreamPtr> socket_streams(Mesh mesh);

/// One stream per peer (streams[rank] null): the mesh's sockets, with the peers that
/// `transport` puts on shared memory connected through `connect_shm`. Every rank calls it
/// with the same transport and name. Throws ConfigError for shm without a connector, or
/// shm with a peer on another host (naming both hosts). `names` names the ranks in those
/// errors and in the shm streams' names (a subgroup's: by world rank, rank_names.h).
std::vector<ByteStreamPtr> connect_streams(Mesh mesh, StoreClient& store, Transport transport,
                                           const ShmConnector& connect_shm, const std::string& name,
                                           Millis timeout, const RankNames& names = {});

}  // namespace course
