// ring_helpers.h: lesson 05, given: the helpers of all_reduce_ring (all_reduce_ring.cpp):
// the check of the neighbour's header, the check of the segment functions, and the
// scratch buffer for incoming chunks.
#pragma once

#include <cstddef>
#include <span>

#include "message.h"

namespace course {

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
