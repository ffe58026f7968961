// no_sync_check.cpp: lesson 10, given: no_sync on real batches (see the header).
#include "no_sync_check.h"

#include "bench_table.h"
#include "distributed_data_parallel.h"
#include "ops.h"
#include "tensor_ops.h"

namespace course {

std::string check_no_sync(const DdpTrainingOptions& o, const DdpData& data, ProcessGroup& pg,
                          const ReducerOptions& reducer, int micro_batches, std::ostream& out) {
  const int world = pg.size(), rank = pg.rank(), k = micro_batches;
  auto model = make_ddp_model(o, data.sizes, rank);
  DistributedDataParallel ddp(*model, pg, reducer);
  auto oracle = make_ddp_model(o, data.sizes, 0);
  oracle->load_state_dict(model->state_dict());  // rank 0's, after the broadcast
  auto opt = make_ddp_optimizer(o, model->parameters());
  auto oracle_opt = make_ddp_optimizer(o, oracle->parameters());
  // Rank r's K * B examples are rows [r K B, (r + 1) K B) of the global batch.
  const int64_t b = o.batch_size;
  const Batch all = global_batch(data.train, world, k * b, o.shuffle, o.seed, /*epoch=*/0,
                                 /*step=*/0);
  if (all.inputs.size(0) != world * k * b) {
    return "--grad-accum " + std::to_string(k) + ": the training set has fewer than " +
           std::to_string(world * k * b) + " examples for one accumulated step";
  }
  opt->zero_grad();
  for (int m = 0; m < k; ++m) {
    const int64_t first = (static_cast<int64_t>(rank) * k + m) * b;
    const Variable x(all.inputs.rows(first, b));
    const auto micro = [&] {
      scale(cross_entropy(ddp.forward(x), all.targets.rows(first, b)), 1.0f / k).backward();
    };
    if (m + 1 < k) {
      auto no_sync = ddp.no_sync();
      micro();
    } else {
      micro();
    }
  }
  opt->step();
  oracle_opt->zero_grad();
  cross_entropy(oracle->forward(Variable(all.inputs)), all.targets).backward();
  oracle_opt->step();
  const double diff = max_abs_difference(model->state_dict(), oracle->state_dict());
  if (rank == 0) {
    out << "no_sync: " << k << " micro-batches of " << b << " per rank (" << k - 1
        << " under no_sync) vs one process on " << world * k * b << " examples: max |difference| "
        << format_fixed(diff, 9) << std::endl;
  }
  if (diff > equivalence_tolerance(o)) {
    return "no_sync: gradient accumulation over " + std::to_string(k) +
           " micro-batches differs from one step on the whole batch by " + format_fixed(diff, 9);
  }
  return "";
}

}  // namespace course
