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
  [[maybe_unused]] const std::span<float> partials = partial_sums(slots);
  run_ring(comm, ring, [&](DuplexLink& link) {
    // slice(i): elements [i*k, i*k + k) of the input, i taken mod N. Step 0 sends slice
    // r-1 as it is. Step s receives the left neighbour's partial sum of slice r-s-2,
    // adds our own slice r-s-2 to it (copy ours in, then reduce_into) and forwards it;
    // the last step's slice is r itself, summed into output (already there when output
    // is that slice of the input) and not forwarded.
    // TODO(lesson13): N-1 steps of receive, add our slice, forward; slice r ends in output
    COURSE_TODO();
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
    // TODO(lesson13): N-1 steps of receive into place and forward
    COURSE_TODO();
  });
}

}  // namespace course
