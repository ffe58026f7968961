// naive_ddp.h: lesson 09, part 2: DistributedDataParallel the simple way: one model per
// rank (process), every gradient averaged across ranks after backward has finished.
//
//   auto model = make_mlp({784, 512, 512, 10}, rng);          // different on every rank
//   NaiveDdp ddp(*model, pg, GradSync::flat);                  // now equal to rank 0's
//   Sgd opt(model->parameters(), {.lr = 0.05f, .momentum = 0.9f});
//   opt.zero_grad();
//   cross_entropy(ddp.forward(x), y).backward();               // this rank's batch
//   ddp.sync_gradients();                                      // grad = mean over ranks
//   opt.step();                                                // same update everywhere
//
// Why this trains like one process with batch N*B: the loss of that process is the mean
// over N*B examples, so its gradient is the mean of N per-rank means of B examples each:
//
//   g = 1/(N B) sum_{all N B examples} grad_i = 1/N sum_r ( 1/B sum_{rank r's B} grad_i )
//                                             = 1/N sum_r g_r   =   all_reduce(g_r, SUM) / N
//
// Every rank starts from the same parameters (the broadcast below), applies the same
// averaged gradient with its own optimizer (same state, same rule), and so stays equal to
// every other rank without ever sending a parameter again. Only gradients move.
//
// Construction, on every rank, collectively (every rank must construct at the same time):
//   1. verify_same_parameters (model_check.h): count, names and shapes agree on every
//      rank, else ConfigError naming the first rank and parameter that differ;
//   2. broadcast every parameter's data, then every buffer, from rank 0, in
//      named_parameters() order (torch: _sync_module_states), so ranks that
//      initialised differently (or only rank 0 loaded a checkpoint) agree.
//
// sync_gradients(), after backward, collectively:
//   1. check_gradients_present (model_check.h): every rank has a grad() for every
//      parameter, else ConfigError on every rank naming the parameter and the ranks
//      without it (never a hang: a rank that skipped an all-reduce would leave the others
//      waiting in theirs);
//   2. average, in one of two variants, side by side:
//
//      per_param: for each parameter p, in order:  all_reduce(p.grad, SUM); p.grad /= N
//                 P messages per step: P times the latency term alpha of lesson 05's cost
//      flat:      copy every grad into one buffer (in order, back to back), one
//                 all_reduce(SUM) of it, scale by 1/N, copy each slice back
//                 one message: alpha once, the same 2(N-1)/N * bytes * beta bandwidth term
//
//      [ 0.weight | 0.bias | 2.weight | 2.bias | 4.weight | 4.bias ]   the flat buffer
//
//   The averaged gradient is written into the parameter's existing grad() tensor (in
//   place: the optimizer reads it from there).
//
// Errors: every collective error of the process group propagates (ProcessGroup throws;
// the first error in a tcp group shuts it down, so peers fail instead of hanging).
// Thread safety: one thread per rank calls everything; the module must not change
// structure after construction.
// What this is not: lesson 10's Reducer (no buckets, no overlap with backward, no unused
// parameters: every parameter must get a gradient on every rank).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gradient_sync.h"
#include "module.h"
#include "process_group.h"
#include "tensor.h"

namespace course {

enum class GradSync {
  per_param,  ///< one all-reduce per parameter
  flat,       ///< one all-reduce of every gradient in one buffer
};

/// "per-param" or "flat" (the driver's --variant); parse_grad_sync throws ConfigError for
/// anything else.
std::string grad_sync_name(GradSync variant);
GradSync parse_grad_sync(const std::string& name);

class NaiveDdp : public GradientSync {
 public:
  /// Steps 1 and 2 of "Construction" above. `model` and `pg` must outlive this object.
  NaiveDdp(Module& model, ProcessGroup& pg, GradSync variant = GradSync::per_param);

  /// The wrapped model's forward (DDP adds nothing to the forward pass here).
  Variable forward(const Variable& x) { return model_.forward(x); }
  Module& module() { return model_; }
  GradSync variant() const { return variant_; }

  /// After backward: every parameter's grad() becomes its mean over the ranks (above),
  /// by the variant chosen at construction.
  void sync_gradients();
  /// The two variants, callable directly. REQUIRES: every parameter has a grad() (on this
  /// rank; sync_gradients checks every rank first).
  void sync_gradients_per_param();
  void sync_gradients_flat();

  // GradientSync, for the shared training loop (ddp_training.h).
  void finish_backward() override { sync_gradients(); }
  int64_t messages_per_step() const override;
  std::string describe() const override;

 private:
  /// Construction step 2: rank 0's parameters and buffers to every rank.
  void broadcast_state();

  Module& model_;
  ProcessGroup& pg_;
  GradSync variant_;
  std::vector<std::pair<std::string, Variable>> params_;  ///< named_parameters(), once
  /// The flat variant's buffer: sync_gradients_flat sizes it to every gradient element,
  /// back to back (it starts empty; a resize to the same size after the first step keeps it).
  std::vector<float> flat_;
};

}  // namespace course
