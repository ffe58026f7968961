// all_reduce_ring.h: lesson 05: the bandwidth-optimal ring all-reduce.
//
// Lesson 04's all_reduce_naive sends every rank's whole buffer to one rank and back: that
// rank moves 2(N-1) buffers while the others idle, so the time grows with N. The ring
// splits the buffer into N segments and lets every rank send and receive one segment at
// a time to its neighbours, all links busy at once:
//
//   phase 1, reduce-scatter (N-1 steps): pass segments to the right, reducing on arrival;
//            afterwards rank r holds segment (r + 1) mod N fully reduced.
//   phase 2, all-gather     (N-1 steps): pass the reduced segments to the right, storing
//            on arrival; afterwards every rank holds every reduced segment.
//
// Each rank sends (and receives) 2(N-1)/N of the buffer in total, whatever N is: the
// lower bound for any all-reduce (docs/cost_models.md). Each segment is cut further into
// chunks that are forwarded as soon as they are reduced, so sending, receiving and
// reducing overlap instead of taking turns (the README draws it).
//
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
// more element (ring_segment_offset); a segment may even be empty. Nothing needs a
// special case in all_reduce_ring.cpp: an empty segment is a loop that runs zero times.
//
// What this is not: a latency-optimal algorithm. The ring takes 2(N-1) steps, so for small
// buffers a tree or recursive doubling wins; the benchmark shows where.
//
// Run it: make lesson05 && ./lesson05 --np 4; ./lesson05 --bench --np 4;
// test it: make grade-lesson05 (tests/05_ring_allreduce/).
#pragma once

#include <cstddef>
#include <span>

#include "process_group_tcp.h"
#include "tags.h"
#include "tcp_comm.h"

namespace course {

namespace tags {
/// The tag of the ring's header (tags.h gives lesson 05 the tags -10 .. -19).
inline constexpr int kRingAllReduce = kFirstRingTag;
}  // namespace tags

/// Chunk size of the pipeline, in float32 elements (256 KiB): large enough that a system
/// call moves a lot of bytes, small enough that a received chunk is still in the CPU's
/// L2 cache when it is reduced and sent on.
inline constexpr size_t kRingChunkElements = 64 * 1024;

/// From this many bytes up, the ring sends on a second thread while the calling thread
/// receives and reduces (duplex_link.h, DuplexMode::sender_thread); below it, one thread
/// does everything, which saves a thread hand-off per chunk. Measured on the course's
/// 2-core reference machine: the second thread wins at 16 MiB on 2 ranks, loses up to
/// 4 MiB, and makes no difference on 4 ranks (whose processes already fill the cores).
inline constexpr size_t kRingSenderThreadBytes = 8u << 20;

/// Where segment `segment` (0 <= segment < world) of a buffer of `count` elements starts.
/// The buffer is split as evenly as possible, the remainder in front: the first
/// count % world segments have one element more than the others.
///   count 10, world 4: segments [0,3) [3,6) [6,8) [8,10) -> offsets 0, 3, 6, 8
///   count 2,  world 4: segments [0,1) [1,2) [2,2) [2,2)  (empty segments are fine)
/// REQUIRES: world >= 1, 0 <= segment <= world (segment == world gives count).
size_t ring_segment_offset(size_t count, int world, int segment);

/// How many elements segment `segment` has: count / world, plus one for the first
/// count % world segments. REQUIRES: world >= 1, 0 <= segment < world.
size_t ring_segment_count(size_t count, int world, int segment);

/// All-reduces `data` in place over every rank of `comm` with the ring: reduce-scatter,
/// then all-gather, each of N-1 steps, each segment moved in chunks of at most
/// `chunk_elements` elements, every chunk forwarded as soon as it has been reduced
/// (reduce-scatter) or received (all-gather).
///
/// REQUIRES: every rank calls it with the same data.size() and op (a different size is a
///           ProtocolError naming both sizes, found before any payload moves).
/// REQUIRES: chunk_elements >= 1 (ConfigError otherwise). Any count works: 0, fewer
///           elements than ranks, counts not divisible by the number of ranks.
/// Result: identical on every rank, bit for bit (each segment is reduced by one rank,
///         in one order, and copied to the others). AVG is SUM, then scaled by 1/N by the
///         segment's owner before the all-gather.
/// Blocks until this rank's part is done. Talks only to rank+1 (sends) and rank-1
/// (receives), holding their channels (tcp_comm.h) for the whole call. Buffers of at
/// least `sender_thread_bytes` send on the send channel's thread (tests pass 0 to try
/// that path on small buffers). Errors abort the comm (tcp_comm.h) and are rethrown.
void all_reduce_ring(TcpComm& comm, std::span<float> data, ReduceOp op,
                     size_t chunk_elements = kRingChunkElements,
                     size_t sender_thread_bytes = kRingSenderThreadBytes);

}  // namespace course
