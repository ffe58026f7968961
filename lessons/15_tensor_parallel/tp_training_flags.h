// tp_training_flags.h: lesson 15, given: ./lesson15's flags (lesson 09's, --target, --tp,
// --blocks), their checks between flags and the device mesh they ask for.
//
//   TpTrainingOptions o;
//   add_tp_training_flags(flags, o);              // ddp_training_flags.h's, --tp, --blocks
//   config.check_flags = ... tp_flags_problem(world, o);   // a usage error, exit 64
//   DeviceMesh mesh = init_device_mesh(subgroups, tp_mesh_dims(world, o.tp));
//
// The flags are checked once, in the driver, before any rank starts, against the world
// the ranks will have (--np, or WORLD_SIZE for ranks started by hand or by torchrun); the
// driver compares every declared flag across the ranks (flags_across_ranks.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ddp_training_flags.h"
#include "device_mesh.h"
#include "flags.h"
#include "tp_training.h"

namespace course {

/// Adds lesson 09's flags (--init read by every rank), --target, --tp and --blocks.
void add_tp_training_flags(Flags& flags, TpTrainingOptions& o);

/// "" when `tp` (0: world) divides `world` and `hidden` x 4 divides by it; else the usage
/// problem naming both numbers ("--tp 3 does not divide --np 4 ranks").
std::string tp_usage_problem(int world, int tp, int64_t hidden);

/// ./lesson15's flags, checked before any rank starts (a usage error, exit 64): --hidden
/// takes one size, the blocks' width H ("--hidden 128 128" is refused), then
/// tp_usage_problem(world, o.tp, H). "" when they fit.
std::string tp_flags_problem(int world, const TpTrainingOptions& o);

/// The mesh of `world` ranks at tensor-parallel size `tp` (0: world): {{"dp", world / T},
/// {"tp", T}}, TP the inner dimension (device_mesh.h's layout: rank = dp * T + tp). D = 1
/// is a dimension of size 1. ConfigError when T does not divide world.
std::vector<MeshDim> tp_mesh_dims(int world, int tp);

}  // namespace course
