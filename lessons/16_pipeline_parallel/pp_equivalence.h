// pp_equivalence.h: lesson 16, given: a pipeline (x data parallelism) against one process
// on the whole batch, the check of the self-check and the tests.
//
//   DeviceMesh mesh = init_pipeline_mesh(world, /*pp=*/2);   // stage_runner.h
//   EquivalenceCase c;  c.schedule = "gpipe";
//   const double diff = compare_with_one_process(mesh, c);   // <= kPipelineTolerance
//
// Both sides start from the same initialisation (every stage draws the whole MLP from one
// seed, stage_module.h) and take c.steps SGD steps on the same synthetic batches; the
// pipeline's gradients are those of the whole batch's mean loss (the loss scaled by 1/M,
// pipeline_executor.h; the replicas' average, stage_runner.h), so the parameters agree up
// to float32 rounding.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "device_mesh.h"

namespace course {

/// What compare_with_one_process runs.
struct EquivalenceCase {
  std::vector<int64_t> sizes = {24, 20, 18, 16, 14, 12, 10};  ///< the MLP
  std::string schedule = "1f1b";                              ///< "gpipe" or "1f1b"
  int micro_batches = 4;                                      ///< M
  int64_t micro_batch_rows = 3;                               ///< b
  int steps = 20;                                             ///< SGD steps of both
  float lr = 0.05f;                                           ///< SGD's learning rate
  uint64_t seed = 5;                                          ///< the MLP's seed
};

/// Largest |pipeline - one process| over this stage's parameters after c.steps SGD steps
/// of both from the same initialisation, on the same synthetic batches (values depending
/// on step, row and column). The pipeline: P = mesh.size("pp") stages balanced by
/// parameters, D = mesh.size("dp") replicas, replica d taking rows [d*M*b, (d+1)*M*b) of
/// each batch of D*M*b rows; one process trains make_mlp(sizes) on the whole batch with
/// the mean loss. Collective over the mesh: the largest difference over every rank, the
/// same value on every rank.
double compare_with_one_process(const DeviceMesh& mesh, const EquivalenceCase& c);

}  // namespace course
