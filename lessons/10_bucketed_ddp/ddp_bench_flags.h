// ddp_bench_flags.h: lesson 10, given: the flags of DdpBenchOptions (--bench-batch,
// --bench-steps, --bench-hidden, --bench-layers; --csv is the driver's) and the bench model's layer
// sizes they give, shared by every driver whose --bench trains lesson 10's bench model (lessons 10,
// 13 and 14).
//
//   add_ddp_bench_flags(flags, bench);
//   make_mlp(ddp_bench_sizes(bench), rng);
#pragma once

#include <cstdint>
#include <vector>

#include "ddp_bench.h"
#include "flag_checks.h"
#include "flags.h"

namespace course {

/// The bench model's layer sizes: 784 inputs, o.layers hidden layers of o.hidden, 10
/// classes.
inline std::vector<int64_t> ddp_bench_sizes(const DdpBenchOptions& o) {
  std::vector<int64_t> sizes{784};
  for (int l = 0; l < o.layers; ++l) sizes.push_back(o.hidden);
  sizes.push_back(10);
  return sizes;
}

inline void add_ddp_bench_flags(Flags& flags, DdpBenchOptions& o) {
  flags.option("--bench-batch", o.batch_size, "--bench: examples per rank per step")
      .check(count_in(1, 60000))
      .show_default();
  flags.option("--bench-steps", o.steps, "--bench: timed steps per row")
      .check(count_in(1, 100000))
      .show_default();
  flags.option("--bench-hidden", o.hidden, "--bench: width of the model's hidden layers")
      .check(count_in(1, 65536))
      .show_default();
  flags.option("--bench-layers", o.layers, "--bench: number of hidden layers")
      .check(count_in(1, 1000))
      .show_default();
}

}  // namespace course
