// cp_training.h: lesson 19, given: lesson 17's GPT trained with its batch split over a dp
// group, each sequence split over a cp (context-parallel) group, and each block's heads over
// a tp group, on the device mesh {dp: D, cp: C, tp: T} (torch's init_device_mesh(("dp", D),
// ("cp", C), ("tp", T)): tp the innermost dimension, world rank = (d C + c) T + t).
//
//   const DeviceMesh mesh = init_cp_mesh(world, C, T);
//   Verdict v = run_cp_training(o, mesh, *world_group, std::cout);
//
// THE STEP (lesson 17's train_gpt, its step seam filled; every rank draws the same global
// batch of B windows):
//   1. dp rank d takes windows [d B/D, (d+1) B/D); cp rank c takes its S/C tokens of each
//      (sequence_layout.h: contiguous, or zig-zag's chunks c and 2C-1-c) and their
//      positions in the whole sequence (for the position embedding); with sequence
//      parallelism, tp rank t keeps the t-th T-th of those (tp_sequence.h's sequence_piece);
//   2. forward with every attention's core replaced (gpt.h's seam) by ring attention or
//      Ulysses over the cp group; everything else in a GPT is per token and runs on the
//      local tokens unchanged; with T > 1 every block through tp_block_runner (its heads
//      and MLP columns, f and g or SP's all-gather and reduce-scatter over the tp group);
//   3. the loss: the mean cross-entropy of the local tokens; backward (the ring's and
//      Ulysses' backward exchange over the cp group inside it);
//   4. without SP, the tp slices' gradients scaled by T (scale_tp_gradients: the tp ranks
//      of one (d, c) hold parts of one sum); then every gradient averaged over all D x C x T
//      ranks (lesson 09's NaiveDdp, flat, on the world): each rank's loss is the mean over
//      an equal share of the B S tokens (under SP, a tp rank's share too), so the whole
//      batch's loss is the mean of the ranks' losses, and its gradient the mean of theirs.
//      torch does the same: FSDP or DDP over the flattened ("dp", "cp") mesh, the cp ranks'
//      gradients reduced with the dp ranks' (the key/value gradients of other ranks' tokens
//      have already come home inside the ring's backward);
//   5. clip and AdamW, the same on every rank.
// Evaluation, the sample and --checkpoint (rank 0) run the whole model on every rank, the
// attention core put back to lesson 17's for them.
//
// EQUIVALENCE (cp_gradient_difference, cp_equivalence_difference): the same options on one
// process (lesson 17's train_gpt, no seams) and on the mesh, from the same initialisation
// and batches: the largest gradient difference after one step, and the largest parameter
// difference after the steps. Not bit-identical: the ring merges the
// key blocks' partial softmaxes in another order than one pass over the row does.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "device_mesh.h"
#include "driver.h"
#include "gpt_training.h"
#include "process_group.h"
#include "sequence_layout.h"

namespace course {

struct CpTrainingOptions : GptTrainingOptions {
  int cp = 2;                            ///< C (0: every rank / T, dp 1); dp = ranks / (C T)
  int tp = 1;                            ///< T: tensor parallelism over heads (tp_sequence.h)
  std::string sequence_parallel = "on";  ///< with tp > 1: Megatron's SP (on or off)
  std::string cp_attention = "ring";     ///< ring or ulysses
  std::string layout = "zigzag";         ///< zigzag or contiguous
  int64_t equivalence_steps = 3;  ///< steps of the one-process check before training (0: none)
  double memory_budget_mib = 64;  ///< --bench: table 3's budget per rank
  CpTrainingOptions() {
    steps = 600;
    eval_every = 200;
    sample = 120;
  }
};

/// "" when the flags fit a world of `world` ranks, else the usage error: --cp dividing the
/// world, --seq-len dividing by 2C (naming both), --batch-size by D, Ulysses' heads by C,
/// and lesson 17's checks.
std::string check_cp_training_flags(const CpTrainingOptions& o, int world);

/// The mesh of the flags: {dp: world / (C T), cp: C, tp: T} (tp innermost, as torchtitan
/// and Megatron lay it out: a tp group's ranks are neighbours, on one machine's fastest links).
DeviceMesh init_cp_mesh(Subgroups& world, int cp, int tp = 1);

/// The seams of THE STEP for this rank of `mesh` (`all` is every rank of the mesh, for the
/// gradient average).
GptTrainingSeams cp_training_seams(const CpTrainingOptions& o, const DeviceMesh& mesh,
                                   ProcessGroup& all);

/// EQUIVALENCE: the largest |difference| of any parameter after o.steps steps on one
/// process and on the mesh. Collective over `all`.
double cp_equivalence_difference(const CpTrainingOptions& o, const TextSplit& text,
                                 const DeviceMesh& mesh, ProcessGroup& all);

/// The largest |difference| of any gradient after one step on one process and on the mesh,
/// clipping off. The sharper check: AdamW's update and the norm clip are blind to a
/// gradient that is wrong by a constant factor (a missing or extra T or C), which this is
/// not. Collective over `all`.
double cp_gradient_difference(const CpTrainingOptions& o, const TextSplit& text,
                              const DeviceMesh& mesh, ProcessGroup& all);

/// The run: the equivalence check (o.equivalence_steps), then training; rank 0 logs.
/// PASS when the equivalence holds (the first step's gradients within 2e-5, the
/// parameters within 2e-4) and the final validation loss beats the bigram's by o.margin.
Verdict run_cp_training(const CpTrainingOptions& o, const DeviceMesh& mesh, ProcessGroup& all,
                        std::ostream& out);

}  // namespace course
