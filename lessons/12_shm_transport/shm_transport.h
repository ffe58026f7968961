// shm_transport.h: lesson 12 in the tcp backend: shared memory between the ranks of one
// machine, for every collective of lessons 02-05.
//
//   GroupRecipe recipe = ...;                  // as in lesson 05's driver
//   recipe.transport = "auto";                 // or "shm"
//   install_lesson12(recipe);                  // connect_shm, and lesson 05's algorithms
//   auto pg = make_process_group("tcp", store, rank, world, recipe);
//
// connect_shm is the ShmConnector of common/comm/transport.h. For a pair of ranks lo < hi:
//   lo  creates the segment /course.<pid>.<lo>-<hi>.<n>.<random> (zeroed), writes the ring
//       header and its pid, publishes "<name> <bytes>" in the store, waits for hi's
//       "mapped" key and unlinks the name: from then on a crash leaves nothing in /dev/shm.
//       (Killed before that, lo leaves the name; the launcher and the test harness remove
//       /dev/shm/course.<pid>.* of every rank they reap: child_group.h.)
//   hi  reads the key, maps the segment, checks the magic, writes its pid, sets "mapped".
//
// What this is not: the channel (shm_channel.h) or the stream (shm_stream.h).
#pragma once

#include <string>

#include "byte_stream.h"
#include "driver.h"
#include "process_group_factory.h"
#include "shm_tuning.h"
#include "store.h"

namespace course {

/// Connects this rank to `peer` (same machine) over a fresh shared segment, through the
/// store (see above), with `tuning`'s slots and spin. Both ranks call it with the same name.
ByteStreamPtr connect_shm(StoreClient& store, int rank, int peer, const std::string& name,
                          Millis timeout, const ShmTuning& tuning);

/// connect_shm with the tuning for this machine (choose_shm_tuning(LOCAL_WORLD_SIZE, cores)).
ByteStreamPtr connect_shm_default(StoreClient& store, int rank, int peer, const std::string& name,
                                  Millis timeout);

/// Fills `algorithms` as install_lesson05 does, with the ring tuned by `tuning`
/// (chunk size and duplex mode, shm_tuning.h).
void install_tuned_ring(TcpAlgorithms& algorithms, const ShmTuning& tuning);

/// Puts lesson 12 into a recipe: connect_shm (connect_shm_default) and the tuned ring for
/// this machine. The recipe's transport chooses whether shared memory is used.
void install_lesson12(GroupRecipe& recipe);

/// A driver's recipe (driver_recipe.h) for the group `name` over `transport` ("tcp", "shm"
/// or "auto"), with lesson 12 installed: what ./lesson12 and its benchmark make groups from.
GroupRecipe shm_driver_recipe(DriverContext& ctx, const std::string& name,
                              const std::string& transport);

}  // namespace course
