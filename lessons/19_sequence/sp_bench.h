// sp_bench.h: lesson 19, given: table 4 of ./lesson19 --bench: tensor parallelism over heads
// with and without Megatron's sequence parallelism (tp_sequence.h), every rank of the world
// in one tp group (T = --np).
//
// TABLE 4, TP AGAINST SP, for S in 64, 128, 256 (batch 4, lesson 17's GPT of --layers,
//   --hidden and --heads): one forward and backward of the whole model on each rank, through
//   tp_block_runner: the slowest rank's median time; the bytes a rank sent (tcp_bytes_sent,
//   the largest over ranks) against the model, 4 L ring all-reduces of [B S, H] floats
//   (2 (T-1)/T of each from every rank) for both, plus 16 B of framing per collective call
//   (4 L for TP's all-reduces, 8 L for SP's halves); the activations per rank (lesson 17's
//   ledger, parameters left out), and those of the LayerNorms alone, which SP divides by T.
// A row whose bytes differ from the model fails the bench's verdict.
#pragma once

#include <ostream>
#include <string>

#include "cp_training.h"
#include "process_group.h"

namespace course {

/// Prints table 4 (rank 0's `out`; null elsewhere) and writes it beside `csv_path` as
/// STEM_sp_npT.csv (bench-results/lesson19_sp_npT.csv with the driver's default). Collective over
/// `tp`. Returns the rows whose bytes are off the model (0 when all agree, or when the heads or S
/// do not divide over T and the table is left out, saying why).
int run_sp_table(const CpTrainingOptions& o, ProcessGroup& tp, const std::string& csv_path,
                 std::ostream* out);

}  // namespace course
