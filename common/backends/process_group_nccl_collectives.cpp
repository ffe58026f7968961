// process_group_nccl_collectives.cpp: the operations of the `nccl` backend (see
// process_group_nccl.h). Each checks this rank's arguments (collective_checks.h), maps
// its buffers to device pointers (device_ptr: CUDA memory as is, host memory staged), then
// queues NCCL calls through launch(); the blocking calls wait for the Work under the
// group's timeout (which also copies staged outputs back).
//
// Compiled only when CMake found CUDA and NCCL (COURSE_HAVE_NCCL).
#include <string>

#include "collective_checks.h"
#include "process_group_nccl_impl.h"
#include "work.h"

namespace course {

namespace {

std::string op_str(const char* name, size_t count, ReduceOp op) {
  return std::string(name) + "(" + nccl_count_str(count) + ", op " + reduce_op_name(op) + ")";
}

std::string rooted_str(const char* name, size_t count, int root) {
  return std::string(name) + "(" + nccl_count_str(count) + ", root " + std::to_string(root) + ")";
}

}  // namespace

void NcclProcessGroup::broadcast(std::span<float> data, int root) {
  Impl& im = *impl_;
  check_root("nccl broadcast", root, im.world);
  if (data.empty()) return;
  const std::string what = rooted_str("broadcast", data.size(), root);
  auto staging = std::make_shared<NcclStaging>();
  float* d = im.device_ptr(data.data(), data.size(), what, "data", *staging, true);
  im.launch(
        what, [&] { return ncclBroadcast(d, d, data.size(), ncclFloat, root, im.comm, im.stream); },
        staging)
      ->wait(im.options.timeout);
}

void NcclProcessGroup::reduce(std::span<float> data, ReduceOp op, int root) {
  Impl& im = *impl_;
  check_root("nccl reduce", root, im.world);
  if (data.empty()) return;
  const std::string what = op_str("reduce", data.size(), op) + " to root " + std::to_string(root);
  auto staging = std::make_shared<NcclStaging>();
  float* d = im.device_ptr(data.data(), data.size(), what, "data", *staging, im.rank == root);
  im.launch(
        what,
        [&] {
          return ncclReduce(d, d, data.size(), ncclFloat, nccl_reduce_op(op), root, im.comm,
                            im.stream);
        },
        staging)
      ->wait(im.options.timeout);
}

WorkPtr NcclProcessGroup::all_reduce_async(std::span<float> data, ReduceOp op) {
  Impl& im = *impl_;
  if (data.empty()) return completed_work();
  const std::string what = op_str("all_reduce", data.size(), op);
  auto staging = std::make_shared<NcclStaging>();
  float* d = im.device_ptr(data.data(), data.size(), what, "data", *staging, true);
  return im.launch(
      what,
      [&] {
        return ncclAllReduce(d, d, data.size(), ncclFloat, nccl_reduce_op(op), im.comm, im.stream);
      },
      staging);
}

void NcclProcessGroup::all_reduce(std::span<float> data, ReduceOp op) {
  all_reduce_async(data, op)->wait(impl_->options.timeout);
}

void NcclProcessGroup::barrier() {
  // One float all-reduced: returns once every rank has queued it and it has finished.
  Impl& im = *impl_;
  im.launch("barrier (a one-element all_reduce)", [&] {
      return ncclAllReduce(im.scratch, im.scratch, 1, ncclFloat, ncclSum, im.comm, im.stream);
    })->wait(im.options.timeout);
}

void NcclProcessGroup::all_gather(std::span<const float> input, std::span<float> output) {
  Impl& im = *impl_;
  check_world_multiple("nccl all_gather", "output", output.size(), "input", input.size(), im.world);
  if (input.empty()) return;
  const std::string what = "all_gather(" + nccl_count_str(input.size()) + " per rank)";
  auto staging = std::make_shared<NcclStaging>();
  const float* in = im.device_ptr(input.data(), input.size(), what, "input", *staging, false);
  float* out = im.device_ptr(output.data(), output.size(), what, "output", *staging, true);
  im.launch(
        what, [&] { return ncclAllGather(in, out, input.size(), ncclFloat, im.comm, im.stream); },
        staging)
      ->wait(im.options.timeout);
}

void NcclProcessGroup::reduce_scatter(std::span<const float> input, std::span<float> output,
                                      ReduceOp op) {
  Impl& im = *impl_;
  check_world_multiple("nccl reduce_scatter", "input", input.size(), "output", output.size(),
                       im.world);
  if (output.empty()) return;
  const std::string what = op_str("reduce_scatter", output.size(), op) + " per rank";
  auto staging = std::make_shared<NcclStaging>();
  const float* in = im.device_ptr(input.data(), input.size(), what, "input", *staging, false);
  float* out = im.device_ptr(output.data(), output.size(), what, "output", *staging, true);
  im.launch(
        what,
        [&] {
          return ncclReduceScatter(in, out, output.size(), ncclFloat, nccl_reduce_op(op), im.comm,
                                   im.stream);
        },
        staging)
      ->wait(im.options.timeout);
}

// ---- grouped send/recv -----------------------------------------------------------------

void NcclProcessGroup::Impl::exchange_with_root(const std::string& what, int root, size_t k,
                                                bool scatter, float* whole, float* part,
                                                std::shared_ptr<NcclStaging> staging) {
  launch(
      what,
      [&] {
        return nccl_grouped([&] {
          if (rank == root) {  // one slice to or from every rank, itself included
            for (int r = 0; r < world; ++r) {
              float* slice = whole + static_cast<size_t>(r) * k;
              const ncclResult_t s = scatter ? ncclSend(slice, k, ncclFloat, r, comm, stream)
                                             : ncclRecv(slice, k, ncclFloat, r, comm, stream);
              if (s != ncclSuccess && s != ncclInProgress) return s;
            }
          }
          return scatter ? ncclRecv(part, k, ncclFloat, root, comm, stream)
                         : ncclSend(part, k, ncclFloat, root, comm, stream);
        });
      },
      std::move(staging))
      ->wait(options.timeout);
}

void NcclProcessGroup::scatter(std::span<const float> input, std::span<float> output, int root) {
  Impl& im = *impl_;
  const size_t k = output.size();
  const bool is_root = im.rank == root;
  check_rooted_blocks("nccl scatter", "input", input.size(), "output", k, root, im.rank, im.world);
  if (k == 0) return;
  const std::string what = rooted_str("scatter", k, root) + " per rank";
  auto staging = std::make_shared<NcclStaging>();
  float* in =
      is_root ? im.device_ptr(input.data(), input.size(), what, "input", *staging, false) : nullptr;
  float* out = im.device_ptr(output.data(), k, what, "output", *staging, true);
  im.exchange_with_root(what, root, k, /*scatter=*/true, in, out, std::move(staging));
}

void NcclProcessGroup::gather(std::span<const float> input, std::span<float> output, int root) {
  Impl& im = *impl_;
  const size_t k = input.size();
  const bool is_root = im.rank == root;
  check_rooted_blocks("nccl gather", "output", output.size(), "input", k, root, im.rank, im.world);
  if (k == 0) return;
  const std::string what = rooted_str("gather", k, root) + " per rank";
  auto staging = std::make_shared<NcclStaging>();
  float* in = im.device_ptr(input.data(), k, what, "input", *staging, false);
  float* out = is_root ? im.device_ptr(output.data(), output.size(), what, "output", *staging, true)
                       : nullptr;
  im.exchange_with_root(what, root, k, /*scatter=*/false, out, in, std::move(staging));
}

void NcclProcessGroup::all_to_all(std::span<const float> input, std::span<float> output) {
  Impl& im = *impl_;
  check_world_multiple("nccl all_to_all", "input", input.size(), "a slice",
                       output.size() / static_cast<size_t>(im.world), im.world);
  check_world_multiple("nccl all_to_all", "output", output.size(), "a slice",
                       input.size() / static_cast<size_t>(im.world), im.world);
  const size_t k = input.size() / static_cast<size_t>(im.world);
  if (k == 0) return;
  const std::string what = "all_to_all(" + nccl_count_str(k) + " per pair of ranks)";
  auto staging = std::make_shared<NcclStaging>();
  const float* in = im.device_ptr(input.data(), input.size(), what, "input", *staging, false);
  float* out = im.device_ptr(output.data(), output.size(), what, "output", *staging, true);
  im.launch(
        what,
        [&] {
          return nccl_grouped([&] {
            for (int r = 0; r < im.world; ++r) {
              ncclResult_t s = ncclSend(in + r * k, k, ncclFloat, r, im.comm, im.stream);
              if (s != ncclSuccess && s != ncclInProgress) return s;
              s = ncclRecv(out + r * k, k, ncclFloat, r, im.comm, im.stream);
              if (s != ncclSuccess && s != ncclInProgress) return s;
            }
            return ncclSuccess;
          });
        },
        staging)
      ->wait(im.options.timeout);
}

// ---- point to point --------------------------------------------------------------------

namespace {

void check_nccl_tag(const char* op, int tag) {
  if (tag < 0) {
    throw ConfigError(std::string("nccl ") + op + ": tag " + std::to_string(tag) +
                      " is negative; pass a tag >= 0 (NCCL matches messages between two "
                      "ranks in issue order; the tag is not sent)");
  }
}

}  // namespace

void NcclProcessGroup::send(std::span<const float> data, int dst, int tag) {
  isend(data, dst, tag)->wait(impl_->options.timeout);
}

void NcclProcessGroup::recv(std::span<float> data, int src, int tag) {
  irecv(data, src, tag)->wait(impl_->options.timeout);
}

WorkPtr NcclProcessGroup::isend(std::span<const float> data, int dst, int tag) {
  Impl& im = *impl_;
  check_peer("nccl isend", dst, im.rank, im.world);
  check_nccl_tag("isend", tag);
  const std::string what = "isend to " + im.options.names(dst) + " (" +
                           nccl_count_str(data.size()) + ", tag " + std::to_string(tag) + ")";
  if (data.empty()) return completed_work();  // nothing to move, on both sides
  auto staging = std::make_shared<NcclStaging>();
  const float* d = im.device_ptr(data.data(), data.size(), what, "data", *staging, false);
  return im.launch(
      what, [&] { return ncclSend(d, data.size(), ncclFloat, dst, im.comm, im.stream); }, staging);
}

WorkPtr NcclProcessGroup::irecv(std::span<float> data, int src, int tag) {
  Impl& im = *impl_;
  check_peer("nccl irecv", src, im.rank, im.world);
  check_nccl_tag("irecv", tag);
  const std::string what = "irecv from " + im.options.names(src) + " (" +
                           nccl_count_str(data.size()) + ", tag " + std::to_string(tag) + ")";
  if (data.empty()) return completed_work();  // nothing to move, on both sides
  auto staging = std::make_shared<NcclStaging>();
  float* d = im.device_ptr(data.data(), data.size(), what, "data", *staging, true);
  return im.launch(
      what, [&] { return ncclRecv(d, data.size(), ncclFloat, src, im.comm, im.stream); }, staging);
}

}  // namespace course
