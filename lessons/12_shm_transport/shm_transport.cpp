// shm_transport.cpp: see shm_transport.h.
#include "shm_transport.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <new>
#include <random>
#include <sstream>

#include "all_reduce_ring.h"
#include "child_group.h"
#include "driver_recipe.h"
#include "env.h"
#include "error.h"
#include "ring_allreduce.h"
#include "shm_segment.h"
#include "shm_stream.h"

namespace course {

ByteStreamPtr connect_shm(StoreClient& store, int rank, int peer, const std::string& name,
                          Millis timeout, const ShmTuning& tuning) {
  const int lo = std::min(rank, peer);
  const int hi = std::max(rank, peer);
  const std::string key = name + "/shm/" + std::to_string(lo) + "-" + std::to_string(hi);
  const std::string peer_name = "rank " + std::to_string(peer);
  if (rank == lo) {
    // The pid first (ChildGroup::reap removes a killed rank's segments by it), and a
    // random tag last, so a segment left by an earlier process with this pid (one killed
    // with its launcher) is never in the way.
    static std::atomic<int> serial{0};
    static const std::string tag = std::to_string(std::random_device{}() & 0xffffff);
    const std::string seg_name = "/" + shm_owner_prefix(::getpid()) + std::to_string(lo) + "-" +
                                 std::to_string(hi) + "." + std::to_string(serial.fetch_add(1)) +
                                 "." + tag;
    const size_t bytes = shm_pair_bytes(tuning.slot_bytes, tuning.slots);
    ShmSegment segment = ShmSegment::create(seg_name, bytes);
    auto* header = new (segment.data()) ShmPairHeader();
    header->slot_bytes = tuning.slot_bytes;
    header->slots = tuning.slots;
    header->pid[0] = ::getpid();
    header->magic = kShmMagic;
    store.set(key, seg_name + " " + std::to_string(bytes));
    store.get(key + "/mapped", timeout);  // hi has mapped it (and written its pid)
    segment.unlink();
    return std::make_unique<ShmStream>(std::move(segment), 0, peer_name, tuning.spin);
  }
  std::istringstream announced(store.get(key, timeout));
  std::string seg_name;
  size_t bytes = 0;
  if (!(announced >> seg_name >> bytes)) {
    throw ProtocolError("rank " + std::to_string(rank) + ": store key " + key +
                        " does not hold '<segment> <bytes>'");
  }
  ShmSegment segment = ShmSegment::open(seg_name, bytes);
  auto* header = static_cast<ShmPairHeader*>(segment.data());
  if (header->magic != kShmMagic) {
    throw ProtocolError("shared-memory segment " + seg_name + " from " + peer_name +
                        " has no ring header");
  }
  header->pid[1] = ::getpid();
  store.set(key + "/mapped", "1");
  return std::make_unique<ShmStream>(std::move(segment), 1, peer_name, tuning.spin);
}

namespace {

// LOCAL_WORLD_SIZE as the launcher (or torchrun) sets it; 1 when unset.
int local_ranks() {
  const std::string value = env_or("LOCAL_WORLD_SIZE", "1");
  try {
    return std::max(1, std::stoi(value));
  } catch (const std::exception&) {
    throw ConfigError("LOCAL_WORLD_SIZE=" + value + ": expected the number of ranks on this node");
  }
}

}  // namespace

ByteStreamPtr connect_shm_default(StoreClient& store, int rank, int peer, const std::string& name,
                                  Millis timeout) {
  const ShmTuning tuning = choose_shm_tuning(local_ranks(), available_cores());
  return connect_shm(store, rank, peer, name, timeout, tuning);
}

void install_tuned_ring(TcpAlgorithms& algorithms, const ShmTuning& tuning) {
  install_lesson05(algorithms);
  const size_t chunk = tuning.ring_chunk_elements;
  const size_t sender_bytes = tuning.ring_sender_thread_bytes;
  algorithms.all_reduce = [chunk, sender_bytes](TcpComm& comm, std::span<float> data, ReduceOp op) {
    all_reduce_ring(comm, data, op, chunk, sender_bytes);
  };
  algorithms.names["all_reduce"] = "ring (lesson 05), tuned for the machine (lesson 12)";
}

void install_lesson12(GroupRecipe& recipe) {
  const ShmTuning tuning = choose_shm_tuning(local_ranks(), available_cores());
  recipe.connect_shm = [tuning](StoreClient& store, int rank, int peer, const std::string& name,
                                Millis timeout) {
    return connect_shm(store, rank, peer, name, timeout, tuning);
  };
  recipe.install = [tuning](TcpAlgorithms& algorithms) { install_tuned_ring(algorithms, tuning); };
}

GroupRecipe shm_driver_recipe(DriverContext& ctx, const std::string& name,
                              const std::string& transport) {
  GroupRecipe recipe = driver_recipe(ctx, name);
  recipe.transport = transport;
  install_lesson12(recipe);
  return recipe;
}

}  // namespace course
