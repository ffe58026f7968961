// all_reduce_ring.cpp: lesson 05's ring, sabotaged the way learners' rings fail: every
// post_send of the reduce-scatter is flushed at once, so a rank sends a whole segment
// before it receives anything. Correct while a segment fits in the socket buffers; with
// larger segments every rank waits in send for a neighbour that is itself sending.
// tests/grader/test_grader.py copies this file over lessons/05_ring_allreduce/ in a
// learner's copy: the large-message cases must score 0, saying deadlock.
//
// What this is not: an example to follow.
#include "all_reduce_ring.h"

#include <algorithm>
#include <string>
#include <vector>

#include "duplex_link.h"
#include "error.h"
#include "message.h"
#include "reduce_kernels.h"
#include "reductions.h"
#include "tags.h"

namespace course {

size_t ring_segment_offset(size_t count, int world, int segment) {
  const size_t base = count / world;
  const size_t remainder = count % world;
  const size_t i = static_cast<size_t>(segment);
  return i * base + std::min(i, remainder);
}

size_t ring_segment_count(size_t count, int world, int segment) {
  const size_t remainder = count % world;
  return count / world + (static_cast<size_t>(segment) < remainder ? 1 : 0);
}

namespace {

// The first 16 bytes each way: lesson 02's message header with the ring's tag and the
// element count. Three ways it can be wrong, each with its own cause:
//   not a header at all   the stream is out of step: in an earlier call a send and the
//                         matching receive disagreed on a length, and these are payload bytes
//   another tag           the left neighbour is in another collective
//   another count         the left neighbour all-reduces a buffer of another size
// Each is caught here, before a single payload byte is misread.
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

// Checks that ring_segment_offset and ring_segment_count tile [0, count) in order: a
// mistake there shows up here as an error naming the segment, instead of as wrong sums
// or a ring that waits for bytes that never come.
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

// A scratch buffer for one incoming chunk, kept per thread between calls: allocating it
// per call would cost page faults on every all-reduce of a training loop.
[[maybe_unused]] std::span<float> chunk_scratch(size_t elements) {
  thread_local std::vector<float> scratch;
  if (scratch.size() < elements) scratch.resize(elements);
  return {scratch.data(), elements};
}

}  // namespace

// THE RING, N = 4. Each rank sends only to its right neighbour and receives only from its
// left one; the buffer is cut into N segments, seg(i) = [offset(i), offset(i+1)).
//
//          +--------+      +--------+      +--------+      +--------+
//     +--> | rank 0 | ---> | rank 1 | ---> | rank 2 | ---> | rank 3 | ---+
//     |    +--------+      +--------+      +--------+      +--------+    |
//     +------------------------------------------------------------------+
//
// Phase 1, reduce-scatter. Step s = 0 .. N-2: rank r sends seg((r - s) mod N) and
// receives seg((r - s - 1) mod N), which it reduces into its own copy. What it sends at
// step s+1 is exactly what it reduced at step s.
//
//            step 0          step 1          step 2         then holds, fully reduced
//   rank 0   send 0 recv 3   send 3 recv 2   send 2 recv 1  seg 1
//   rank 1   send 1 recv 0   send 0 recv 3   send 3 recv 2  seg 2
//   rank 2   send 2 recv 1   send 1 recv 0   send 0 recv 3  seg 3
//   rank 3   send 3 recv 2   send 2 recv 1   send 1 recv 0  seg 0
//
// Phase 2, all-gather. Step s = 0 .. N-2: rank r sends seg((r + 1 - s) mod N) and
// receives seg((r - s) mod N) straight into place. What it sends at step s+1 is what it
// received at step s.
//
//            step 0          step 1          step 2
//   rank 0   send 1 recv 0   send 0 recv 3   send 3 recv 2
//   rank 1   send 2 recv 1   send 1 recv 0   send 0 recv 3
//   rank 2   send 3 recv 2   send 2 recv 1   send 1 recv 0
//   rank 3   send 0 recv 3   send 3 recv 2   send 2 recv 1
//
// The pipeline. Segments move in chunks of at most C elements: chunk c of a segment of
// length L covers [c*C, min((c+1)*C, L)). A chunk is forwarded (posted for sending) the
// moment it has been reduced or received, so while rank r reduces chunk c, chunk c+1 is
// already arriving and chunk c-1 is already on its way to rank r+1. The last
// reduce-scatter step's chunks are the first all-gather step's, so they go out at once,
// while still in cache.
//
// The remainder: when N does not divide the count, the first count % N segments have one
// more element (ring_segment_offset); a segment may even be empty. Nothing below needs a
// special case: an empty segment is a loop that runs zero times.
void all_reduce_ring(TcpComm& comm, std::span<float> data, ReduceOp op, size_t chunk_elements,
                     size_t sender_thread_bytes) {
  if (chunk_elements == 0) {
    throw ConfigError("all_reduce_ring: chunk_elements must be at least 1");
  }
  const int world = comm.size();
  const int rank = comm.rank();
  check_segments(data.size(), world);
  if (world == 1) return;  // the reduction of one buffer is itself (AVG: divided by 1)
  const int right = (rank + 1) % world;
  const int left = (rank + world - 1) % world;
  const size_t count = data.size();
  // Declared out here: a posted buffer must outlive the link's final flush.
  const MessageHeader mine{kMessageMagic, tags::kRingAllReduce, count};

  // Small buffers: one thread, no hand-off. Large ones: a second thread sends while this
  // one receives and reduces (duplex_link.h; the benchmark shows the crossover).
  const DuplexMode mode =
      data.size_bytes() >= sender_thread_bytes ? DuplexMode::sender_thread : DuplexMode::one_thread;
  run_duplex(comm, right, left, "all_reduce_ring", mode, [&](DuplexLink& link) {
    MessageHeader theirs;
    link.post_send(&mine, sizeof(mine));
    link.recv(&theirs, sizeof(theirs));
    check_ring_header(theirs, left, rank, count);

    const auto seg = [&](int i) {
      const int s = ((i % world) + world) % world;
      return data.subspan(ring_segment_offset(count, world, s),
                          ring_segment_count(count, world, s));
    };
    const std::span<float> incoming =
        chunk_scratch(std::min(chunk_elements, ring_segment_count(count, world, 0)));

    // Phase 1, reduce-scatter. Step 0 sends our own seg(r) as it is.
    const std::span<float> first = seg(rank);
    link.post_send(first.data(), first.size_bytes());
    link.flush();  // THE MISTAKE: the whole segment must leave before we receive
    for (int step = 0; step < world - 1; ++step) {
      const std::span<float> target = seg(rank - step - 1);
      const bool last_step = step == world - 2;
      for (size_t begin = 0; begin < target.size(); begin += chunk_elements) {
        const std::span<float> chunk =
            target.subspan(begin, std::min(chunk_elements, target.size() - begin));
        link.recv(incoming.data(), chunk.size_bytes());
        reduce_into(chunk.data(), incoming.data(), chunk.size(), op);
        // After the last step this chunk is final: average it here, once, so every rank
        // receives the same averaged bytes.
        if (last_step && op == ReduceOp::AVG) scale(chunk.data(), chunk.size(), 1.0f / world);
        // Forward it: reduce-scatter step+1, or (after the last step) all-gather step 0.
        link.post_send(chunk.data(), chunk.size_bytes());
        link.flush();  // THE MISTAKE again
      }
    }

    // Phase 2, all-gather: receive reduced segments into place, forwarding all but the
    // last step's (their next stop would be the rank that reduced them).
    for (int step = 0; step < world - 1; ++step) {
      const std::span<float> target = seg(rank - step);
      const bool forward = step < world - 2;
      for (size_t begin = 0; begin < target.size(); begin += chunk_elements) {
        const std::span<float> chunk =
            target.subspan(begin, std::min(chunk_elements, target.size() - begin));
        link.recv(chunk.data(), chunk.size_bytes());
        if (forward) link.post_send(chunk.data(), chunk.size_bytes());
      }
    }
  });
}

void install_lesson05(TcpAlgorithms& algorithms) {
  install_lesson04(algorithms);
  algorithms.all_reduce = [](TcpComm& comm, std::span<float> data, ReduceOp op) {
    all_reduce_ring(comm, data, op);
  };
  algorithms.names["all_reduce"] = "ring (lesson 05)";
}

}  // namespace course
