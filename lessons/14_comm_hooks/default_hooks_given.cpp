// default_hooks_given.cpp: lesson 14, given: the half all-reduce and the hooks' wrappers
// (torch's default_hooks.py). The compression of a bucket is the exercise
// (default_hooks.cpp).
#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "default_hooks.h"
#include "error.h"
#include "tensor_ops.h"

namespace course {

namespace {

// The half all-reduce's buffers, kept per thread (the hooks' runner, a test's rank) and
// grown as needed: fresh vectors of a bucket's size would cost their page faults on every
// call, as much as the sums themselves.
struct HalfScratch {
  std::vector<float> out, in, mine, sum;
  std::vector<uint16_t> halves;  // one chunk, as pack fills it and unpack reads it
};

HalfScratch& half_scratch() {
  thread_local HalfScratch scratch;
  return scratch;
}

void grow(std::vector<float>& v, size_t n) {
  if (v.size() < n) v.resize(n);
}

}  // namespace

void all_reduce_half(ProcessGroup& group, size_t count, HalfKind kind, const PackHalves& pack,
                     const UnpackHalves& unpack) {
  const auto world = static_cast<size_t>(group.size());
  const auto me = static_cast<size_t>(group.rank());
  if (count == 0) return;
  const auto round_up = [&](size_t n) { return (n + 2 * world - 1) / (2 * world) * (2 * world); };
  // Chunks of `chunk` values (a multiple of 2N); the last one holds the rest, padded with
  // zeros to a multiple of 2N. In chunk c, rank j's slice is per(c) values (even, so a
  // slice is whole floats). Chunk c lives at c * chunk / 2 floats in `out` and `in`, its
  // summed slice at c * chunk / N / 2 in `mine`.
  const size_t chunk = round_up(std::min(count, kHalfChunkValues));
  const size_t chunks = (count + chunk - 1) / chunk;
  const auto values_in = [&](size_t c) { return std::min(chunk, count - c * chunk); };
  const auto per = [&](size_t c) { return round_up(values_in(c)) / world; };
  HalfScratch& s = half_scratch();
  grow(s.out, chunks * chunk / 2);
  grow(s.in, chunks * chunk / 2);
  grow(s.mine, chunks * chunk / world / 2);
  grow(s.sum, chunk / world);
  if (s.halves.size() < chunk) s.halves.resize(chunk);
  const auto out_of = [&](size_t c) {
    return std::span(s.out).subspan(c * chunk / 2, per(c) * world / 2);
  };
  const auto in_of = [&](size_t c) {
    return std::span(s.in).subspan(c * chunk / 2, per(c) * world / 2);
  };
  const auto mine_of = [&](size_t c) {
    return std::span(s.mine).subspan(c * chunk / world / 2, per(c) / 2);
  };
  const auto slice = [&](std::span<float> whole, size_t c, size_t j) {
    return whole.subspan(j * per(c) / 2, per(c) / 2);
  };
  const auto bytes = [](std::span<float> v) { return reinterpret_cast<unsigned char*>(v.data()); };
  const std::span<uint16_t> halves(s.halves);
  if (world == 1) {  // nothing to exchange: the sums are the values
    for (size_t c = 0; c < chunks; ++c) {
      pack(c * chunk, halves.first(values_in(c)));
      unpack(c * chunk, halves.first(values_in(c)));
    }
    return;
  }
  std::vector<WorkPtr> sends;  // every isend, waited for before the scratch is used again
  std::vector<std::vector<WorkPtr>> scattered(chunks), gathered(chunks);
  const auto exchange = [&](std::vector<WorkPtr>& received, size_t c,
                            const std::function<std::span<float>(size_t)>& to_send) {
    for (size_t j = 0; j < world; ++j) {
      if (j == me) continue;
      received.push_back(group.irecv(slice(in_of(c), c, j), static_cast<int>(j), kHalfTag));
      sends.push_back(group.isend(to_send(j), static_cast<int>(j), kHalfTag));
    }
  };
  // 1. Each chunk goes out as soon as it is packed, slice j to rank j (a reduce-scatter's
  //    traffic). A peer's sends queue on its connection, so the wire carries them back to
  //    back while this thread packs the next chunk and sums the first.
  for (size_t c = 0; c < chunks; ++c) {
    pack(c * chunk, halves.first(values_in(c)));
    std::memcpy(bytes(out_of(c)), halves.data(), values_in(c) * sizeof(uint16_t));
    std::memset(bytes(out_of(c)) + values_in(c) * 2, 0, (per(c) * world - values_in(c)) * 2);
    exchange(scattered[c], c, [&](size_t j) { return slice(out_of(c), c, j); });
  }
  // 2. As each chunk arrives: my slice summed over ranks in rank order in float32 (mine
  //    from `out`, theirs from `in`), rounded once, and sent to every rank (an
  //    all-gather's traffic: (N-1)/N of the data on the wire).
  for (size_t c = 0; c < chunks; ++c) {
    for (const WorkPtr& w : scattered[c]) w->wait();
    const size_t n = per(c);
    for (size_t j = 0; j < world; ++j) {
      const unsigned char* part = bytes(slice(j == me ? out_of(c) : in_of(c), c, j == me ? me : j));
      if (j == 0) {
        raw_halves_to_floats(part, n, s.sum.data(), kind);
      } else {
        add_raw_halves(part, n, s.sum.data(), kind);
      }
    }
    floats_to_raw_halves(s.sum.data(), n, 1.0f, bytes(mine_of(c)), kind);
    std::memcpy(slice(in_of(c), c, me).data(), mine_of(c).data(), n * 2);
    exchange(gathered[c], c, [&](size_t /*j*/) { return mine_of(c); });
  }
  // 3. Each chunk's sums to the caller as they arrive.
  for (size_t c = 0; c < chunks; ++c) {
    for (const WorkPtr& w : gathered[c]) w->wait();
    std::memcpy(halves.data(), in_of(c).data(), values_in(c) * sizeof(uint16_t));
    unpack(c * chunk, halves.first(values_in(c)));
  }
  for (const WorkPtr& w : sends) w->wait();
}

void all_reduce_half(ProcessGroup& group, std::span<uint16_t> data, HalfKind kind) {
  all_reduce_half(
      group, data.size(), kind,
      [&](size_t first, std::span<uint16_t> halves) {
        std::copy_n(data.begin() + static_cast<std::ptrdiff_t>(first), halves.size(),
                    halves.begin());
      },
      [&](size_t first, std::span<const uint16_t> sums) {
        std::copy(sums.begin(), sums.end(), data.begin() + static_cast<std::ptrdiff_t>(first));
      });
}

CommHook allreduce_hook(ProcessGroup& group) {
  return [&group](GradBucket& bucket) {
    scale_(bucket.buffer, 1.0f / static_cast<float>(group.size()));
    return group.all_reduce_async(bucket.buffer.device_span(), ReduceOp::SUM);
  };
}

CommHook compress_hook(ProcessGroup& group, HalfKind kind, SerialExecutor& runner) {
  return [&group, kind, &runner](GradBucket& bucket) {
    Tensor buffer = bucket.buffer;
    std::string what = half_name(kind);
    what += " compression of bucket ";
    what += std::to_string(bucket.index);
    return runner.submit([&group, buffer, kind] { compress_and_all_reduce(group, buffer, kind); },
                         std::move(what), /*run_on_wait=*/true);
  };
}

}  // namespace course
