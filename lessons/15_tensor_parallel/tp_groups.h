// tp_groups.h: lesson 15, given: the process groups of a 2D (data x tensor) grid of ranks,
// from common's device mesh (device_mesh.h, torch's init_device_mesh): rank
// r = dp_index * T + tp_index, one tensor-parallel group per row, one data-parallel group
// per column (tp_training.h draws it).
//
//   Subgroups world(store, rank, size, group_maker(backend, recipe));   // subgroups.h
//   TpProcessGroups groups(*world_group, world, o.tp);
//   run_tp_training(o, groups.groups(), std::cout);
//
// init_device_mesh(world, {{"dp", D}, {"tp", T}}) makes every group of both dimensions
// (each a process group of its own connections, subgroups.h), every rank calling in the
// same order; a rank keeps its own two. With D = 1 the data-parallel group (of one rank)
// is not used: TpGroups::dp is null and nothing synchronises across replicas.
#pragma once

#include <memory>
#include <string>

#include "device_mesh.h"
#include "process_group.h"
#include "subgroups.h"
#include "tp_training.h"

namespace course {

class TpProcessGroups {
 public:
  /// REQUIRES: tp (0: all ranks) divides the world size (ConfigError otherwise).
  /// Collective over the world (init_device_mesh).
  TpProcessGroups(ProcessGroup& world, Subgroups& subgroups, int tp);
  TpGroups& groups() { return groups_; }
  /// "dp x tp = 2 x 2: tp groups {0,1} {2,3}; dp groups {0,2} {1,3}".
  std::string describe() const { return mesh_.layout().describe(); }

 private:
  TpGrid grid_;
  DeviceMesh mesh_;
  TpGroups groups_;
};

}  // namespace course
