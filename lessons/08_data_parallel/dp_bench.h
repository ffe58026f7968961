// dp_bench.h: lesson 08, given: ./lesson08 --bench, one thread against DataParallel over
// 1, 2, ... devices, with each step's breakdown and Amdahl's bound.
//
//   ./lesson08 --bench                    # devices 1 .. max(2, cores)
//   ./lesson08 --bench --devices 4 --bench-seconds 3
//
// For batches 128 and 512, one Markdown table each: a row for lesson 07's step on one
// thread, then one per device count K: samples/s, the ratios to one thread and to
// DataParallel on 1 device, Amdahl's bound 1 / (s1 + (1 - s1) / K) from the serial share
// s1 measured on 1 device, the phases of step_breakdown.h in ms, the serial share, idle
// device time, the DevicePool's round trip (waking K threads and waiting for them), and
// the cores the row actually got (CPU time over wall time). Each row runs about
// --bench-seconds after two warm-up steps.
//
// What this is not: a verdict on speed; it passes once the tables are printed, since on
// a loaded machine rows differ from run to run.
#pragma once

#include <ostream>
#include <string>

#include "dp_training.h"
#include "driver.h"

namespace course {

/// The tables above for 1 .. max_devices devices, printed to `out`; their rows, both batch
/// sizes in one table, also written as CSV to `csv_path`.
Verdict run_dp_bench(const DpOptions& o, int max_devices, const std::string& csv_path,
                     std::ostream& out);

}  // namespace course
