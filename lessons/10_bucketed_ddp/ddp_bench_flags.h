// ddp_bench_flags.h: lesson 10, given: the flags of DdpBenchOptions (--bench-batch,
// --bench-steps, --bench-hidden, --bench-layers, --csv), shared by every driver whose
// --bench trains lesson 10's bench model (lessons 10, 13 and 14).
//
//   add_ddp_bench_flags(flags, bench);
#pragma once

#include "ddp_bench.h"
#include "flag_checks.h"
#include "flags.h"

namespace course {

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
  flags.option("--csv", o.csv_path, "--bench: CSV file")
      .check(writable(OutputPath::kFileInNewDirectory))
      .show_default();
}

}  // namespace course
