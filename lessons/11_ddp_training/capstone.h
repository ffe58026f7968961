// capstone.h: lesson 11, the whole data-parallel training program, the C++ counterpart of
// a real project's torchrun script (given; README.md puts the two side by side).
//
//   CapstoneOptions o;  add_capstone_flags(app, o);       // capstone_flags.h, in main.cpp
//   CapstoneResult r = run_capstone(o, *pg, *bn_pg, std::cout);   // on every rank
//
// What every rank does (torch's line in brackets):
//   0. start    the same flags on every rank (check_same_flags: a ConfigError naming the
//               flag), and rank 0 locks --run-dir for the run (run_dir_lock.h)
//   1. data     rank 0 prepares the standardised data set once and writes it atomically
//               to a cache file; every rank waits at a barrier, then reads it
//               [if rank == 0: prepare(); dist.barrier(); dataset = load()]
//   2. model    make_bn_mlp(seed + rank); --sync-bn: convert_sync_batchnorm on bn_pg
//               [SyncBatchNorm.convert_sync_batchnorm(model)]
//   3. DDP      lesson 10's DistributedDataParallel, driven through lesson 09's
//               GradientSync seam by lesson 09's training step; rank 0's
//               parameters and buffers broadcast [DDP(model)]
//   4. resume   --resume: rank 0 loads the newest checkpoint, checks the configuration,
//               broadcasts it (training_checkpoint.h) [torch.load(map_location=...)]
//   5. epochs   sampler.set_epoch(e); lesson 09's ddp_train_step per batch (drop_last:
//               BatchNorm needs more than one row), stopping at the first non-finite
//               loss (--detect-anomaly: gradient); without --sync-bn, rank 0's running
//               statistics are broadcast after each epoch (torch's broadcast_buffers)
//   6. evaluate evaluate_distributed on the validation share of each rank (exact)
//   7. save     rank 0 writes epoch-NNNN.safetensors; every rank waits at a barrier
//   8. curves   rank 0 writes <run-dir>/curves.csv and curves.svg; with --checkpoint
//               PATH, the final state dict too (weights only, as lessons 09 and 10)
// Only rank 0 prints (a line per epoch, and a progress bar when stdout is a terminal).
//
// The verdict: PASS when (1) SyncBatchNorm over the ranks matches BatchNorm1d on all their
// rows (check_sync_batch_norm, run first), (2) the final test accuracy reaches
// kCapstoneTarget, and (3) every rank ends with bit-identical parameters and buffers.
//
// What this is not: a general trainer (one model family, one data format).
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "ddp_training.h"
#include "driver.h"
#include "process_group.h"
#include "safetensors.h"

namespace course {

constexpr double kCapstoneTarget = 0.88;
constexpr int kCapstoneEpochs = 10;  ///< ./lesson11's default --epochs, what the target needs
constexpr double kSyncBatchNormTolerance = 1e-4;

struct CapstoneOptions {
  DdpTrainingOptions train;              ///< lesson 09's flags (data, epochs, batch size, lr, ...)
  bool sync_bn = false;                  ///< SyncBatchNorm instead of per-rank BatchNorm1d
  std::string run_dir = "lesson11-run";  ///< data cache, curves.csv, curves.svg
  std::string checkpoint_dir;            ///< "" : <run_dir>/checkpoints
  bool resume = false;                   ///< continue from the newest checkpoint
  bool save_checkpoints = true;          ///< every epoch (tests of evaluation turn it off)
  /// Fault injection for the kill test: rank crash_rank kills itself with SIGKILL just
  /// before global step crash_step (counted from the start of training, epoch by epoch).
  int64_t crash_step = -1;
  int crash_rank = 1;
  double target = kCapstoneTarget;  ///< the final test accuracy the verdict requires
  std::string checkpoints() const {
    return checkpoint_dir.empty() ? run_dir + "/checkpoints" : checkpoint_dir;
  }
};

struct EpochRecord {
  int epoch = 0;  ///< 1-based
  double train_loss = 0, train_accuracy = 0, test_loss = 0, test_accuracy = 0;
  double samples_per_second = 0, seconds = 0;
};

struct CapstoneResult {
  Verdict verdict;
  NamedTensors final_state;          ///< the model's state dict at the end (cloned)
  std::vector<EpochRecord> history;  ///< the epochs this process ran (rank 0's view)
  int resumed_from = 0;              ///< completed epochs loaded by --resume (0: fresh)
};

/// Collective: the program described above. `bn_group` carries SyncBatchNorm's messages
/// (a second group over the same ranks); `out` gets rank 0's lines.
CapstoneResult run_capstone(const CapstoneOptions& o, ProcessGroup& pg, ProcessGroup& bn_group,
                            std::ostream& out);

/// The configuration a checkpoint must match (training_checkpoint.h).
std::map<std::string, std::string> capstone_run_config(const CapstoneOptions& o,
                                                       const std::vector<int64_t>& sizes,
                                                       int world);

/// Step 1: the prepared data set at `cache` (written by rank 0, read by all).
DdpData prepare_data_cached(const DdpTrainingOptions& o, const std::string& cache,
                            ProcessGroup& pg);

/// The driver's first check, collective on `bn_group`: SyncBatchNorm over every rank's rows
/// (uneven: rank r holds 2 + r of them) against BatchNorm1d on all rows, one forward and
/// backward. Returns the largest difference in y and dx over all ranks (the same on every rank).
double check_sync_batch_norm(ProcessGroup& bn_group);

/// curves.csv and curves.svg (test and train accuracy against the epoch) in `dir`.
void write_curves(const std::string& dir, const std::vector<EpochRecord>& history);

}  // namespace course
