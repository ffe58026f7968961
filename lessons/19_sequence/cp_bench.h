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
// TABLE 3, BUDGET: the longest sequence (a multiple of 2C) one sequence of which trains
//   within --memory-budget per rank, for C = 1, 2, 4, 8: the model state (16Ψ, every rank
//   holds the whole model) plus the activations of S/C tokens (lesson 18's formula, tiled
//   attention: every term per token) plus the ring's buffers (two k/v blocks in flight and
//   the travelling dk/dv: 6 floats per local token and head dimension); then the
//   activations per rank at S = 256 C: flat as C and S grow together.
// TABLE 4, TP AGAINST SP: sp_bench.h, every rank in one tp group.
// The verdict FAILs when a measured byte count is off the model by more than the framing.
#pragma once

#include <ostream>
#include <string>

#include "cp_training.h"
#include "device_mesh.h"
#include "driver.h"
#include "gpt.h"
#include "process_group.h"

namespace course {

/// Table 3's per-rank bytes for one sequence of `seq` tokens over `cp` ranks (config's
/// shape; its context and attention are set here), and the longest seq (a multiple of
/// 2 cp, at most 1 << 24) within `budget_bytes` (0 when not even 2 cp tokens fit).
int64_t cp_rank_bytes(const GptConfig& config, int64_t seq, int cp);
int64_t longest_sequence_within(int64_t budget_bytes, const GptConfig& config, int cp);

/// The tables (see the top of this file), printed by rank 0 and written (CSV) beside
/// `csv_path` (output_beside: bench-results/lesson19_balance.csv, ... with the driver's
/// default). Collective over `all`; `mesh` has every rank in "cp".
Verdict run_cp_bench(const CpTrainingOptions& o, const DeviceMesh& mesh, ProcessGroup& all,
                     const std::string& csv_path, std::ostream& out);

}  // namespace course
