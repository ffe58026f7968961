// cp_bench.h: lesson 19, given: ./lesson19 --bench: what splitting the sequence over C
// ranks buys and costs, measured beside the models, with every rank of the world in one cp
// group (C = --np).
//
//   ./lesson19 --bench --np 4                      # loopback
//   ./lesson19 --bench --np 4 --link 10gbit        # an emulated 10 Gbit/s link (lesson 10)
//
// TABLE 1, BALANCE: causal ring attention's (query chunk, key chunk) products per rank, for
//   C = 2, 4, 8, contiguous and zig-zag (sequence_layout.h's causal_block_products): the
//   slowest rank's count against the mean. Contiguous: rank r does 4r + 3, the slowest
//   (rank C-1) 4C - 1 against a mean of 2C + 1; zig-zag: every rank 2C + 1 (the README).
// TABLE 2, PER LAYOUT, for S in 64, 128, 256 (batch 4, 4 heads, d 16): ring attention
//   (zig-zag and contiguous) and Ulysses (heads dividing C), forward and backward of the op
//   on each rank's S/C tokens: the slowest rank's median time, the bytes a rank sent
//   (tcp_bytes_sent, the largest over ranks) against the model (ring_attention.h's and
//   ulysses.h's), and the GPT's activations per rank on its S/C tokens (lesson 18's ledger,
//   parameters left out) against one process's on all S: falling as 1/C.
// The verdict FAILs when a measured byte count is off the model by more than the framing.
#pragma once

#include <ostream>

#include "cp_training.h"
#include "device_mesh.h"
#include "driver.h"
#include "process_group.h"

namespace course {

/// The tables (see the top of this file), printed by rank 0 and written (CSV) to
/// bench-results/lesson19_*.csv. Collective over `all`; `mesh` has every rank in "cp".
Verdict run_cp_bench(const CpTrainingOptions& o, const DeviceMesh& mesh, ProcessGroup& all,
                     std::ostream& out);

}  // namespace course
