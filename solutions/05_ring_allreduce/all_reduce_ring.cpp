// all_reduce_ring.cpp: lesson 05: the ring all-reduce, chunked and pipelined (see
// all_reduce_ring.h, and the README for the cost model).
//
// What this is not: the transport. DuplexLink (common/comm/duplex_link.h) moves the bytes:
// post_send() queues a span for the right neighbour and returns, recv() blocks until a
// span from the left neighbour has arrived while it keeps sending what is queued. This
// file decides which bytes go where, and when.
#include "all_reduce_ring.h"

#include <algorithm>

#include "reduce_kernels.h"
#include "ring_helpers.h"

namespace course {

size_t ring_segment_offset(size_t count, int world, int segment) {
  // BEGIN SOLUTION: the sizes of the segments before it (ring_segment_count), added up in O(1)
  const size_t base = count / world;
  const size_t remainder = count % world;
  const size_t i = static_cast<size_t>(segment);
  return i * base + std::min(i, remainder);
  // END SOLUTION
}

size_t ring_segment_count(size_t count, int world, int segment) {
  // BEGIN SOLUTION: count / world, plus one for the first count % world segments
  const size_t remainder = count % world;
  return count / world + (static_cast<size_t>(segment) < remainder ? 1 : 0);
  // END SOLUTION
}

// The ring, step by step, and the pipeline: all_reduce_ring.h.
void all_reduce_ring(TcpComm& comm, std::span<float> data, ReduceOp op, size_t chunk_elements,
                     size_t sender_thread_bytes) {
  const Ring ring = plan_ring(comm, data, chunk_elements, sender_thread_bytes);
  if (ring.world == 1) return;  // the reduction of one buffer is itself (AVG: divided by 1)
  run_ring(comm, ring, [&](DuplexLink& link) {
    // The headers have crossed; from here on every byte is payload.
    // BEGIN SOLUTION: reduce-scatter, then all-gather, forwarding each chunk once it is ready
    const int world = ring.world;
    const int rank = ring.rank;
    const size_t count = ring.count;
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
    // END SOLUTION
  });
}

}  // namespace course
