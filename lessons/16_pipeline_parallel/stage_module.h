// stage_module.h: lesson 16, given: cutting lesson 07's MLP by depth into P contiguous
// stages, and the module one stage runs.
//
//   std::vector<int64_t> sizes = {784, 256, 256, 256, 256, 256, 256, 256, 256, 10};
//   std::vector<int> bounds = partition_layers(layer_parameter_counts(sizes), /*stages=*/4);
//   StageModule stage(sizes, /*seed=*/42, bounds[s], bounds[s + 1]);   // on rank s
//
// A LAYER is Linear(sizes[i], sizes[i+1]) and, but after the last, a ReLU: the MLP of
// make_mlp has sizes.size() - 1 layers. Stage s holds layers [bounds[s], bounds[s+1]).
//
//   layers     0        1        2        3        4        5        6        7        8
//   params   201k      66k      66k      66k      66k      66k      66k      66k     2.6k
//   P = 4 | stage 0 | stage 1                  | stage 2                  | stage 3       |
//           [0, 1)    [1, 4)                     [4, 7)                     [7, 9)
//
// BALANCE. The pipeline runs as fast as its slowest stage, so partition_layers picks the
// contiguous cut whose most expensive stage is cheapest (dynamic programming over the cut
// points). The cost of a layer is its parameter count (what torch's pipelining splits by
// when asked to balance by size) or its measured time (measure_layer_seconds); the bench
// compares both.
//
// SAME MODEL FOR ANY P. Every rank draws the whole MLP from one seed exactly as make_mlp
// does (same Rng, same order) and keeps only its stage's layers, so stage 2 of P = 4 holds
// the very numbers layers [4, 7) of one process hold. Parameter names are the full model's
// ("6.weight"), so a stage's state dict is a slice of the one-process checkpoint.
//
// What this is not: a tracer that cuts an arbitrary model (torch's pipeline() API); the
// model here is a chain of layers by construction. Nor torch's PipelineStage, which is
// the module with its stage index, group and buffers: here the module is StageModule, its
// place in the pipeline the device mesh's "pp" coordinate (stage_runner.h), its buffers
// and messages the executor's (pipeline_executor.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "module.h"
#include "sequential.h"

namespace course {

/// The parameter count of each layer of the MLP `sizes`: in*out + out.
std::vector<double> layer_parameter_counts(const std::vector<int64_t>& sizes);

/// Seconds of one forward and backward of each layer on a batch of `rows` (the median
/// of a few runs, on this process).
std::vector<double> measure_layer_seconds(const std::vector<int64_t>& sizes, int64_t rows);

/// The cut of layers 0..costs.size()-1 into `stages` contiguous non-empty stages that
/// makes the largest stage cost smallest: stages+1 bounds, bounds[0] = 0, bounds[stages] =
/// costs.size(). Ties go to the cut whose early stages are smaller. REQUIRES: 1 <= stages
/// <= costs.size() (ConfigError naming both otherwise).
std::vector<int> partition_layers(const std::vector<double>& costs, int stages);

/// Layers [first, last) of the MLP `sizes` drawn from Rng(seed) as make_mlp draws it: the
/// module slice one stage runs (torch's submodule that a PipelineStage wraps).
class StageModule : public Module {
 public:
  /// REQUIRES: 0 <= first < last <= sizes.size() - 1.
  StageModule(const std::vector<int64_t>& sizes, uint64_t seed, int first, int last);

  /// The stage's layers in order. Records `saved_bytes()` of this call.
  Variable forward(const Variable& x) override;
  std::string describe() const override;

  int first_layer() const { return first_; }
  int last_layer() const { return last_; }
  /// Features in and out: sizes[first] and sizes[last].
  int64_t in_features() const { return in_; }
  int64_t out_features() const { return out_; }
  /// Whether this stage ends with the model's logits (the last stage: it computes the loss).
  bool ends_model() const { return ends_model_; }
  /// Bytes of the tensors the last forward() keeps for its backward: its input and each
  /// layer's outputs (the Linear's and the ReLU's). What a stage must hold per micro-batch
  /// in flight.
  int64_t saved_bytes() const { return saved_bytes_; }

 private:
  int first_, last_;
  int64_t in_, out_;
  bool ends_model_;
  std::vector<std::shared_ptr<Module>> layers_;
  int64_t saved_bytes_ = 0;
};

}  // namespace course
