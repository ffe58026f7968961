// ring_halves.cpp: lesson 13: the ring's reduce-scatter and all-gather on their own (see
// ring_halves.h for the schedule).
#include "ring_halves.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "collective_checks.h"
#include "reduce_kernels.h"
#include "ring_helpers.h"

namespace course {

namespace {

// Room for the partial sums of the middle steps, kept per thread between calls.
std::span<float> partial_sums(size_t elements) {
  thread_local std::vector<float> sums;
  if (sums.size() < elements) sums.resize(elements);
  return {sums.data(), elements};
}

}  // namespace

void reduce_scatter_ring(TcpComm& comm, std::span<const float> input, std::span<float> output,
                         ReduceOp op, size_t chunk_elements, size_t sender_thread_bytes) {
  check_world_multiple("reduce_scatter", "input", input.size(), "output", output.size(),
                       comm.size());
  const int world = comm.size();
  const size_t k = output.size();
  if (world == 1) {
    std::memmove(output.data(), input.data(), k * sizeof(float));
    return;
  }
  const Ring ring = plan_ring(comm, input, chunk_elements, sender_thread_bytes);
  // Step s < N-2 writes its partial sums into slot s; the last step writes into output.
  const size_t slots = static_cast<size_t>(world - 2) * k;
  const std::span<float> partials = partial_sums(slots);
  run_ring(comm, ring, [&](DuplexLink& link) {
    // slice(i): elements [i*k, i*k + k) of the input, i taken mod N. Step 0 sends slice
    // r-1 as it is. Step s receives the left neighbour's partial sum of slice r-s-2,
    // adds our own slice r-s-2 to it (copy ours in, then reduce_into) and forwards it;
    // the last step's slice is r itself, summed into output (already there when output
    // is that slice of the input) and not forwarded.
    // BEGIN SOLUTION: N-1 steps of receive, add our slice, forward; slice r ends in output
    const int rank = comm.rank();
    const auto slice = [&](int i) {
      return input.subspan(static_cast<size_t>(((i % world) + world) % world) * k, k);
    };
    const std::span<float> incoming = chunk_scratch(std::min(chunk_elements, k));
    const std::span<const float> first = slice(rank - 1);
    link.post_send(first.data(), first.size_bytes());
    for (int step = 0; step < world - 1; ++step) {
      const bool last_step = step == world - 2;
      const std::span<const float> ours = slice(rank - step - 2);
      const std::span<float> target =
          last_step ? output : partials.subspan(static_cast<size_t>(step) * k, k);
      for (size_t begin = 0; begin < k; begin += chunk_elements) {
        const size_t n = std::min(chunk_elements, k - begin);
        float* sum = target.data() + begin;
        link.recv(incoming.data(), n * sizeof(float));
        if (sum != ours.data() + begin) std::memcpy(sum, ours.data() + begin, n * sizeof(float));
        reduce_into(sum, incoming.data(), n, op);
        if (!last_step) link.post_send(sum, n * sizeof(float));
      }
    }
    // END SOLUTION
  });
  if (op == ReduceOp::AVG) scale(output.data(), k, 1.0f / static_cast<float>(world));
}

void all_gather_ring(TcpComm& comm, std::span<const float> input, std::span<float> output,
                     size_t chunk_elements, size_t sender_thread_bytes) {
  check_world_multiple("all_gather", "output", output.size(), "input", input.size(), comm.size());
  const int world = comm.size(), rank = comm.rank();
  const size_t k = input.size();
  float* own = output.data() + static_cast<size_t>(rank) * k;
  if (own != input.data()) std::memmove(own, input.data(), k * sizeof(float));
  if (world == 1) return;
  const Ring ring = plan_ring(comm, output, chunk_elements, sender_thread_bytes);
  run_ring(comm, ring, [&](DuplexLink& link) {
    // Step 0 sends our own slice r; step s receives slice r-s-1 into place and forwards it,
    // except at the last step (its next stop would be the rank it came from).
    // BEGIN SOLUTION: N-1 steps of receive into place and forward
    const auto slice = [&](int i) {
      return output.subspan(static_cast<size_t>(((i % world) + world) % world) * k, k);
    };
    const std::span<float> first = slice(rank);
    link.post_send(first.data(), first.size_bytes());
    for (int step = 0; step < world - 1; ++step) {
      const std::span<float> target = slice(rank - step - 1);
      const bool forward = step < world - 2;
      for (size_t begin = 0; begin < k; begin += chunk_elements) {
        const std::span<float> chunk = target.subspan(begin, std::min(chunk_elements, k - begin));
        link.recv(chunk.data(), chunk.size_bytes());
        if (forward) link.post_send(chunk.data(), chunk.size_bytes());
      }
    }
    // END SOLUTION
  });
}

}  // namespace course
