// data_loader.h: lesson 07, visiting a data set in batches (torch.utils.data).
//
//   DataLoader loader(train, /*batch_size=*/128, std::make_shared<RandomSampler>(train.size(),
//   42)); for (int64_t epoch = 0; epoch < 3; ++epoch) {
//     loader.start_epoch(epoch);                 // a new order for every epoch
//     while (std::optional<Batch> b = loader.next()) train_step(model, opt, *b);
//   }
//
// Two jobs, two types, as in PyTorch:
//   Sampler     decides which examples an epoch visits and in which order (a list of
//               indices). Lesson 09's DistributedSampler is another Sampler: it gives each
//               rank its own share of the same shuffled order.
//   DataLoader  cuts that order into consecutive batches of batch_size indices and
//               assembles each batch with gather_rows (tensor_ops.h): inputs
//               [B, ...], targets [B]. The last batch is smaller, or dropped when
//               drop_last is set.
//
// RandomSampler's shuffle is specified exactly, so that every rank of a job (and every
// implementation of this exercise) produces the same order from the same seed:
//
//   order = [0, 1, ..., n-1];  Rng rng(seed + epoch);
//   for i = n-1 down to 1:  j = rng.below(i + 1);  swap(order[i], order[j])
//
// (Fisher-Yates, Knuth's Algorithm P: every permutation equally likely. Drawing j from
// the whole range instead of [0, i] is a classic bug that makes some orders likelier.)
//
// Thread safety: a DataLoader is used by one thread; Samplers are immutable.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "dataset.h"
#include "tensor.h"

namespace course {

class Sampler {
 public:
  virtual ~Sampler() = default;
  /// The indices one epoch visits, in order. Deterministic in `epoch`.
  virtual std::vector<int64_t> indices(int64_t epoch) const = 0;
};

/// 0, 1, ..., n-1 every epoch (evaluation).
class SequentialSampler : public Sampler {
 public:
  explicit SequentialSampler(int64_t n) : n_(n) {}
  std::vector<int64_t> indices(int64_t epoch) const override;

 private:
  int64_t n_;
};

/// A permutation of 0..n-1, a different one each epoch, as specified above.
class RandomSampler : public Sampler {
 public:
  RandomSampler(int64_t n, uint64_t seed) : n_(n), seed_(seed) {}
  std::vector<int64_t> indices(int64_t epoch) const override;

 private:
  int64_t n_;
  uint64_t seed_;
};

struct Batch {
  Tensor inputs;   ///< [B, ...]
  Tensor targets;  ///< [B]
};

class DataLoader {
 public:
  /// REQUIRES: batch_size >= 1 and a sampler (ConfigError otherwise). The data set's
  /// tensors are shared, not copied; `device` is where batches are placed.
  DataLoader(const Dataset& data, int64_t batch_size, std::shared_ptr<const Sampler> sampler,
             bool drop_last = false, Device device = Device::cpu);

  /// Asks the sampler for epoch `epoch`'s order and rewinds to its first batch.
  void start_epoch(int64_t epoch);
  /// The next batch of the current epoch, or nothing when the epoch is over. Starts
  /// epoch 0 if start_epoch was never called.
  std::optional<Batch> next();
  /// Batches in the current epoch's order (before start_epoch: in the whole data set).
  int64_t num_batches() const;
  int64_t batch_size() const { return batch_size_; }
  const Dataset& dataset() const { return data_; }

 private:
  Dataset data_;
  int64_t batch_size_;
  std::shared_ptr<const Sampler> sampler_;
  bool drop_last_;
  Device device_;
  bool started_ = false;
  std::vector<int64_t> order_;
  size_t position_ = 0;  // index into order_ of the next batch's first example
};

}  // namespace course
