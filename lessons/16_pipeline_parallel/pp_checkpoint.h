// pp_checkpoint.h: lesson 16, given: ./lesson16's --init and --checkpoint, the whole
// model's state dict in one file under the names one process uses, whatever the cut.
//
//   load_stage_state("mlp.safetensors", sizes, stage);          // every rank, --init
//   save_pipeline_state("out.safetensors", mesh, sizes, bounds, module);  // collective
//
// THE FILE is lesson 07's checkpoint of make_mlp(sizes) (checkpoint.h): "0.weight",
// "0.bias", "2.weight", ... (torch.nn.Sequential's names, so torch's load_state_dict takes
// it unchanged). A stage's parameters already carry those names (stage_module.h), so a
// stage's state dict is a slice of the file, and a file written at one P loads at any P
// or into one process.
//
// PROTOCOL of save_pipeline_state, on replica 0's P ranks (mesh.coordinate("dp") == 0,
// over its mesh.group("pp"); the other replicas hold the same numbers and send nothing):
//
//   stage s > 0 ---- its parameters, in named_parameters() order (kCheckpointTag) ----> stage 0
//   stage 0 (world rank 0): its own layers, then stage 1, 2, ... P-1 in turn, into the whole
//   model; writes
//
// Stage 0 receives the stages one after another and each stage sends only to it, so
// nothing waits in a cycle. What this is not: a sharded checkpoint (torch's DCP writes one
// file per rank plus a plan); the model here fits in one process.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "device_mesh.h"
#include "stage_module.h"

namespace course {

/// The tag of the stages' parameters on their way to rank 0 (no micro-batch's, no
/// evaluation's).
inline constexpr int kCheckpointTag = (1 << 24) - 5;

/// --init: reads the whole model's state dict at `path` (every rank reads it), checks it
/// fits make_mlp(sizes) (lesson 07's load_checkpoint: ConfigError naming missing,
/// unexpected or mis-shaped tensors, and a corrupted file), and copies this stage's
/// layers from it into `stage`.
void load_stage_state(const std::string& path, const std::vector<int64_t>& sizes,
                      StageModule& stage);

/// --checkpoint: rank 0 writes the whole model (lesson 07's save_checkpoint, weights only,
/// with `metadata`), gathered from the P stages of replica 0 (see PROTOCOL above).
/// Collective over replica 0's pipeline; the other replicas return at once. `mesh`: the
/// pipeline's {dp: D, pp: P} (init_pipeline_mesh, stage_runner.h); `bounds`: the cut
/// (partition_layers), the same on every rank; `module`: this rank's stage.
void save_pipeline_state(const std::string& path, const DeviceMesh& mesh,
                         const std::vector<int64_t>& sizes, const std::vector<int>& bounds,
                         const StageModule& module,
                         const std::map<std::string, std::string>& metadata = {});

}  // namespace course
