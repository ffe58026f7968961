// reducer.h: lesson 10, PyTorch DDP's engine: gradients all-reduced in buckets while the
// backward pass is still running (torch/csrc/distributed/c10d/reducer.cpp; Li et al.,
// "PyTorch Distributed", VLDB 2020).
//
//   Reducer reducer(model->named_parameters(), *group, {.bucket_cap_bytes = 25 << 20});
//   for (each step) {
//     reducer.rebuild_buckets();                   // no-op except once, after step 1
//     Variable loss = cross_entropy(model->forward(x), y);
//     reducer.prepare_for_backward({});            // arms the hooks for this backward
//     loss.backward();                             // hooks fill buckets, launch all-reduces,
//                                                  // and the last one waits for them all
//     optimizer.step();                            // every rank has the same mean gradient
//   }
//
// distributed_data_parallel.h wraps these calls the way torch's DistributedDataParallel
// does; tests call them directly.
//
// THE ALGORITHM (one iteration)
//   1. Buckets (bucket_assignment.h): at construction, parameters in reverse registration
//      order under limits {first_bucket_bytes, bucket_cap_bytes}; each bucket owns one flat
//      float buffer, each parameter a slice of it.
//   2. prepare_for_backward(outputs) checks that the previous iteration finished (else the
//      error below), resets the counters and arms the hooks. With find_unused_parameters
//      it walks the graph from `outputs` and notes the parameters it does not reach.
//   3. A post-accumulate-grad hook per parameter (lesson 06) runs when the parameter's
//      gradient is complete: mark_variable_ready copies grad / world_size into the
//      parameter's slice (or, with gradient_as_bucket_view, makes grad that slice). The
//      first hook of the iteration also marks every unused parameter ready (slice = 0).
//   4. When the last parameter of a bucket is ready, the bucket is ready. Buckets are
//      launched (all_reduce_async, SUM) IN BUCKET ORDER ONLY: bucket b+1 waits for bucket
//      b even if it became ready first, so every rank issues the same collectives in the
//      same order (process_group.h, rule 1), whatever order its gradients came in.
//   5. When the last bucket has been launched (with find_unused_parameters, the map of
//      locally used parameters is all-reduced after it), the reducer takes the buckets in
//      order: it waits for one, then writes its means back into the gradients (a copy, or
//      nothing at all with gradient_as_bucket_view), while the buckets after it may still
//      be on the wire. A parameter no rank used keeps its gradient as it was (undefined
//      after zero_grad). This happens inside the last hook, so backward() returns with
//      the gradients synchronised.
//   6. rebuild_buckets(), once, before the second iteration: the buckets are recomputed
//      in the order gradients really became ready in iteration 1, and rank 0's layout is
//      broadcast so every rank adopts the same buckets even if their orders differed.
//      (Skipped with find_unused_parameters, whose order may change every iteration,
//      as in torch.)
//
// ERRORS (ConfigError, naming this rank and the parameters by name)
//   - prepare_for_backward while the previous iteration's reduction never finished
//     (a parameter got no gradient and find_unused_parameters is off): torch's "Expected
//     to have finished reduction in the prior iteration before starting a new one ...
//     find_unused_parameters ...", listing the parameters that did not receive a gradient.
//     Without this check the job would hang in the next all-reduce.
//   - a parameter marked ready twice in one iteration ("Expected to mark a variable ready
//     only once ..."), naming it.
//   - the final wait inherits the backend's TimeoutError / PeerClosedError.
//
// no_sync: a backward without prepare_for_backward runs no hook work: gradients just
// accumulate in grad(), and the next synchronised backward reduces the accumulated sum.
//
// COMMUNICATION HOOKS (torch's DistributedDataParallel.register_comm_hook)
//   register_comm_hook(hook), once, before the first backward, replaces step 4's
//   all-reduce: each bucket is handed to the hook as a GradBucket, in bucket order, and
//   the hook returns the Work of its reduction. As in torch, the reducer then copies the
//   local gradients into the bucket WITHOUT dividing (grad_scale() is 1): the hook sums
//   over ranks and divides by the world size (or compresses, or anything else), and when
//   its Work's wait() returns the bucket's buffer must hold the mean. The hook runs on the
//   backward's thread: it may launch asynchronous work and return at once (the default
//   does: all_reduce_async), and that work must complete in the order the hooks were
//   called, as the group's all-reduces do.
//
// Thread safety: not synchronised. Every call, and backward(), on one thread: the
// thread that uses the ProcessGroup. The group and the parameters must outlive the
// Reducer; the destructor removes the hooks and waits for all-reduces still in flight.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bucket_assignment.h"
#include "process_group.h"
#include "tensor.h"
#include "trace_recorder.h"
#include "variable.h"

namespace course {

struct ReducerOptions {
  /// The first bucket's limit (torch: dist._DEFAULT_FIRST_BUCKET_BYTES, 1 MiB): small, so
  /// the first all-reduce starts early in backward.
  int64_t first_bucket_bytes = int64_t{1} << 20;
  /// Every later bucket's limit (torch: bucket_cap_mb = 25). 0: one bucket per parameter.
  int64_t bucket_cap_bytes = int64_t{25} << 20;
  /// Walk the graph after forward and mark unreached parameters ready (see above).
  bool find_unused_parameters = false;
  /// Gradients become views into the buckets: no copy back, and no second copy of the
  /// gradients in memory.
  bool gradient_as_bucket_view = false;
  /// Records hooks, per-layer backward, all-reduces and the final wait (may be null).
  TraceRecorder* trace = nullptr;
  /// Bounds the final wait for each bucket.
  Millis timeout = default_timeout();
};

/// Where one synchronised backward's communication time went, as the thread that runs
/// backward saw it (the all-reduces themselves run on the process group's thread).
/// Seconds, of the last iteration that finished.
struct ReducerStepTimes {
  double hooks = 0;      ///< inside the hooks: gradients into buckets, launches (not the wait)
  double wait = 0;       ///< the last bucket's all-reduce (run in the last hook) and the
                         ///< final wait for the others still in flight: exposed
  double copy_back = 0;  ///< the means written back into the gradients after the wait
  int launched = 0;      ///< all-reduces launched (buckets, plus the used map's)
};

/// Where a parameter's gradient lives in the buckets (torch's VariableLocator).
struct VariableLocator {
  size_t bucket_index = 0;        ///< which bucket
  size_t intra_bucket_index = 0;  ///< its position in that bucket's params (and offsets)
};

/// One bucket handed to a communication hook (torch's GradBucket).
struct GradBucket {
  size_t index = 0;              ///< its position in launch order
  bool is_last = false;          ///< the iteration's last bucket
  Tensor buffer;                 ///< flat: the parameters' local gradients, not divided
  std::vector<size_t> params;    ///< parameter indices, in the order of their slices
  std::vector<int64_t> offsets;  ///< each slice's first element in buffer
  std::vector<Shape> shapes;     ///< each parameter's shape (a slice is a row-major view)
};

/// Reduces one bucket: returns the Work whose wait() leaves the mean over ranks in
/// bucket.buffer (see COMMUNICATION HOOKS above).
using CommHook = std::function<WorkPtr(GradBucket& bucket)>;

/// One bucket as the reducer sees it (for tests and the driver's printout).
struct BucketInfo {
  BucketIndices params;  ///< parameter indices, in the order of their slices
  int64_t bytes = 0;
};

class Reducer {
 public:
  /// Registers one hook per parameter and builds the initial buckets.
  /// REQUIRES: the same parameters (names, shapes, order) on every rank of `group`; each a
  /// leaf that requires grad; at least one.
  Reducer(std::vector<std::pair<std::string, Variable>> params, ProcessGroup& group,
          ReducerOptions options = {});
  ~Reducer();
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  /// Step 6. Call before forward on every rank at the same point (it may broadcast).
  /// Returns true when it rebuilt the buckets (once, after the first full iteration).
  bool rebuild_buckets();

  /// Step 2: arms the hooks for the next backward. `outputs` are the forward's outputs
  /// (used only with find_unused_parameters; none given: no walk, every parameter counts
  /// as used on this rank). Calls ensure_prior_reduction_finished() first.
  void prepare_for_backward(const std::vector<Variable>& outputs);

  /// Replaces each bucket's all-reduce with `hook` (see COMMUNICATION HOOKS above). Once,
  /// before the first backward: ConfigError, naming the rank, when a hook is registered
  /// already (torch: "can only be called once") or the hooks have been armed.
  void register_comm_hook(CommHook hook);
  /// What mark_variable_ready multiplies a gradient by on its way into the bucket:
  /// 1 / world size, or 1 with a communication hook (the hook divides).
  float grad_scale() const { return grad_scale_; }

  /// Throws the "Expected to have finished reduction in the prior iteration" ConfigError
  /// described above when the hooks are armed and some parameter never became ready.
  void ensure_prior_reduction_finished() const;

  /// The current buckets, in launch order.
  std::vector<BucketInfo> buckets() const;
  /// This iteration's log, in the order things happened: the buckets as they became
  /// ready (mark_variable_ready appends b to ready_log_: part of the exercise, checked by
  /// the tests), and as their all-reduces were launched (launch_bucket, given).
  const std::vector<size_t>& ready_log() const { return ready_log_; }
  const std::vector<size_t>& launch_log() const { return launch_log_; }
  /// Parameters unused on this rank in this iteration (find_unused_parameters).
  const std::vector<size_t>& unused_parameters() const { return unused_; }
  /// True while the hooks are armed and the reduction has not finished.
  bool reduction_pending() const { return require_finalize_; }
  /// Where the last finished iteration's time went (see ReducerStepTimes).
  const ReducerStepTimes& last_step_times() const { return last_times_; }
  int world_size() const { return world_; }

 private:
  struct Bucket {
    BucketIndices params;
    std::vector<int64_t> offsets;  // element offset of each parameter's slice
    Tensor flat;                   // the bucket's buffer, all its slices back to back
    Tensor own;                    // the buffer allocated for it (flat, unless adopted)
    size_t pending = 0;            // parameters not yet ready this iteration
    WorkPtr work;                  // the all-reduce in flight
    double launch_us = 0;
  };

  void initialize_buckets(const std::vector<BucketIndices>& assignment);
  /// Each parameter's gradient size in bytes, in params_ order (for the bucket assignment).
  std::vector<int64_t> param_bytes() const;
  Tensor slice(size_t index) const;  // parameter index's view into its bucket
  void autograd_hook(size_t index);

  // ---- The exercise (reducer.cpp) ---------------------------------------------------
  /// Step 3, one parameter's gradient is final (called from its hook, after record_ready;
  /// for an unused parameter, from the first hook).
  /// REQUIRES: hooks armed; `index` not yet ready in this iteration.
  /// EFFECT: its bucket slice holds grad * grad_scale() (grad / world; zeros when grad() is
  ///   undefined), in one pass (mul_out); with gradient_as_bucket_view, grad() becomes that
  ///   slice (when it already is, the slice is scaled in place). When it was the bucket's last
  ///   pending parameter, the bucket is appended to ready_log_ and launch_ready_buckets() runs.
  void mark_variable_ready(size_t index);
  /// Step 4. Launches, in bucket order, every bucket from next_bucket_ on whose pending
  /// count is 0 (launch_bucket), stopping at the first that is not complete. Once the last
  /// bucket is launched: with find_unused_parameters all_reduce_local_used_map(), then
  /// finalize_backward().
  void launch_ready_buckets();
  /// Step 5, once per iteration, inside the last hook.
  /// REQUIRES: every bucket launched.
  /// EFFECT: for each bucket in order, waits for its all-reduce (wait_for_bucket), then for
  ///   each of its parameters except those no rank used (local_used_ 0,
  ///   find_unused_parameters), grad() holds its mean: copied from its slice, or the slice
  ///   itself with gradient_as_bucket_view, or a copy of the slice when grad() is
  ///   undefined (used elsewhere, unused here). Bucket b's copies run while the buckets
  ///   after it may still be on the wire. Ends with disarm_hooks(start) so the iteration
  ///   counts as finished.
  void finalize_backward();
  /// Step 2's graph walk: the indices (ascending) of the parameters that no AccumulateGrad
  /// reachable from `outputs` belongs to; none when `outputs` is empty.
  std::vector<size_t> search_unused_parameters(const std::vector<Variable>& outputs) const;

  // ---- Given (reducer_given.cpp) -----------------------------------------------------
  /// rebuild_buckets' broadcast: every rank's `assignment` becomes rank 0's (torch's
  /// sync_bucket_indices). Collective: every rank calls it at the same point. The layout
  /// travels as floats: [bucket count, each bucket's size..., the indices in bucket
  /// order...], padded to 2P + 1 (at most P buckets; indices below 2^24 are exact).
  void sync_bucket_indices(std::vector<BucketIndices>& assignment);
  /// find_unused_parameters, after the last bucket's launch: the map of locally used
  /// parameters (local_used_) all-reduced (SUM) in the background, into used_work_
  /// (torch's all_reduce_local_used_map); wait_for_bucket waits for it.
  void all_reduce_local_used_map();
  /// rebuild_buckets' gate: false unless this is the moment (once, after an iteration in
  /// which every parameter became ready, not with find_unused_parameters, whose order can
  /// change between iterations, and not while a reduction is pending). When true, marks
  /// the rebuild done and waits for the all-reduces in flight: their buffers go away.
  bool start_rebuild();
  /// prepare_for_backward's start: ensure_prior_reduction_finished(), then buckets pending
  /// again, no parameter ready, logs cleared and, with find_unused_parameters, the used
  /// map (local_used_) all zeros.
  void reset_iteration();
  /// prepare_for_backward's end: the hooks armed for this backward, finalize required, the
  /// trace's clock restarted.
  void arm_hooks();
  /// finalize_backward's end: the trace's watchers joined, the hooks disarmed, and
  /// (tracing) the final phase since `start_us`.
  void disarm_hooks(double start_us);
  /// mark_variable_ready's bookkeeping: a ConfigError if index is ready already this
  /// iteration, else marks it and, before the rebuild, logs it in ready_order_.
  void record_ready(size_t index);
  /// finalize_backward's wait for bucket b's all-reduce (rethrowing its error; the
  /// timeout is options_.timeout), and with find_unused_parameters for the used map's
  /// too, so local_used_ holds the sum over ranks once it returns. The Work is released.
  /// On the tcp backend a wait that comes before the group's thread has started the
  /// all-reduce runs it on this thread instead (serial_executor.h, invariant 4).
  void wait_for_bucket(size_t b);
  /// Launches bucket b's all-reduce (SUM, async), or hands it to the communication hook,
  /// and logs it in launch_log_ (and the trace).
  void launch_bucket(size_t b);
  /// A bucket of one parameter needs no buffer of its own: when that parameter's hook runs
  /// with a gradient, the gradient becomes the bucket (flat shares its storage), so
  /// mark_variable_ready finds the slice already holding it (divides in place) and the
  /// all-reduce leaves the mean where the optimizer reads it: no copy in, no copy back.
  /// reset_iteration points every bucket at its own buffer again.
  void adopt_gradient(size_t index);
  void wait_in_flight() noexcept;
  std::string parameter_list(const std::vector<size_t>& indices) const;
  void trace_hook(size_t index, double start_us);

  std::vector<std::pair<std::string, Variable>> params_;
  ProcessGroup& group_;
  const ReducerOptions options_;
  const int world_;
  std::vector<int> hook_ids_;
  CommHook comm_hook_;  // empty: the plain all-reduce
  float grad_scale_;    // 1 / world_, or 1 with a comm hook

  std::vector<Bucket> buckets_;
  std::vector<VariableLocator> variable_locators_;  // parameter index -> where it lives

  // Per iteration.
  bool expect_hooks_ = false;      // armed by prepare_for_backward
  bool require_finalize_ = false;  // armed and not yet finalized
  size_t next_bucket_ = 0;         // the next bucket to launch
  std::vector<bool> ready_;
  std::vector<size_t> ready_log_, launch_log_;
  std::vector<size_t> unused_;
  bool unused_marked_ = false;
  Tensor local_used_;  // find_unused_parameters: 1 where this rank used the parameter
  WorkPtr used_work_;

  // Rebuilding (step 6).
  bool has_rebuilt_ = false;
  std::vector<size_t> ready_order_;  // parameters in the order they became ready, iteration 1

  // Timing (ReducerStepTimes): this iteration's, and the last finished one's.
  ReducerStepTimes times_, last_times_;
  double finalize_us_ = 0;  // finalize_backward's share of the hook that ran it
  double waited_us_ = 0;    // wait_for_bucket's share of finalize_backward

  // Tracing.
  std::vector<std::thread> watchers_;
  double last_trace_us_ = 0;
};

}  // namespace course
