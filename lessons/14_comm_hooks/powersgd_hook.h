// powersgd_hook.h: lesson 14: PowerSGD (torch's powerSGD_hook.py), a bucket's matrices sent
// as low-rank factors with error feedback. The overview of the lesson (the seam, the
// threads) is comm_hooks.h.
//
//   SerialExecutor runner("comm hooks");                       // the hooks' own thread
//   PowerSgd powersgd(*group, runner, {.rank = 4, .start_iter = 10});
//   ddp.register_comm_hook(powersgd.hook());
//
// PowerSGD (Vogels, Karimireddy, Jaggi, NeurIPS 2019; torch's powerSGD_hook), per bucket:
//   for the first start_iter iterations: the plain all-reduce (vanilla SGD's warm-up);
//   then   M += error                      error feedback: what was not sent last time
//          each parameter viewed as a matrix n x m (n = its first dimension) is
//            compressed when n*m >= min_compression_rate * r*(n + m), r = min(n, m, rank);
//            every other parameter (biases, small matrices) is all-reduced as it is
//          P = M Q             for every compressed M (Q: m x r, kept from the last step)
//          all-reduce the uncompressed values, then every P (one flat buffer each)
//          orthogonalise each P (Gram-Schmidt on its columns, twice)
//          Q = Mᵀ P;  all-reduce every Q;  Q /= N
//          error = M (with the old error) - M_approx, M_approx = P Qᵀ (the mean's rank-r
//          approximation) written into the bucket (write_low_rank, in one pass); for the
//          uncompressed values, error = M - their mean (torch's error covers the whole
//          bucket: these cancel over ranks)
//   Bytes: r*(n + m) floats instead of n*m per compressed matrix.
//
// What this is not: torch's implementation (no batched same-shape matrices, no CUDA
// streams) nor its only options: the ones a training run needs are here, named as in
// torch's PowerSGDState.
//
// Thread safety: a PowerSgd belongs to one Reducer; its state is touched only by the
// runner's thread (and the training thread once backward has returned).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "process_group.h"
#include "reducer.h"
#include "serial_executor.h"
#include "tensor.h"

namespace course {

// ---- Given (powersgd_hook_given.cpp) -------------------------------------------------

/// PowerSGD's last step for one compressed matrix: error = m - p qᵀ, then m = p qᵀ (the
/// rank-r approximation written into the bucket). One pass over m and error, each row of
/// p qᵀ made in registers from qᵀ (which stays in cache): the arithmetic of copy_, gemm and
/// add_, with 3 passes over memory instead of about 7 (the matrices are the whole bucket:
/// this pass is a third of PowerSGD's own time). No fused multiply-adds, so every CPU
/// writes the same bits for the same p and q (the ranks' buckets must stay identical).
/// REQUIRES: m and error [n, k], p [n, r], q [k, r], on the CPU (else a ConfigError).
void write_low_rank(const Tensor& m, const Tensor& p, const Tensor& q, const Tensor& error);

/// torch's PowerSGDState, the options a run needs.
struct PowerSgdOptions {
  int rank = 1;                     ///< matrix_approximation_rank
  int64_t start_iter = 10;          ///< start_powerSGD_iter: plain all-reduce before it
  double min_compression_rate = 2;  ///< compress only when n*m >= this * r*(n + m)
  bool warm_start = true;           ///< reuse each Q from the step before (else random)
  uint64_t seed = 0;                ///< the Qs' random start, the same on every rank
};

/// One matrix of a bucket as PowerSGD sees it.
struct PowerSgdMatrix {
  size_t param = 0;      ///< its index in the bucket's params/offsets/shapes
  int64_t n = 0, m = 0;  ///< rows (the parameter's first dimension) and columns
  int64_t rank = 0;      ///< r = min(n, m, options.rank)
};

/// How one bucket splits: matrices to compress, and everything else (sent as it is).
struct PowerSgdPlan {
  std::vector<PowerSgdMatrix> compressed;
  std::vector<size_t> uncompressed;  ///< indices into the bucket's params
  int64_t p_elements = 0;            ///< sum of n*r over `compressed`
  int64_t q_elements = 0;            ///< sum of m*r
  int64_t uncompressed_elements = 0;
  /// Floats this bucket all-reduces per step: uncompressed + P + Q.
  int64_t sent_elements() const { return uncompressed_elements + p_elements + q_elements; }
};

/// Splits `bucket` as torch's _should_compress does (see the top of this file).
PowerSgdPlan plan_powersgd(const GradBucket& bucket, const PowerSgdOptions& options);

class PowerSgd {
 public:
  /// `group` and `runner` must outlive this. REQUIRES: options.rank >= 1.
  PowerSgd(ProcessGroup& group, SerialExecutor& runner, PowerSgdOptions options);

  /// The hook: reduce_bucket(bucket) on the runner's thread; its Work.
  CommHook hook();

  /// Iterations seen so far (a bucket marked is_last ends one).
  int64_t iteration() const { return iteration_; }
  /// Bucket `index`'s error feedback (empty before its first compressed step).
  const Tensor& error(size_t index) const;
  /// Floats the last iteration all-reduced, over every bucket.
  int64_t last_sent_elements() const { return last_sent_; }

  // ---- The exercise (powersgd_hook.cpp) --------------------------------------------
  /// One bucket, on the runner's thread. REQUIRES: collective (every rank, the same bucket).
  /// EFFECT: before start_iter, the plain mean (buffer / N, all-reduced); after, the steps
  ///   at the top of this file: the bucket holds the rank-r approximation of the mean of
  ///   every compressed matrix and the exact mean of every other parameter, and error(b)
  ///   holds what this rank's input (with the previous error) lost. Calls end_bucket().
  void reduce_bucket(GradBucket& bucket);

 private:
  /// The bucket's state: its plan, error (zeros at first) and one P and Q per compressed
  /// matrix, each a view into one flat buffer (p_flat, q_flat) so that a single
  /// all-reduce carries them all. Qs start random (seed, bucket index: the same on every
  /// rank) and orthogonalised; with warm_start they are kept between steps.
  struct BucketState {
    std::vector<size_t> params;  // the bucket's parameters when the state was made
    PowerSgdPlan plan;
    Tensor error;
    Tensor p_flat, q_flat;
    std::vector<Tensor> ps, qs;  // [n, r] and [m, r] views into p_flat, q_flat
    bool qs_ready = false;       // false: start_qs() draws them
  };
  // ---- Given (powersgd_hook_given.cpp) ---------------------------------------------
  /// The state of `bucket` (created on its first call, checked against the bucket's
  /// parameters after: a ConfigError naming the rank if the buckets changed).
  BucketState& state_for(const GradBucket& bucket);
  /// Qs at the start of a compressed step: random and orthogonalised the first time (or
  /// every time without warm_start); with warm_start, the last step's, orthogonalised.
  void start_qs(BucketState& state, size_t bucket_index);
  /// Counts the elements sent and, after the last bucket, the iteration.
  void end_bucket(const GradBucket& bucket, int64_t sent_elements);
  /// `matrix`'s slice of `flat` (the bucket's buffer, or its error: the same layout) as an
  /// n x m matrix (row-major, shares storage).
  static Tensor matrix_view(const Tensor& flat, const GradBucket& bucket,
                            const PowerSgdMatrix& matrix);

  ProcessGroup& group_;
  SerialExecutor& runner_;
  const PowerSgdOptions options_;
  std::map<size_t, BucketState> states_;
  int64_t iteration_ = 0;
  int64_t sent_this_iteration_ = 0, last_sent_ = 0;
};

// ---- The exercise (powersgd_hook.cpp) ------------------------------------------------

/// Gram-Schmidt on the columns of the 2-D tensor `m` (n x r), in place, in double
/// precision: column j minus its projections on the columns before it (modified
/// Gram-Schmidt: each projection taken from what the previous ones left), the whole pass
/// twice, then divided by its norm. One pass loses orthogonality in proportion to how
/// nearly dependent the columns are: the residue of a column that lies almost in the span
/// of the others is mostly rounding, and normalised it points partly along them, so P Pᵀ is
/// no longer a projection and PowerSGD at full rank is no longer exact. The second pass
/// removes that rounding ("twice is enough", Giraud et al. 2005): every column left is
/// orthogonal to the others to double's precision, whatever the input's rank, as the Q of
/// a QR decomposition is (torch's _orthogonalize uses torch.linalg.qr above rank 2). A
/// column with less than 1e-10 of its norm left (in the span of the ones before it to
/// double's precision, or zero) becomes zeros.
/// REQUIRES: m 2-D, contiguous float32 on the CPU.
/// EFFECT: the non-zero columns are orthonormal (to float32's precision) and span what
///   the input's columns span.
void orthogonalize(const Tensor& m);

}  // namespace course
