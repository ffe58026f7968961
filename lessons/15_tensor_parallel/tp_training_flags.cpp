// tp_training_flags.cpp: lesson 15, given: ./lesson15's flags and their checks
// (tp_training_flags.h).
#include "tp_training_flags.h"

#include "error.h"
#include "flag_checks.h"

namespace course {

void add_tp_training_flags(Flags& flags, TpTrainingOptions& o) {
  add_ddp_training_flags(
      flags, o, "safetensors state dict to start from (every rank loads it and cuts its shards)");
  add_target_flag(flags, o);
  flags
      .option("--tp", o.tp, "ranks per tensor-parallel group; it must divide --np (0: all of them)")
      .check(count_in(0, 1024))
      .show_default();
  flags.option("--blocks", o.blocks, "residual MLP blocks (H -> 4H -> H)")
      .check(count_in(0, 64))
      .show_default();
}

std::string tp_usage_problem(int world, int tp, int64_t hidden) {
  const int T = tp == 0 ? world : tp;
  if (T < 1 || world % T != 0) {
    return "--tp " + std::to_string(T) + " does not divide the " + std::to_string(world) +
           " ranks (--np " + std::to_string(world) + "): use a --tp that divides --np";
  }
  if ((4 * hidden) % T != 0) {
    return "--hidden " + std::to_string(hidden) + " (fc1's " + std::to_string(4 * hidden) +
           " features) is not divisible by --tp " + std::to_string(T);
  }
  return "";
}

std::string tp_flags_problem(int world, const TpTrainingOptions& o) {
  if (o.hidden.size() != 1) {
    return "--hidden takes one size here, the blocks' width H (got " +
           std::to_string(o.hidden.size()) + " values): e.g. --hidden 256";
  }
  return tp_usage_problem(world, o.tp, o.hidden[0]);
}

std::vector<MeshDim> tp_mesh_dims(int world, int tp) {
  const int T = tp == 0 ? world : tp;
  if (T < 1 || world % T != 0) {
    throw ConfigError("--tp " + std::to_string(T) + " does not divide the " +
                      std::to_string(world) + " ranks");
  }
  return {{"dp", world / T}, {"tp", T}};
}

}  // namespace course
