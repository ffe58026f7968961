// tp_groups.cpp: lesson 15, given: the grid's subgroups (tp_groups.h).
#include "tp_groups.h"

namespace course {

TpProcessGroups::TpProcessGroups(ProcessGroup& world, const SubgroupFactory& make, int tp)
    : grid_(make_tp_grid(world.size(), world.rank(), tp)),
      tp_(grid_.T == world.size()
              ? nullptr
              : make("tp." + std::to_string(grid_.dp_index), grid_.tp_index, grid_.T)),
      dp_(grid_.D == 1 ? nullptr
                       : make("dp." + std::to_string(grid_.tp_index), grid_.dp_index, grid_.D)),
      groups_{world, tp_ ? *tp_ : world, dp_.get(), grid_} {}

}  // namespace course
