// distributed_sampler.h: lesson 09, part 1: each rank's share of one shuffled epoch
// (torch.utils.data.DistributedSampler).
//
//   auto sampler = std::make_shared<DistributedSampler>(train.size(), world, rank,
//                                                       /*shuffle=*/true, /*seed=*/0);
//   DataLoader loader(train, batch_per_rank, sampler);
//   for (int64_t epoch = 0; epoch < epochs; ++epoch) {
//     sampler->set_epoch(epoch);           // torch's ritual; see "Epochs" below
//     loader.start_epoch(epoch);           // asks sampler->indices(epoch)
//     ...
//   }
//
// What every rank computes for an epoch, without talking to any other rank (they all
// derive the same global order from the same seed and epoch):
//
//   1. order:    a permutation of 0..n-1, lesson 07's RandomSampler order for
//                (seed, epoch) (Fisher-Yates with Rng(seed + epoch)); 0..n-1 when
//                shuffle is false.
//   2. even out: num_samples = ceil(n / N) and total_size = N * num_samples; the order is
//                padded to total_size by repeating it from its front (order[0],
//                order[1], ..., again from the start when n is smaller than the padding).
//                With drop_last: num_samples = floor(n / N) and the order is cut to
//                total_size instead (its tail is skipped this epoch).
//   3. stride:   rank r takes positions r, r + N, r + 2N, ... of that list.
//
//   n = 10, N = 4: num_samples 3, total_size 12, padding 2
//
//   position   0  1  2  3 | 4  5  6  7 | 8  9 10 11
//   order      7  2  9  0 | 5  3  8  1 | 6  4  7  2     <- 7 and 2 again: the front
//   rank       0  1  2  3 | 0  1  2  3 | 0  1  2  3
//
//   rank 0: 7 5 6   rank 1: 2 3 4   rank 2: 9 8 7   rank 3: 0 1 2
//
// So every example appears once per epoch across the ranks, plus the padding; every rank
// has the same number of samples, hence the same number of batches, and no rank waits
// forever in an all-reduce that another rank never starts. Step s of a DataLoader with
// batch B on every rank covers positions [s*N*B, (s+1)*N*B) of the padded order: one
// process with batch N*B reading that order sees exactly the same examples at step s.
//
// Epochs: indices(epoch) uses its argument, as every lesson 07 Sampler does, and our
// DataLoader passes it. torch's DataLoader does not: torch's sampler remembers the epoch
// that set_epoch() stored, and a loop that never calls set_epoch shuffles every epoch the
// same way. indices() (no argument) is that torch behaviour: the stored epoch, 0 until
// set_epoch is called.
//
// Errors: ConfigError when dataset_size < 0, num_replicas < 1 or rank is outside
// [0, num_replicas), naming the values.
// Thread safety: indices(epoch) is const and may be called from any thread; set_epoch is
// not synchronised with indices().
#pragma once

#include <cstdint>
#include <vector>

#include "data_loader.h"

namespace course {

/// Throws a ConfigError unless dataset_size >= 0, num_replicas >= 1 and rank is in
/// [0, num_replicas): what DistributedSampler's constructor checks first.
void check_distributed_sampler(int64_t dataset_size, int num_replicas, int rank);

class DistributedSampler : public Sampler {
 public:
  DistributedSampler(int64_t dataset_size, int num_replicas, int rank, bool shuffle = true,
                     uint64_t seed = 0, bool drop_last = false);

  /// This rank's num_samples() indices of epoch `epoch`, in order (steps 1-3 above).
  std::vector<int64_t> indices(int64_t epoch) const override;
  /// torch's iteration: indices(the epoch set by set_epoch, 0 before any call).
  std::vector<int64_t> indices() const { return indices(epoch_); }
  /// Stores the epoch for indices() (torch: sampler.set_epoch(epoch) before each epoch).
  void set_epoch(int64_t epoch) { epoch_ = epoch; }
  int64_t epoch() const { return epoch_; }

  /// Indices per rank per epoch: ceil(n / N), or floor(n / N) with drop_last.
  int64_t num_samples() const { return num_samples_; }
  /// num_replicas * num_samples(): the padded (or cut) length of the global order.
  int64_t total_size() const { return total_size_; }
  int num_replicas() const { return num_replicas_; }
  int rank() const { return rank_; }

 private:
  /// Sets num_samples_ and total_size_ from dataset_size_, num_replicas_ and drop_last_
  /// (step 2 above). The constructor calls it once its arguments are checked.
  void compute_sizes();

  int64_t dataset_size_;
  int num_replicas_;
  int rank_;
  bool shuffle_;
  uint64_t seed_;
  bool drop_last_;
  int64_t num_samples_ = 0;
  int64_t total_size_ = 0;
  int64_t epoch_ = 0;
};

}  // namespace course
