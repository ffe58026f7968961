// gradient_sync.h: lesson 09, the seam between the shared training loop (ddp_training.h)
// and whatever keeps gradients equal across ranks: lesson 09's NaiveDdp (after backward),
// lesson 10's Reducer (during backward). Given.
//
// What this is not: a process group; an implementation owns one (or a reference to one).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "module.h"
#include "process_group.h"

namespace course {

/// Synchronisation done inside backward (lesson 10's Reducer), where the training loop's
/// clock cannot tell it from backward's own work. Seconds, of the last step.
struct InBackwardSync {
  double hooks = 0;      ///< in the hooks: gradients into buckets, all-reduces launched
  double wait = 0;       ///< at the end of backward, waiting for all-reduces still in flight
  double copy_back = 0;  ///< after that wait: the means written into the gradients
};

/// How a data-parallel wrapper keeps gradients in step; the training loop calls these
/// around every backward pass, in this order, on every rank:
///   prepare_for_backward();  loss.backward();  finish_backward();  optimizer.step();
class GradientSync {
 public:
  virtual ~GradientSync() = default;
  /// Before loss.backward() (lesson 10's Reducer arms its buckets here). Default: nothing.
  virtual void prepare_for_backward() {}
  /// After loss.backward(). Returns when every parameter's grad() holds the mean of that
  /// gradient over all ranks. Throws (on every rank, naming the parameter) when a
  /// parameter has no gradient on some rank.
  virtual void finish_backward() = 0;
  /// Collective calls one finish_backward makes (for the comparison table).
  virtual int64_t messages_per_step() const = 0;
  /// One line for the log: "naive DDP, one all-reduce per parameter (6 per step)".
  virtual std::string describe() const = 0;
  /// What the last backward spent on synchronisation inside itself. Default: nothing
  /// (a wrapper that synchronises after backward, in finish_backward).
  virtual std::optional<InBackwardSync> in_backward_sync() const { return std::nullopt; }
  /// Whether finish_backward leaves the exact mean (up to float32's summation order).
  /// Default: true. A sync that compresses the gradients (lesson 14's hooks) says false:
  /// lesson 09's training run then prints its difference from one process instead of
  /// requiring it within tolerance.
  virtual bool exact() const { return true; }
};

/// Builds the wrapper around `model` on every rank. It must make every rank's parameters
/// equal to rank 0's (DDP's broadcast at construction).
using SyncFactory = std::function<std::unique_ptr<GradientSync>(Module& model, ProcessGroup& pg)>;

}  // namespace course
