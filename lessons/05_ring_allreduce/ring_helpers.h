// ring_helpers.h: lesson 05, given: the helpers of all_reduce_ring (all_reduce_ring.cpp):
// the ring's set-up (plan_ring, run_ring), the check of the neighbour's header, the check
// of the segment functions, and the scratch buffer for incoming chunks.
#pragma once

#include <cstddef>
#include <functional>
#include <span>

#include "duplex_link.h"
#include "message.h"
#include "tcp_comm.h"

namespace course {

/// The ring as all_reduce_ring sees it, before the first byte moves.
struct Ring {
  int world = 1;
  int rank = 0;
  int right = 0;      // (rank + 1) % world: where every send goes
  int left = 0;       // (rank + world - 1) % world: where every receive comes from
  size_t count = 0;   // elements in the buffer, the same on every rank
  DuplexMode mode{};  // one_thread below sender_thread_bytes, sender_thread from there
};

/// The checks and choices before the ring starts: chunk_elements at least 1 (ConfigError
/// otherwise), the segment functions tile the buffer (check_segments), the neighbours, and
/// the link's mode. Small buffers use one thread, with no hand-off; large ones a second
/// thread that sends while this one receives and reduces (duplex_link.h; the benchmark
/// shows the crossover).
Ring plan_ring(const TcpComm& comm, std::span<const float> data, size_t chunk_elements,
               size_t sender_thread_bytes);

/// Runs `body` on a DuplexLink that sends to ring.right and receives from ring.left, after
/// the headers have crossed: this rank's goes right, the left neighbour's is checked
/// (check_ring_header). The header's buffer outlives the link's final flush.
void run_ring(TcpComm& comm, const Ring& ring, const std::function<void(DuplexLink&)>& body);

/// The first 16 bytes each way: lesson 02's message header with the ring's tag and the
/// element count. Three ways it can be wrong, each with its own cause:
///   not a header at all   the stream is out of step: in an earlier call a send and the
///                         matching receive disagreed on a length, and these are payload bytes
///   another tag           the left neighbour is in another collective
///   another count         the left neighbour all-reduces a buffer of another size
/// Each is caught here, before a single payload byte is misread.
void check_ring_header(const MessageHeader& theirs, int left, int rank, size_t count);

/// Checks that ring_segment_offset and ring_segment_count tile [0, count) in order: a
/// mistake there shows up here as an error naming the segment, instead of as wrong sums
/// or a ring that waits for bytes that never come.
void check_segments(size_t count, int world);

/// A scratch buffer for one incoming chunk, kept per thread between calls: allocating it
/// per call would cost page faults on every all-reduce of a training loop.
std::span<float> chunk_scratch(size_t elements);

}  // namespace course
