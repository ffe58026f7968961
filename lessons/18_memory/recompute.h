// recompute.h: lesson 18, part 1 (your code in recompute.cpp): activation recomputation,
// torch.utils.checkpoint's idea on lesson 06's autograd.
//
//   // y = f(x) without keeping f's intermediate activations for backward:
//   Variable y = checkpoint([&](const std::vector<Variable>& in) { return block.forward(in[0]); },
//                           {x});
//   loss(y).backward();      // f runs forward again inside backward, then back-propagates
//
// FORWARD. checkpoint runs fn(inputs) with recording off (a NoGradGuard): no node of fn
// is made, so none of its activations is kept. The result is a new Variable whose grad_fn
// is one CheckpointBackward node, with one edge per input (to where each input's gradient
// goes), keeping only the inputs' tensors and fn itself.
//
// BACKWARD. CheckpointBackward::apply(g) recomputes: fresh leaves holding the saved input
// tensors (requiring grad where the node's input needed it), fn run on them again with
// recording on (an EnableGradGuard: the engine may run backward under a NoGradGuard), and
// backward from that result with the seed g. The parameters fn uses (captured by fn, not
// passed as inputs) receive their gradients as they would without checkpoint, through
// their AccumulateGrad nodes; the fresh leaves' gradients are the node's answer for its
// inputs (zeros for an input fn did not use). The recorded graph is dropped when apply
// returns.
//
// BIT-IDENTICAL. The recomputed forward repeats the same float operations on the same
// values in the same order (every op of the course is deterministic), so its activations
// are the same bits, its backward the same gradients, added into each parameter in the same
// order: the gradients equal those of the run without checkpoint, bit for bit. torch's
// checkpoint also replays the random-number state (preserve_rng_state) so that dropout
// drops the same elements twice; the course's GPT has no dropout, so fn must not draw
// random numbers (one that did would get other draws the second time).
//
// THE COST. One extra forward of fn per backward. What it saves: every tensor fn's nodes
// would have kept, less the inputs (which CheckpointBackward keeps). During the backward,
// one fn's activations live at a time.
//
// WHEN IT RECORDS. Whenever grad mode is on, even when no input requires grad: the
// parameters fn captures may (torch's non-reentrant checkpoint behaves so; its older
// reentrant form gave them no gradient then). Under a NoGradGuard it records nothing and
// is fn itself.
//
// ERRORS (ConfigError): an empty fn; an undefined input; a recomputed result whose shape
// differs from the first (fn is not a function of its inputs alone).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "node.h"
#include "tensor.h"
#include "variable.h"

namespace course {

/// What checkpoint runs: a function of its inputs (and of captured parameters).
using CheckpointFn = std::function<Variable(const std::vector<Variable>& inputs)>;

/// fn(inputs), keeping only the inputs for backward (see the top of this file).
Variable checkpoint(const CheckpointFn& fn, const std::vector<Variable>& inputs);

/// The node checkpoint records.
struct CheckpointBackward final : Node {
  CheckpointFn fn;             ///< what to run again
  std::vector<Tensor> inputs;  ///< the inputs' data, as the forward saw them
  Shape output_shape;          ///< the forward result's shape
  /// Recomputes fn and back-propagates g through it (see BACKWARD); dL/d(input i).
  std::vector<Tensor> apply(const Tensor& g) override;
  std::string name() const override { return "CheckpointBackward"; }
  /// The inputs: all a checkpointed region keeps.
  std::vector<Tensor> saved_tensors() const override { return inputs; }
};

}  // namespace course
