// tp_equivalence.h: lesson 15, given: the tensor-parallel model against one process, the
// first check of ./lesson15's verdict (tp_training.h) and of the model's tests.
//
//   const double d = tp_equivalence_difference(o, shape, init, batches, mesh, world);
//   if (d > tp_tolerance(o)) ...                     // FAIL: not the serial model's steps
//
// One step per global batch (D x B examples) for the serial model on the whole batch and
// for the tensor-parallel model on the mesh, replica d (mesh.coordinate("dp")) training on
// rows [d*B, d*B + B), both from the same full initialisation; then the largest
// |TP - serial| over every parameter (the TP model's full state dict, gathered over its
// TP group), its maximum over the world.
#pragma once

#include <vector>

#include "data_loader.h"
#include "device_mesh.h"
#include "process_group.h"
#include "safetensors.h"
#include "tp_model.h"
#include "tp_training.h"

namespace course {

/// The steps ./lesson15 compares before it trains.
constexpr int kTpEquivalenceSteps = 3;

/// Largest |TP - serial| over every parameter after one step per batch of
/// `global_batches` from `init` (see the top of this file). Collective over every group of
/// `mesh` and over `world`; the same on every rank.
double tp_equivalence_difference(const TpTrainingOptions& o, const ModelShape& shape,
                                 const NamedTensors& init, const std::vector<Batch>& global_batches,
                                 const DeviceMesh& mesh, ProcessGroup& world);

/// The tolerance of that comparison: lesson 09's equivalence_tolerance (1e-5 for SGD,
/// lr / 4 for Adam). The TP model sums each product over the ranks' slices, in another
/// order than the serial one, so float32 rounding differs in the last bits.
double tp_tolerance(const TpTrainingOptions& o);

}  // namespace course
