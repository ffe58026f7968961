// engine.h: lesson 06, the backward pass (PyTorch's autograd engine, on one thread).
//
//   loss.backward();            // == run_backward(loss, Tensor())
//
// run_backward walks the graph that the forward pass recorded (node.h) from the root's
// grad_fn back to the leaves, applying each node's backward formula once, after every
// gradient flowing into that node has arrived and been summed:
//
//   1. Dependencies: count, for every node reachable from the root, how many edges
//      point at it (a node used twice in the forward pass, like x in x*x, gets two).
//   2. Sweep: start with the root's node holding the seed gradient. Repeatedly take a
//      ready node (all its dependencies delivered), call apply() on its summed input
//      gradient, and add each returned gradient into the buffer of the next node; when a
//      next node's count reaches zero it is ready.
//   3. Order: among ready nodes, the largest sequence_nr() first (the most recently
//      created), so gradients come out in reverse order of the forward pass, and
//      AccumulateGrad nodes (the largest numbers) run as soon as they are ready. Among
//      equal numbers, the most recently readied first.
//
// Step 1 and 2 together are Kahn's topological sort: no node runs before all the nodes
// that feed it, which is the chain rule's requirement. micrograd does a depth-first
// topological sort instead; counting dependencies lets hooks fire as early as possible.
//
// The graph is kept after backward (as if PyTorch's retain_graph=True), so calling
// backward() twice accumulates twice. Gradients are computed without recording (there is
// no double backward).
//
// Errors (ConfigError): the root does not require grad (nothing was recorded: was it
// made under NoGradGuard, or from leaves without requires_grad?); no grad_output for a
// root with more than one element; grad_output of the wrong shape.
#pragma once

#include "tensor.h"
#include "variable.h"

namespace course {

/// The gradient run_backward starts from: grad_output, or ones for a one-element root
/// when grad_output is undefined. A ConfigError when root does not require grad (no graph
/// was recorded) or the shapes do not fit.
Tensor backward_seed(const Variable& root, const Tensor& grad_output);

/// Backpropagates from `root` with seed gradient `grad_output` (undefined: 1 for a
/// one-element root). Leaves' gradients accumulate into their grad().
void run_backward(const Variable& root, const Tensor& grad_output);

}  // namespace course
