// process_group_gloo_collectives.cpp: the `gloo` backend's collectives other than the
// all-reduce (see process_group_gloo.h for how each maps onto Gloo).
//
// Compiled only when CMake found Gloo (COURSE_HAVE_GLOO). Every call takes the next tag
// of the group's sequence first, so all ranks agree on it even when a call returns early.
#include <gloo/allgather.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/gather.h>
#include <gloo/reduce.h>
#include <gloo/scatter.h>

#include <cstring>
#include <vector>

#include "error.h"
#include "gloo_check.h"
#include "process_group_gloo.h"
#include "process_group_gloo_impl.h"
#include "reduce_kernels.h"

namespace course {

// ---- collectives ---------------------------------------------------------------------

void GlooProcessGroup::broadcast(std::span<float> data, int root) {
  Impl& im = *impl_;
  im.check_not_aborted();
  im.check_rank(root, "root", true);
  const uint32_t tag = im.next_tag++;
  const uint64_t seq = im.enter("broadcast");
  if (data.empty() || im.world == 1) return;
  gloo::BroadcastOptions opts(im.context);
  opts.setOutput(data.data(), data.size());
  opts.setRoot(root);
  opts.setTag(tag);
  opts.setTimeout(im.options.timeout);
  COURSE_GLOO_COLLECTIVE(
      im, seq, "broadcast", gloo::broadcast(opts),
      "broadcast(" + gloo_count_str(data.size()) + ", root " + std::to_string(root) + ")");
}

void GlooProcessGroup::scatter(std::span<const float> input, std::span<float> output, int root) {
  Impl& im = *impl_;
  im.check_not_aborted();
  im.check_rank(root, "root", true);
  const uint32_t tag = im.next_tag++;
  const uint64_t seq = im.enter("scatter");
  const size_t k = output.size();
  if (im.rank == root && input.size() != k * im.world) {
    throw ConfigError(
        "gloo scatter: the root's input has " + std::to_string(input.size()) +
        " elements; it must have size() * output.size() = " + std::to_string(k * im.world));
  }
  if (k == 0) return;
  if (im.world == 1) {
    if (output.data() != input.data()) std::memmove(output.data(), input.data(), k * 4);
    return;
  }
  gloo::ScatterOptions opts(im.context);
  if (im.rank == root) {
    std::vector<float*> parts(im.world);
    for (int i = 0; i < im.world; ++i) parts[i] = const_cast<float*>(input.data()) + i * k;
    opts.setInputs(parts, k);
  }
  opts.setOutput(output.data(), k);
  opts.setRoot(root);
  opts.setTag(tag);
  opts.setTimeout(im.options.timeout);
  COURSE_GLOO_COLLECTIVE(
      im, seq, "scatter", gloo::scatter(opts),
      "scatter(" + gloo_count_str(k) + " per rank, root " + std::to_string(root) + ")");
}

void GlooProcessGroup::gather(std::span<const float> input, std::span<float> output, int root) {
  Impl& im = *impl_;
  im.check_not_aborted();
  im.check_rank(root, "root", true);
  const uint32_t tag = im.next_tag++;
  const uint64_t seq = im.enter("gather");
  const size_t k = input.size();
  if (im.rank == root && output.size() != k * im.world) {
    throw ConfigError(
        "gloo gather: the root's output has " + std::to_string(output.size()) +
        " elements; it must have size() * input.size() = " + std::to_string(k * im.world));
  }
  if (k == 0) return;
  if (im.world == 1) {
    if (output.data() != input.data()) std::memmove(output.data(), input.data(), k * 4);
    return;
  }
  gloo::GatherOptions opts(im.context);
  opts.setInput(const_cast<float*>(input.data()), k);
  if (im.rank == root) opts.setOutput(output.data(), output.size());
  opts.setRoot(root);
  opts.setTag(tag);
  opts.setTimeout(im.options.timeout);
  COURSE_GLOO_COLLECTIVE(
      im, seq, "gather", gloo::gather(opts),
      "gather(" + gloo_count_str(k) + " per rank, root " + std::to_string(root) + ")");
}

void GlooProcessGroup::barrier() {
  Impl& im = *impl_;
  im.check_not_aborted();
  const uint32_t tag = im.next_tag++;
  const uint64_t seq = im.enter("barrier");
  if (im.world == 1) return;
  gloo::BarrierOptions opts(im.context);
  opts.setTag(tag);
  opts.setTimeout(im.options.timeout);
  COURSE_GLOO_COLLECTIVE(im, seq, "barrier", gloo::barrier(opts), "barrier()");
}

void GlooProcessGroup::reduce(std::span<float> data, ReduceOp op, int root) {
  Impl& im = *impl_;
  im.check_not_aborted();
  im.check_rank(root, "root", true);
  const uint32_t tag = im.next_tag++;
  const uint64_t seq = im.enter("reduce");
  if (data.empty()) return;
  if (im.world > 1) {
    // gloo::reduce leaves partial sums in the output of every rank; non-roots give it a
    // scratch output so that their `data` stays as it was.
    std::vector<float> scratch(im.rank == root ? 0 : data.size());
    gloo::ReduceOptions opts(im.context);
    if (im.rank == root) {
      opts.setOutput(data.data(), data.size());
    } else {
      opts.setInput(data.data(), data.size());
      opts.setOutput(scratch.data(), scratch.size());
    }
    opts.setRoot(root);
    opts.setReduceFunction(gloo_reduce_function(op));
    opts.setTag(tag);
    opts.setTimeout(im.options.timeout);
    COURSE_GLOO_COLLECTIVE(im, seq, "reduce", gloo::reduce(opts),
                           "reduce(" + gloo_count_str(data.size()) + ", op " + reduce_op_name(op) +
                               ", root " + std::to_string(root) + ")");
  }
  if (op == ReduceOp::AVG && im.rank == root)
    scale(data.data(), data.size(), 1.0f / static_cast<float>(im.world));
}

void GlooProcessGroup::all_gather(std::span<const float> input, std::span<float> output) {
  Impl& im = *impl_;
  im.check_not_aborted();
  const uint32_t tag = im.next_tag++;
  const uint64_t seq = im.enter("all_gather");
  const size_t k = input.size();
  if (output.size() != k * im.world) {
    throw ConfigError(
        "gloo all_gather: output has " + std::to_string(output.size()) +
        " elements; it must have size() * input.size() = " + std::to_string(k * im.world));
  }
  if (k == 0) return;
  float* mine = output.data() + im.rank * k;
  if (im.world == 1) {
    if (mine != input.data()) std::memmove(mine, input.data(), k * 4);
    return;
  }
  gloo::AllgatherOptions opts(im.context);
  // In place (input is this rank's slice of output): Gloo then expects the slice to be
  // filled already, and is given no input.
  if (input.data() != mine) opts.setInput(const_cast<float*>(input.data()), k);
  opts.setOutput(output.data(), output.size());
  opts.setTag(tag);
  opts.setTimeout(im.options.timeout);
  COURSE_GLOO_COLLECTIVE(im, seq, "all_gather", gloo::allgather(opts),
                         "all_gather(" + gloo_count_str(k) + " per rank)");
}

void GlooProcessGroup::reduce_scatter(std::span<const float> input, std::span<float> output,
                                      ReduceOp op) {
  Impl& im = *impl_;
  im.check_not_aborted();
  const uint32_t tag = im.next_tag++;
  const uint64_t seq = im.enter("reduce_scatter");
  const size_t k = output.size();
  if (input.size() != k * im.world) {
    throw ConfigError(
        "gloo reduce_scatter: input has " + std::to_string(input.size()) +
        " elements; it must have size() * output.size() = " + std::to_string(k * im.world));
  }
  if (k == 0) return;
  std::vector<float> scratch(input.begin(), input.end());
  try {
    im.run_all_reduce(scratch.data(), scratch.size(), op, tag);
    im.left(seq);
  } catch (...) {
    im.failed(seq, "reduce_scatter");
  }
  std::memmove(output.data(), scratch.data() + im.rank * k, k * sizeof(float));
}

void GlooProcessGroup::all_to_all(std::span<const float> input, std::span<float> output) {
  Impl& im = *impl_;
  im.check_not_aborted();
  const uint32_t tag = im.next_tag++;
  const uint64_t seq = im.enter("all_to_all");
  if (input.size() != output.size() || input.size() % im.world != 0) {
    throw ConfigError(
        "gloo all_to_all: input (" + std::to_string(input.size()) + ") and output (" +
        std::to_string(output.size()) +
        ") must have the same size, a multiple of size() = " + std::to_string(im.world));
  }
  if (input.empty()) return;
  if (im.world == 1) {
    if (output.data() != input.data())
      std::memmove(output.data(), input.data(), input.size_bytes());
    return;
  }
  // Gloo reads input while writing output; an in-place call needs a copy of the input.
  std::vector<float> copy;
  const float* in = input.data();
  if (in == output.data()) {
    copy.assign(input.begin(), input.end());
    in = copy.data();
  }
  gloo::AlltoallOptions opts(im.context);
  opts.setInput(const_cast<float*>(in), input.size());
  opts.setOutput(output.data(), output.size());
  opts.setTag(tag);
  opts.setTimeout(im.options.timeout);
  COURSE_GLOO_COLLECTIVE(
      im, seq, "all_to_all", gloo::alltoall(opts),
      "all_to_all(" + gloo_count_str(input.size() / im.world) + " per rank pair)");
}

}  // namespace course
