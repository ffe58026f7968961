// training_checkpoint.h: lesson 11, what a checkpoint must hold for a resumed run to end
// bit-identical to one that never stopped, and how rank 0 writes and shares it (given).
//
//   // every epoch, after evaluation:
//   if (rank == 0) save_training_checkpoint(dir, epoch + 1, *model, *optimizer, config);
//   pg.barrier();                              // nobody runs ahead of a file not yet there
//   // on --resume, every rank:
//   std::optional<ResumeState> r = resume_from_latest(dir, *model, *optimizer, config, pg, log);
//
// ONE FILE PER EPOCH, "<dir>/epoch-0003.safetensors", written by rank 0 only (the
// parameters are identical on every rank: N writers would race for the same bytes),
// atomically (safetensors.h: a temporary file, fsync, rename). It holds:
//   model state dict       "0.weight", "1.running_mean", ...  (buffers too: BatchNorm)
//   optimizer state        "optimizer.<i>.momentum_buffer", and its step count
//   metadata               epoch (completed epochs), the sampler's seed and epoch, the
//                          run configuration (RunConfig), and the format
// The data order needs no saved generator: the DistributedSampler derives epoch e's order
// from (seed, e) alone, and nothing else in the step draws random numbers, so epoch and
// seed are the whole RNG state.
//
// RESUME: rank 0 removes the temporary files of writers that died ("*.tmp.<pid>" whose pid
// is gone, what a crash mid-write leaves), lists the directory, newest epoch first, skips
// a file that is not sound (saying which and why: it does not parse, a tensor does not
// match its checksum, a metadata entry is missing or not a number; checkpoint.h), and
// falls back to the next older one. When files are there but none is sound, --resume
// refuses (ConfigError naming each file and its fault) rather than start fresh over them.
// It compares the chosen file's configuration with this run's (ConfigError naming every
// field that differs), and broadcasts the tensors to every rank, which load them. A run
// on several machines needs the directory on rank 0's machine only.
//
// What this is not: sharded checkpoints (each rank writing its part: FSDP's job).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "module.h"
#include "optimizer.h"
#include "process_group.h"

namespace course {

/// Everything about a run that a checkpoint must match to be resumed: the fields whose
/// change would alter the model's shape, the optimizer, or which examples each rank sees.
using RunConfig = std::map<std::string, std::string>;

/// "<dir>/epoch-0003.safetensors".
std::string checkpoint_path(const std::string& dir, int epoch);

/// Rank 0: writes `epoch` (completed epochs), model, optimizer, `config` and the `extra`
/// metadata atomically, creating `dir` if needed. Returns the path.
std::string save_training_checkpoint(const std::string& dir, int epoch, const Module& model,
                                     const Optimizer& optimizer, const RunConfig& config,
                                     const std::map<std::string, std::string>& extra = {});

/// "" when `saved` matches `current`, else one line per differing field:
/// "world_size: checkpoint 2, this run 3".
std::string config_differences(const RunConfig& saved, const RunConfig& current);

/// Completed checkpoint files in `dir`, newest epoch first (temporary files excluded).
std::vector<std::pair<int, std::string>> list_checkpoints(const std::string& dir);

struct ResumeState {
  int epoch = 0;     ///< completed epochs: training continues at this epoch index
  std::string path;  ///< the file rank 0 loaded
  std::map<std::string, std::string> metadata;  ///< its metadata (every rank)
};

/// Removes "epoch-*.tmp.<pid>" files in `dir` whose writer (pid) no longer runs; returns
/// their paths.
std::vector<std::string> remove_stale_temporaries(const std::string& dir);

/// Collective. Rank 0 picks the newest loadable checkpoint in `dir` (see RESUME above);
/// every rank loads what rank 0 broadcasts. Returns nothing when `dir` holds none (a fresh
/// start). Throws ConfigError on every rank when rank 0 refuses the file (the message says
/// what differs on rank 0, and points the other ranks to rank 0's message) or finds files
/// but none sound. `log` gets rank 0's notes.
std::optional<ResumeState> resume_from_latest(const std::string& dir, Module& model,
                                              Optimizer& optimizer, const RunConfig& config,
                                              ProcessGroup& pg, std::ostream& log);

/// Collective: every rank's `tensors` and `metadata` become rank `root`'s. The other ranks
/// pass empty ones: names, shapes and metadata travel as one message, then every tensor.
void broadcast_named_tensors(NamedTensors& tensors, std::map<std::string, std::string>& metadata,
                             ProcessGroup& pg, int root);

}  // namespace course
