// tp_groups.cpp: lesson 15, given: the grid's groups from the device mesh (tp_groups.h).
#include "tp_groups.h"

namespace course {

TpProcessGroups::TpProcessGroups(ProcessGroup& world, Subgroups& subgroups, int tp)
    : grid_(make_tp_grid(world.size(), world.rank(), tp)),
      mesh_(init_device_mesh(subgroups, {{"dp", grid_.D}, {"tp", grid_.T}})),
      groups_{world, *mesh_.group("tp"), grid_.D > 1 ? mesh_.group("dp").get() : nullptr, grid_} {}

}  // namespace course
