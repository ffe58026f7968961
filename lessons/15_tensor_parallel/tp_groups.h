// tp_groups.h: lesson 15, given: the process groups of a 2D (data x tensor) grid of ranks,
// built as torch's init_device_mesh("cpu", (D, T), mesh_dim_names=("dp", "tp")) builds
// them: rank r = dp_index * T + tp_index, one tensor-parallel group per row, one
// data-parallel group per column (tp_training.h draws it).
//
//   TpProcessGroups groups(*world, make_subgroup, o.tp);
//   run_tp_training(o, groups.groups(), std::cout);
//
// Each subgroup is a process group of its own over the same store, with a name of its own
// ("tp.1": the TP group of replica 1, "dp.0": the DP group of shard 0), made by `make`
// with its rank and size inside the subgroup. Every rank makes its two groups in the same
// order (its TP group, then its DP group), so rendezvous never waits on a group that is
// made later. With T = N the TP group is the world group; with D = 1 there is no DP group.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "process_group.h"
#include "tp_training.h"

namespace course {

/// Makes the subgroup `name` of `size` ranks in which this rank is `rank`. Collective over
/// that subgroup's ranks.
using SubgroupFactory =
    std::function<std::unique_ptr<ProcessGroup>(const std::string& name, int rank, int size)>;

class TpProcessGroups {
 public:
  /// REQUIRES: tp (0: world size) divides world.size() (ConfigError otherwise).
  /// Collective over the world.
  TpProcessGroups(ProcessGroup& world, const SubgroupFactory& make, int tp);
  TpGroups& groups() { return groups_; }

 private:
  TpGrid grid_;
  std::unique_ptr<ProcessGroup> tp_, dp_;
  TpGroups groups_;
};

}  // namespace course
