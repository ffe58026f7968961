// process_group_gloo.cpp: the `gloo` backend (see process_group_gloo.h).
//
// Compiled only when CMake found Gloo (COURSE_HAVE_GLOO). Every Gloo call goes through
// COURSE_CHECK_GLOO (gloo_check.h); point to point lives in gloo_p2p.h.
#include "process_group_gloo.h"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/gather.h>
#include <gloo/math.h>
#include <gloo/reduce.h>
#include <gloo/rendezvous/context.h>
#include <gloo/scatter.h>
#include <gloo/transport/tcp/device.h>

#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "error.h"
#include "gloo_check.h"
#include "gloo_p2p.h"
#include "gloo_store.h"
#include "work.h"

namespace course {

namespace {

using ReduceFunc = void (*)(void*, const void*, const void*, size_t);

ReduceFunc reduce_function(ReduceOp op) {
  switch (op) {
    case ReduceOp::SUM:
    case ReduceOp::AVG:  // SUM on the wire, divided by size() afterwards
      return &gloo::sum<float>;
    case ReduceOp::PRODUCT:
      return &gloo::product<float>;
    case ReduceOp::MIN:
      return &gloo::min<float>;
    case ReduceOp::MAX:
      return &gloo::max<float>;
  }
  throw ConfigError("unknown ReduceOp " + std::to_string(static_cast<int>(op)));
}

void divide(std::span<float> data, float by) {
  const float scale = 1.0f / by;
  for (float& x : data) x *= scale;
}

std::string count_str(size_t n) {
  return "count " + std::to_string(n);
}

// Groups constructed by this process so far: makes each group's store prefix unique, as
// long as every rank constructs its groups in the same order (rule 1 of process_group.h).
std::atomic<int> g_groups_made{0};

}  // namespace

struct GlooProcessGroup::Impl {
  int rank = 0;
  int world = 1;
  GlooOptions options;
  std::shared_ptr<gloo::transport::Device> device;
  std::shared_ptr<gloo::rendezvous::Context> context;
  std::shared_ptr<GlooAbortState> abort = std::make_shared<GlooAbortState>();
  std::unique_ptr<GlooP2p> p2p;
  uint32_t next_tag = 1;  // the tag of the next collective; the same on every rank

  // The all_reduce_async worker: runs queued jobs one at a time, in order.
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::function<void()>> jobs;
  bool stopping = false;
  std::thread worker;

  // Throws when an earlier error aborted the group (gloo_p2p.h).
  void check_not_aborted() const {
    std::lock_guard<std::mutex> lock(abort->mu);
    if (!abort->reason.empty()) {
      throw NetworkError(
          "this gloo group was aborted after an earlier error, and every call "
          "on it now fails; make a new group. The first error was: " +
          abort->reason);
    }
  }

  // A peer (allow_self false) or a root (true) must be a rank of this group.
  void check_rank(int peer, const char* what, bool allow_self = false) const {
    if (peer < 0 || peer >= world || (peer == rank && !allow_self)) {
      throw ConfigError(std::string("gloo: ") + what + " " + std::to_string(peer) +
                        " is not a valid peer in a world of " + std::to_string(world) +
                        " (this is rank " + std::to_string(rank) + ")");
    }
  }

  void check_tag(int tag, const char* op) const {
    if (tag < 0 || tag > GlooP2p::kMaxTag) {
      throw ConfigError(std::string("gloo ") + op + ": tag " + std::to_string(tag) +
                        " is outside [0, " + std::to_string(GlooP2p::kMaxTag) + "]");
    }
  }

  void run_all_reduce(float* data, size_t n, ReduceOp op, uint32_t tag) {
    if (n == 0) return;
    if (world > 1) {
      gloo::AllreduceOptions opts(context);
      opts.setOutput(data, n);
      opts.setReduceFunction(reduce_function(op));
      opts.setAlgorithm(options.allreduce_algorithm == "bcube"
                            ? gloo::AllreduceOptions::Algorithm::BCUBE
                            : gloo::AllreduceOptions::Algorithm::RING);
      opts.setTag(tag);
      opts.setTimeout(options.timeout);
      COURSE_CHECK_GLOO(gloo::allreduce(opts),
                        "all_reduce(" + count_str(n) + ", op " + reduce_op_name(op) + ")");
    }
    if (op == ReduceOp::AVG) divide({data, n}, static_cast<float>(world));
  }

  void worker_loop() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return stopping || !jobs.empty(); });
        if (jobs.empty()) return;  // stopping, and nothing left to run
        job = std::move(jobs.front());
        jobs.pop_front();
      }
      job();
    }
  }
};

GlooProcessGroup::GlooProcessGroup(StoreClient& store, int rank, int world, GlooOptions options)
    : impl_(std::make_unique<Impl>()) {
  if (world < 1 || rank < 0 || rank >= world) {
    throw ConfigError("GlooProcessGroup: rank " + std::to_string(rank) + " is outside a world of " +
                      std::to_string(world));
  }
  if (options.allreduce_algorithm != "ring" && options.allreduce_algorithm != "bcube") {
    throw ConfigError("GlooProcessGroup: allreduce_algorithm '" + options.allreduce_algorithm +
                      "' is not one of: ring, bcube");
  }
  Impl& im = *impl_;
  im.rank = rank;
  im.world = world;
  im.options = std::move(options);
  const std::string prefix =
      im.options.prefix + "/" + std::to_string(g_groups_made.fetch_add(1)) + "/";
  COURSE_CHECK_GLOO(
      {
        gloo::transport::tcp::attr attr;
        attr.hostname = im.options.host;
        im.device = gloo::transport::tcp::CreateDevice(attr);
        im.context = std::make_shared<gloo::rendezvous::Context>(rank, world);
        im.context->setTimeout(im.options.timeout);
        GlooStore gloo_store(store, prefix, im.options.timeout);
        im.context->connectFullMesh(gloo_store, im.device);
      },
      "rendezvous of " + std::to_string(world) + " ranks (store prefix " + prefix + ", host " +
          im.options.host + ")");
  im.p2p = std::make_unique<GlooP2p>(im.context, im.abort, im.options.timeout);
  im.worker = std::thread([&im] { im.worker_loop(); });
}

GlooProcessGroup::~GlooProcessGroup() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->cv.notify_all();
  if (impl_->worker.joinable()) impl_->worker.join();
  impl_->p2p.reset();  // before the context it uses
}

int GlooProcessGroup::rank() const {
  return impl_->rank;
}
int GlooProcessGroup::size() const {
  return impl_->world;
}

// ---- point to point (gloo_p2p.h) -----------------------------------------------------

void GlooProcessGroup::send(std::span<const float> data, int dst, int tag) {
  isend(data, dst, tag)->wait(impl_->options.timeout);
}

void GlooProcessGroup::recv(std::span<float> data, int src, int tag) {
  irecv(data, src, tag)->wait(impl_->options.timeout);
}

WorkPtr GlooProcessGroup::isend(std::span<const float> data, int dst, int tag) {
  impl_->check_not_aborted();
  impl_->check_rank(dst, "destination");
  impl_->check_tag(tag, "isend");
  return impl_->p2p->isend(data, dst, tag);
}

WorkPtr GlooProcessGroup::irecv(std::span<float> data, int src, int tag) {
  impl_->check_not_aborted();
  impl_->check_rank(src, "source");
  impl_->check_tag(tag, "irecv");
  return impl_->p2p->irecv(data, src, tag);
}

// ---- collectives ---------------------------------------------------------------------

void GlooProcessGroup::broadcast(std::span<float> data, int root) {
  Impl& im = *impl_;
  im.check_not_aborted();
  im.check_rank(root, "root", true);
  const uint32_t tag = im.next_tag++;
  if (data.empty() || im.world == 1) return;
  gloo::BroadcastOptions opts(im.context);
  opts.setOutput(data.data(), data.size());
  opts.setRoot(root);
  opts.setTag(tag);
  opts.setTimeout(im.options.timeout);
  COURSE_CHECK_GLOO(gloo::broadcast(opts),
                    "broadcast(" + count_str(data.size()) + ", root " + std::to_string(root) + ")");
}

void GlooProcessGroup::scatter(std::span<const float> input, std::span<float> output, int root) {
  Impl& im = *impl_;
  im.check_not_aborted();
  im.check_rank(root, "root", true);
  const uint32_t tag = im.next_tag++;
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
  COURSE_CHECK_GLOO(gloo::scatter(opts),
                    "scatter(" + count_str(k) + " per rank, root " + std::to_string(root) + ")");
}

void GlooProcessGroup::gather(std::span<const float> input, std::span<float> output, int root) {
  Impl& im = *impl_;
  im.check_not_aborted();
  im.check_rank(root, "root", true);
  const uint32_t tag = im.next_tag++;
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
  COURSE_CHECK_GLOO(gloo::gather(opts),
                    "gather(" + count_str(k) + " per rank, root " + std::to_string(root) + ")");
}

void GlooProcessGroup::barrier() {
  Impl& im = *impl_;
  im.check_not_aborted();
  const uint32_t tag = im.next_tag++;
  if (im.world == 1) return;
  gloo::BarrierOptions opts(im.context);
  opts.setTag(tag);
  opts.setTimeout(im.options.timeout);
  COURSE_CHECK_GLOO(gloo::barrier(opts), "barrier()");
}

void GlooProcessGroup::reduce(std::span<float> data, ReduceOp op, int root) {
  Impl& im = *impl_;
  im.check_not_aborted();
  im.check_rank(root, "root", true);
  const uint32_t tag = im.next_tag++;
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
    opts.setReduceFunction(reduce_function(op));
    opts.setTag(tag);
    opts.setTimeout(im.options.timeout);
    COURSE_CHECK_GLOO(gloo::reduce(opts), "reduce(" + count_str(data.size()) + ", op " +
                                              reduce_op_name(op) + ", root " +
                                              std::to_string(root) + ")");
  }
  if (op == ReduceOp::AVG && im.rank == root) divide(data, static_cast<float>(im.world));
}

void GlooProcessGroup::all_reduce(std::span<float> data, ReduceOp op) {
  Impl& im = *impl_;
  im.check_not_aborted();
  const uint32_t tag = im.next_tag++;
  im.run_all_reduce(data.data(), data.size(), op, tag);
}

void GlooProcessGroup::all_gather(std::span<const float> input, std::span<float> output) {
  Impl& im = *impl_;
  im.check_not_aborted();
  const uint32_t tag = im.next_tag++;
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
  COURSE_CHECK_GLOO(gloo::allgather(opts), "all_gather(" + count_str(k) + " per rank)");
}

void GlooProcessGroup::reduce_scatter(std::span<const float> input, std::span<float> output,
                                      ReduceOp op) {
  Impl& im = *impl_;
  im.check_not_aborted();
  const uint32_t tag = im.next_tag++;
  const size_t k = output.size();
  if (input.size() != k * im.world) {
    throw ConfigError(
        "gloo reduce_scatter: input has " + std::to_string(input.size()) +
        " elements; it must have size() * output.size() = " + std::to_string(k * im.world));
  }
  if (k == 0) return;
  std::vector<float> scratch(input.begin(), input.end());
  im.run_all_reduce(scratch.data(), scratch.size(), op, tag);
  std::memmove(output.data(), scratch.data() + im.rank * k, k * sizeof(float));
}

void GlooProcessGroup::all_to_all(std::span<const float> input, std::span<float> output) {
  Impl& im = *impl_;
  im.check_not_aborted();
  const uint32_t tag = im.next_tag++;
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
  COURSE_CHECK_GLOO(gloo::alltoall(opts),
                    "all_to_all(" + count_str(input.size() / im.world) + " per rank pair)");
}

WorkPtr GlooProcessGroup::all_reduce_async(std::span<float> data, ReduceOp op) {
  Impl& im = *impl_;
  im.check_not_aborted();
  const uint32_t tag = im.next_tag++;  // taken now, in program order, like every call
  auto done = std::make_shared<std::promise<void>>();
  WorkPtr work = std::make_shared<FutureWork>(
      done->get_future().share(),
      "gloo all_reduce_async(" + count_str(data.size()) + ", op " + reduce_op_name(op) + ")");
  {
    std::lock_guard<std::mutex> lock(im.mu);
    im.jobs.push_back([&im, done, data, op, tag] {
      try {
        im.run_all_reduce(data.data(), data.size(), op, tag);
        done->set_value();
      } catch (...) {
        done->set_exception(std::current_exception());
      }
    });
  }
  im.cv.notify_one();
  return work;
}

}  // namespace course
