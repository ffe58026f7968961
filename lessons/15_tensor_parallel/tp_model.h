// tp_model.h: lesson 15, given: the model this lesson trains on Fashion-MNIST, whole (the
// serial oracle) and split across a tensor-parallel group.
//
//   ModelShape shape{.hidden = 128, .blocks = 2};
//   Rng rng(seed);
//   auto serial = make_serial_model(shape, rng);             // one process, the oracle
//   TensorParallelMlp tp_model(serial->state_dict(), shape, *tp);   // this rank's shards
//   Variable logits_t = tp_model.forward(x);                 // [B, Cp / T]
//   NamedTensors full = tp_model.full_state_dict();          // collective, unsharded names
//
// THE MODEL (names as a PyTorch module with a ModuleList would give them):
//
//   x [B, 784] ─ input: Linear(784, H) ─ ReLU ─> h        replicated on every rank
//   K times:    h = h + fc2(ReLU(fc1(h)))                 blocks.k.fc1: Column(H -> 4H)
//                                                         blocks.k.fc2: Row(4H -> H)
//   head: Column(H -> C, padded to Cp)  ─> logits [B, Cp/T]   vocab_parallel_cross_entropy
//
// Per rank: the input layer and each fc2's bias are whole (replicated: their gradients
// are the same on every rank, computed from the all-reduced activations), everything else
// is a 1/T slice. Communication per step, B examples: forward, one all-reduce of [B, H]
// per block (g) and the loss's [B] max and [2B] sum; backward, one all-reduce of [B, H]
// per block and one for the head (each f). Nothing else.
//
// A rank's shards are cut from the full initialisation (the serial model built with the
// same seed, or the file of --init), so the model is the same at any T.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "linear.h"
#include "module.h"
#include "module_list.h"
#include "parallel_linear.h"
#include "process_group.h"
#include "rng.h"
#include "safetensors.h"

namespace course {

struct ModelShape {
  int64_t inputs = 784;
  int64_t hidden = 128;  ///< H: the blocks' width; fc1 is H -> 4H
  int blocks = 2;        ///< K
  int64_t classes = 10;
  /// Parameters of the whole model.
  int64_t parameters() const;
  /// Parameters every rank holds whole: the input layer and each fc2's bias.
  int64_t replicated_parameters() const;
  /// Parameters per rank at tensor-parallel size T (padding of the head included).
  int64_t parameters_per_rank(int T) const;
};

/// fc1 Linear(H, 4H), ReLU, fc2 Linear(4H, H), residual add: the unsharded block.
class SerialMlpBlock : public Module {
 public:
  SerialMlpBlock(int64_t hidden, Rng& rng);
  Variable forward(const Variable& x) override;  ///< x + fc2(relu(fc1(x)))
  std::string describe() const override;

 private:
  std::shared_ptr<Linear> fc1_, fc2_;
};

/// The whole model in one process (lesson 07's Linear and lesson 06's ops): the oracle the
/// parallel model is compared with, and what --checkpoint's file loads into.
class SerialMlp : public Module {
 public:
  SerialMlp(const ModelShape& shape, Rng& rng);
  Variable forward(const Variable& x) override;  ///< logits [B, C]
  std::string describe() const override;

 private:
  std::shared_ptr<Linear> input_, head_;
  std::vector<std::shared_ptr<SerialMlpBlock>> blocks_;
};

std::shared_ptr<SerialMlp> make_serial_model(const ModelShape& shape, Rng& rng);

/// fc1 (column, output sharded), ReLU, fc2 (row, input sharded), residual add.
class ParallelMlpBlock : public Module {
 public:
  ParallelMlpBlock(const NamedTensors& full, const std::string& prefix, ProcessGroup& tp);
  Variable forward(const Variable& x) override;  ///< x + fc2(relu(fc1(x))), [B, H]
  std::string describe() const override;
  const ColumnParallelLinear& fc1() const { return *fc1_; }
  const RowParallelLinear& fc2() const { return *fc2_; }

 private:
  std::shared_ptr<ColumnParallelLinear> fc1_;
  std::shared_ptr<RowParallelLinear> fc2_;
};

/// The model split over `tp`. REQUIRES: `full` holds the serial model's state dict for
/// `shape`, and T divides 4H (ConfigError naming both numbers).
class TensorParallelMlp : public Module {
 public:
  TensorParallelMlp(const NamedTensors& full, const ModelShape& shape, ProcessGroup& tp);
  /// This rank's logits [B, Cp / T]. Collective over the group.
  Variable forward(const Variable& x) override;
  std::string describe() const override;
  /// The unsharded state dict, names as SerialMlp's. Collective over the group.
  NamedTensors full_state_dict() const;
  /// Every logit [B, C] (evaluation: the head's shards all-gathered). Collective.
  Tensor full_logits(const Tensor& x);
  const ModelShape& shape() const { return shape_; }
  ProcessGroup& group() const { return tp_; }

 private:
  ModelShape shape_;
  ProcessGroup& tp_;
  std::shared_ptr<Linear> input_;
  std::vector<std::shared_ptr<ParallelMlpBlock>> blocks_;
  std::shared_ptr<ColumnParallelLinear> head_;
};

}  // namespace course
