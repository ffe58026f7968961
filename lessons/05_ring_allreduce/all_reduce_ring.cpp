// all_reduce_ring.cpp: lesson 05: the ring all-reduce, chunked and pipelined (see
// all_reduce_ring.h, and the README for the cost model).
//
// What this is not: the transport. DuplexLink (common/comm/duplex_link.h) moves the bytes:
// post_send() queues a span for the right neighbour and returns, recv() blocks until a
// span from the left neighbour has arrived while it keeps sending what is queued. This
// file decides which bytes go where, and when.
#include "all_reduce_ring.h"

#include <algorithm>

#include "duplex_link.h"
#include "error.h"
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

    // TODO(lesson05): reduce-scatter, then all-gather, forwarding each chunk once it is ready
    COURSE_TODO();
  });
}

}  // namespace course
