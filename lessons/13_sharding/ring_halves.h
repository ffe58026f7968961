// ring_halves.h: lesson 13: the ring all-reduce's two halves as collectives of their own.
//
// Lesson 05's all_reduce_ring is a reduce-scatter followed by an all-gather. Sharded
// training needs each half alone: ZeRO-2 and FSDP reduce-scatter the gradients (each rank
// keeps the mean of its own shard), and ZeRO-1, ZeRO-2 and FSDP all-gather the parameters
// (every rank gets every shard). Each half moves (N-1)/N of the buffer per rank, half of
// the all-reduce's 2(N-1)/N: nccl-tests' busbw factor for both (lesson 05's bench table).
//
// THE CONTRACT is the process group's (process_group.h), k elements per rank:
//   reduce_scatter_ring: input N*k -> output k; rank r gets the reduction of slice r of
//                        every rank's input (slice r = elements [r*k, r*k + k))
//   all_gather_ring:     input k -> output N*k; slice r of the output is rank r's input
// Both are correct in place: output a slice of input (reduce-scatter), input this rank's
// slice of output (all-gather).
//
// THE RING, N = 4, segments = the N slices. Lesson 05's reduce-scatter leaves rank r with
// segment r+1; here each rank must end with its own slice, so every index moves back by
// one. Reduce-scatter, step s = 0 .. N-2: rank r sends its partial sum of slice
// (r - s - 1) mod N and receives the left neighbour's partial sum of slice (r - s - 2),
// to which it adds its own input; the last step's slice is r itself:
//
//            step 0          step 1          step 2         then holds, fully reduced
//   rank 0   send 3 recv 2   send 2 recv 1   send 1 recv 0  slice 0
//   rank 1   send 0 recv 3   send 3 recv 2   send 2 recv 1  slice 1
//   rank 2   send 1 recv 0   send 0 recv 3   send 3 recv 2  slice 2
//   rank 3   send 2 recv 1   send 1 recv 0   send 0 recv 3  slice 3
//
// All-gather, step s = 0 .. N-2: rank r sends slice (r - s) mod N (its own at step 0,
// then what it received at step s-1) and receives slice (r - s - 1) straight into place.
//
// Chunks and threads as lesson 05's ring (plan_ring, run_ring, chunk_scratch in
// ring_helpers.h): each slice moves in chunks of at most chunk_elements, forwarded as
// soon as it is reduced or received.
//
// Where the partial sums live: the input is const, and a partial sum must stay alive
// until its chunk has been sent, so step s < N-2 writes its sums into a slot of its own
// (N-2 slices of scratch, kept per thread between calls; none for 2 ranks) and the last
// step writes into output. Lesson 05 reduced in place in its one buffer instead.
//
// REQUIRES: the same sizes and op on every rank (a different size is a ProtocolError
// naming both, from the ring's header); output.size() * N == input.size() (reduce-scatter)
// or input.size() * N == output.size() (all-gather), else ConfigError. k = 0 is fine.
// AVG is SUM, then scaled by 1/N by the slice's owner.
#pragma once

#include <cstddef>
#include <span>

#include "all_reduce_ring.h"
#include "process_group.h"
#include "tcp_comm.h"

namespace course {

/// Rank r's `output` becomes slice r of the reduction of every rank's `input`.
void reduce_scatter_ring(TcpComm& comm, std::span<const float> input, std::span<float> output,
                         ReduceOp op, size_t chunk_elements = kRingChunkElements,
                         size_t sender_thread_bytes = kRingSenderThreadBytes);

/// Every rank's `output` becomes every rank's `input`, rank r's in slice r.
void all_gather_ring(TcpComm& comm, std::span<const float> input, std::span<float> output,
                     size_t chunk_elements = kRingChunkElements,
                     size_t sender_thread_bytes = kRingSenderThreadBytes);

}  // namespace course
