// process_group_gloo.cpp: the `gloo` backend (see process_group_gloo.h): construction,
// point to point, and the all-reduce; the other collectives are in
// process_group_gloo_collectives.cpp.
//
// Compiled only when CMake found Gloo (COURSE_HAVE_GLOO). Every Gloo call goes through
// COURSE_CHECK_GLOO (gloo_check.h); point to point lives in gloo_p2p.h.
#include "process_group_gloo.h"

#include <gloo/allreduce.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/tcp/device.h>
#include <signal.h>

#include <future>
#include <map>
#include <mutex>

#include "error.h"
#include "gloo_check.h"
#include "gloo_p2p.h"
#include "gloo_store.h"
#include "process_group_gloo_impl.h"
#include "reduce_kernels.h"
#include "work.h"

namespace course {

namespace {

// The number of groups this process has constructed under each prefix: makes each
// group's store prefix unique, as long as every rank constructs the groups of a prefix in
// the same order (rule 1 of process_group.h). Counted per prefix, not per process, so
// that a rank outside a subgroup (subgroups.h), which constructs fewer groups, stays in
// step with the members of the next one.
int next_group_number(const std::string& prefix) {
  static std::mutex mu;
  static std::map<std::string, int> made;
  std::lock_guard<std::mutex> lock(mu);
  return made[prefix]++;
}

// Gloo writes with writev(), which has no MSG_NOSIGNAL: without this, a write to a peer
// that has just closed kills the writer with SIGPIPE instead of failing with EPIPE. Set
// once, only while SIGPIPE has its default action (a handler the program installed stays).
void ignore_sigpipe_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction old {};
    if (::sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) {
      ::signal(SIGPIPE, SIG_IGN);
    }
  });
}

}  // namespace

void GlooProcessGroup::Impl::run_all_reduce(float* data, size_t n, ReduceOp op, uint32_t tag) {
  if (n == 0) return;
  if (world > 1) {
    gloo::AllreduceOptions opts(context);
    opts.setOutput(data, n);
    opts.setReduceFunction(gloo_reduce_function(op));
    opts.setAlgorithm(options.allreduce_algorithm == "bcube"
                          ? gloo::AllreduceOptions::Algorithm::BCUBE
                          : gloo::AllreduceOptions::Algorithm::RING);
    opts.setTag(tag);
    opts.setTimeout(options.timeout);
    COURSE_CHECK_GLOO(gloo::allreduce(opts),
                      "all_reduce(" + gloo_count_str(n) + ", op " + reduce_op_name(op) + ")");
  }
  if (op == ReduceOp::AVG) scale(data, n, 1.0f / static_cast<float>(world));
}

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
  ignore_sigpipe_once();
  Impl& im = *impl_;
  im.rank = rank;
  im.world = world;
  im.options = std::move(options);
  const std::string prefix =
      im.options.prefix + "/" + std::to_string(next_group_number(im.options.prefix)) + "/";
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
  im.p2p = std::make_unique<GlooP2p>(im.context, im.abort, im.options.timeout, im.options.names);
}

GlooProcessGroup::~GlooProcessGroup() {
  impl_->async_worker.reset();  // runs what is queued, then joins its thread
  impl_->p2p.reset();           // before the context it uses
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

// ---- the all-reduce ------------------------------------------------------------------

void GlooProcessGroup::all_reduce(std::span<float> data, ReduceOp op) {
  Impl& im = *impl_;
  im.check_not_aborted();
  const uint32_t tag = im.next_tag++;
  const uint64_t seq = im.enter("all_reduce");
  try {
    im.run_all_reduce(data.data(), data.size(), op, tag);
    im.left(seq);
  } catch (...) {
    im.failed(seq, "all_reduce");
  }
}

WorkPtr GlooProcessGroup::all_reduce_async(std::span<float> data, ReduceOp op) {
  Impl& im = *impl_;
  im.check_not_aborted();
  const uint32_t tag = im.next_tag++;  // taken now, in program order, like every call
  const uint64_t seq = im.enter("all_reduce");
  return im.async_worker->submit(
      [&im, data, op, tag, seq] {
        try {
          im.run_all_reduce(data.data(), data.size(), op, tag);
          im.left(seq);
        } catch (...) {
          im.failed(seq, "all_reduce");
        }
      },
      "gloo all_reduce_async(" + gloo_count_str(data.size()) + ", op " + reduce_op_name(op) + ")");
}

}  // namespace course
