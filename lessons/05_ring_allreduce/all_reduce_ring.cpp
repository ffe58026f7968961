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
  // TODO(lesson05): the sizes of the segments before it (ring_segment_count), added up in O(1)
  COURSE_TODO();
}

size_t ring_segment_count(size_t count, int world, int segment) {
  // TODO(lesson05): count / world, plus one for the first count % world segments
  COURSE_TODO();
}

// The ring, step by step, and the pipeline: all_reduce_ring.h.
void all_reduce_ring(TcpComm& comm, std::span<float> data, ReduceOp op, size_t chunk_elements,
                     size_t sender_thread_bytes) {
  const Ring ring = plan_ring(comm, data, chunk_elements, sender_thread_bytes);
  if (ring.world == 1) return;  // the reduction of one buffer is itself (AVG: divided by 1)
  run_ring(comm, ring, [&](DuplexLink& link) {
    // The headers have crossed; from here on every byte is payload.
    // TODO(lesson05): reduce-scatter, then all-gather, forwarding each chunk once it is ready
    COURSE_TODO();
  });
}

}  // namespace course
