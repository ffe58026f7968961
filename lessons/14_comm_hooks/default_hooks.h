// default_hooks.h: lesson 14: torch's default hooks (default_hooks.py): the plain
// all-reduce and the 16-bit compression of a bucket, with the half all-reduce they travel
// by. The overview of the lesson (the seam, the threads) is comm_hooks.h.
//
//   SerialExecutor runner("comm hooks");                       // the hooks' own thread
//   ddp.register_comm_hook(compress_hook(*group, HalfKind::fp16, runner));
//
// fp16 / bf16 (torch's fp16_compress_hook, bf16_compress_hook)
//   buffer /= N, cast to 16 bits, SUM all-reduce in 16 bits, cast back into the buffer.
//   Dividing first, as torch does, keeps the sum within the type's range for any N when
//   the gradients are; a gradient beyond 65504 (fp16) becomes inf, as in torch. bf16 has
//   float32's range and 8 bits of mantissa (fp16: 11).
//
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>

#include "half_float.h"
#include "process_group.h"
#include "reducer.h"
#include "serial_executor.h"
#include "tensor.h"

namespace course {

// ---- Given (default_hooks_given.cpp) -------------------------------------------------

/// Values of `kind` per chunk of all_reduce_half (2 MiB of halves): small enough that the
/// wire carries one chunk while the caller converts and sums the next, large enough that
/// a message's latency is noise beside its bytes.
inline constexpr size_t kHalfChunkValues = size_t{1} << 20;

/// The point-to-point tag of all_reduce_half's messages (a user tag: lesson 02's tags.h).
inline constexpr int kHalfTag = 14;

/// all_reduce_half's two questions to its caller, chunk by chunk (`first`: the index of the
/// chunk's first value): pack fills `halves` with values [first, first + halves.size()) in
/// 16 bits; unpack gets those values' sums over ranks, to keep.
using PackHalves = std::function<void(size_t first, std::span<uint16_t> halves)>;
/// See PackHalves.
using UnpackHalves = std::function<void(size_t first, std::span<const uint16_t> sums)>;

/// `count` values of `kind` per rank, summed over ranks, streamed in chunks of
/// kHalfChunkValues: pack is called for chunks 0, 1, ... as they are sent, then unpack for
/// each chunk, in order, as its sums arrive. Each chunk is a reduce-scatter and an
/// all-gather in the group's point-to-point messages (isend/irecv, tag kHalfTag: every
/// backend has them): its values, padded with zeros to a multiple of 2N, are packed two to
/// a float (bits, not values) and slice j is sent to rank j; each rank sums its slice in
/// float32 in rank order and rounds it to `kind` once, then sends it to every rank: 2(N-1)/N
/// * 2 bytes per value on the wire, half of a float32 all-reduce. Every chunk's messages
/// are posted as soon as it is packed, so on the tcp backend each connection's queue keeps
/// its wire busy while this thread packs, sums and unpacks (one collective per chunk would
/// leave the wire idle between chunks while the ranks meet). (NCCL and Gloo sum half in
/// their own kernels instead; NCCL rounds after each hop of its ring.) Collective: every
/// rank, the same count, and no other point-to-point message between the ranks meanwhile.
/// Keeps its buffers per thread, grown to the largest count seen.
void all_reduce_half(ProcessGroup& group, size_t count, HalfKind kind, const PackHalves& pack,
                     const UnpackHalves& unpack);
/// The same on values already in 16 bits: every rank's `data` becomes the sum over ranks.
void all_reduce_half(ProcessGroup& group, std::span<uint16_t> data, HalfKind kind);

/// torch's allreduce_hook: divide by the world size, SUM all-reduce (async, on the group's
/// own thread): what the Reducer does without a hook.
CommHook allreduce_hook(ProcessGroup& group);

/// torch's fp16_compress_hook / bf16_compress_hook: compress_and_all_reduce(bucket.buffer)
/// on `runner`'s thread.
CommHook compress_hook(ProcessGroup& group, HalfKind kind, SerialExecutor& runner);

// ---- The exercise (default_hooks.cpp) ------------------------------------------------

/// fp16/bf16 compression of one bucket (see the top of this file), on the calling thread.
/// REQUIRES: collective; `buffer` contiguous float32 on the CPU.
/// EFFECT: buffer holds the mean over ranks, as `kind` rounds it: all_reduce_half streams
///   the bucket, each chunk packed as its values / N cast to `kind` (to_halves) and its
///   sums unpacked into the buffer (from_halves).
void compress_and_all_reduce(ProcessGroup& group, const Tensor& buffer, HalfKind kind);

}  // namespace course
