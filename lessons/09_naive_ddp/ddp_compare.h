// ddp_compare.h: lesson 09, `./lesson09 --compare`: one table, the same model and global
// batch trained one process, DataParallel over K threads (lesson 08) and naive DDP over K
// ranks (per-param and flat, on the tcp backend and on Gloo) (given).
//
//   ./lesson09 --compare --np 2                    # K = 2, global batch 256
//   ./lesson09 --compare --np 4 --global-batch 512 --steps 30
//
// Every rank loads the first global_batch * (warmup + steps) training examples. The
// one-process and DataParallel rows run on rank 0 while the other ranks wait in the store
// (asleep, not spinning); the DDP rows run on every rank with batch global_batch / K.
// Each row: `warmup` steps untimed, then `steps` timed steps of SGD on lesson 07's MLP.
//
// Columns (per step, averaged over the timed steps, DDP: also over the ranks):
//   samples/s   global batch / step time                 x 1p: against the one-process row
//   compute     forward, loss, backward, optimizer       (DataParallel: step - comm - wait)
//   comm        moving gradients or parameters            (DDP: time in sync_gradients
//                                                          minus wait; DataParallel:
//                                                          replicate, scatter and
//                                                          reduce-add copies)
//   wait        waiting for the slowest peer              (DDP: the slowest rank's compute
//                                                          minus this rank's, per step;
//                                                          DataParallel: wall minus mean
//                                                          busy time of its parallel
//                                                          phases)
// DataParallel's phases come from lesson 08's timed_train_step (step_breakdown.h).
//   peak MiB    the largest resident set of one process during the row (VmHWM, reset
//               before each row through /proc/self/clear_refs)
//   msgs/step   collective calls per step (DDP: the gradient check's all_gather plus
//               the all-reduces; threads exchange no messages, they copy)
//
// Then, on rank 0, PyTorch's rows on the same MLP and global batch (one process, torch DDP
// over K ranks; tools/torch_ddp_bench.py --compare, synthetic inputs) when /usr/bin/python3
// imports torch (Debian's python3-torch), else one line saying so.
//
// What this is not: a scaling study. The numbers are one run on whatever else the machine
// is doing; the CSV goes to bench-results/lesson09_compare_np<K>.csv.
#pragma once

#include <cstdint>
#include <ostream>
#include <vector>

#include "driver.h"
#include "process_group_factory.h"

namespace course {

struct DdpCompareOptions {
  std::string data;
  std::vector<int64_t> hidden = {512, 512};
  int64_t global_batch = 256;
  int warmup = 3;
  int steps = 20;
  std::string csv_path;  ///< "" : bench-results/lesson09_compare_np<K>.csv
};

/// Runs the rows above on this rank (every rank calls it) and prints the table on rank 0.
/// `recipe` is the tcp backend's (its name is replaced per backend).
Verdict run_ddp_compare(DriverContext& ctx, const DdpCompareOptions& o, const GroupRecipe& recipe,
                        std::ostream& out);

}  // namespace course
