// fp16_bench.h: lesson 18, given: table 5 of ./lesson18 --bench (memory_bench.h): four
// short runs in fp32, bf16 and fp16 with and without the GradScaler, their loss curves
// (lesson18_loss.svg), and what fp16 makes of a trained model's gradients.
#pragma once

#include <ostream>

#include "memory_bench.h"

namespace course {

/// Tables 5 and 5b of memory_bench.h, printed to `out` and written beside o.csv_path
/// (lesson18_fp16.csv, lesson18_flush.csv, lesson18_loss.svg).
void fp16_tables(const MemoryBenchOptions& o, std::ostream& out);

}  // namespace course
