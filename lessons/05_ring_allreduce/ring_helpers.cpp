// ring_helpers.cpp: lesson 05, given: the helpers of all_reduce_ring (see ring_helpers.h).
#include "ring_helpers.h"

#include <algorithm>
#include <string>
#include <vector>

#include "all_reduce_ring.h"
#include "error.h"
#include "tags.h"

namespace course {

Ring plan_ring(const TcpComm& comm, std::span<const float> data, size_t chunk_elements,
               size_t sender_thread_bytes) {
  if (chunk_elements == 0) {
    throw ConfigError("all_reduce_ring: chunk_elements must be at least 1");
  }
  Ring ring;
  ring.world = comm.size();
  ring.rank = comm.rank();
  ring.right = (ring.rank + 1) % ring.world;
  ring.left = (ring.rank + ring.world - 1) % ring.world;
  ring.count = data.size();
  ring.mode =
      data.size_bytes() >= sender_thread_bytes ? DuplexMode::sender_thread : DuplexMode::one_thread;
  check_segments(ring.count, ring.world);
  return ring;
}

void run_ring(TcpComm& comm, const Ring& ring, const std::function<void(DuplexLink&)>& body) {
  // Declared out here: a posted buffer must outlive the link's final flush.
  const MessageHeader mine{kMessageMagic, tags::kRingAllReduce, ring.count};
  run_duplex(comm, ring.right, ring.left, "all_reduce_ring", ring.mode, [&](DuplexLink& link) {
    MessageHeader theirs;
    link.post_send(&mine, sizeof(mine));
    link.recv(&theirs, sizeof(theirs));
    check_ring_header(theirs, ring.left, ring.rank, ring.count);
    body(link);
  });
}

void check_ring_header(const MessageHeader& theirs, int left, int rank, size_t count) {
  const std::string route = "rank " + std::to_string(left) + " -> rank " + std::to_string(rank);
  if (theirs.magic != kMessageMagic) {
    throw ProtocolError("all_reduce_ring " + route +
                        ": the stream is out of step: the 16 bytes where the ring's header "
                        "should be are not a message header (magic " +
                        std::to_string(theirs.magic) +
                        "), so an earlier send and receive between these ranks disagreed on a "
                        "length; check the segment and chunk lengths each step sends and "
                        "receives (both sides must use the same ones)");
  }
  if (theirs.tag != tags::kRingAllReduce) {
    throw ProtocolError("all_reduce_ring " + route + ": expected the ring's header (" +
                        tags::tag_name(tags::kRingAllReduce) + ") but got " +
                        tags::tag_name(theirs.tag) + ": rank " + std::to_string(left) +
                        " is in another collective; call "
                        "collectives in the same order on every rank");
  }
  if (theirs.count != count) {
    throw ProtocolError("all_reduce_ring " + route + ": rank " + std::to_string(left) +
                        " all-reduces " + std::to_string(theirs.count) + " elements, rank " +
                        std::to_string(rank) + " " + std::to_string(count) +
                        "; every rank must pass a buffer of the same size");
  }
}

void check_segments(size_t count, int world) {
  size_t next = 0;
  for (int s = 0; s < world; ++s) {
    const size_t offset = ring_segment_offset(count, world, s);
    const size_t length = ring_segment_count(count, world, s);
    if (offset != next || length > count - std::min(count, offset)) {
      throw ConfigError("ring segments of " + std::to_string(count) + " elements on " +
                        std::to_string(world) + " ranks: segment " + std::to_string(s) + " is [" +
                        std::to_string(offset) + ", " + std::to_string(offset + length) +
                        ") but should start at " + std::to_string(next) + " and end by " +
                        std::to_string(count) +
                        "; check ring_segment_offset and ring_segment_count");
    }
    next = offset + length;
  }
  if (next != count) {
    throw ConfigError("ring segments of " + std::to_string(count) + " elements on " +
                      std::to_string(world) + " ranks end at " + std::to_string(next) +
                      " instead of " + std::to_string(count) +
                      "; check ring_segment_offset and ring_segment_count");
  }
}

std::span<float> chunk_scratch(size_t elements) {
  thread_local std::vector<float> scratch;
  if (scratch.size() < elements) scratch.resize(elements);
  return {scratch.data(), elements};
}

}  // namespace course
