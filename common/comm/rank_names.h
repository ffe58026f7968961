// rank_names.h: how a group's errors name its ranks. Every rank number an error prints is
// the world rank; a subgroup's (subgroups.h) puts the group rank and the group beside it:
//
//   the world            "rank 3"
//   group 'tp1' {2,3}    "rank 3 (group rank 1 of 'tp1')"
//
// so a frozen or dead peer of a subgroup is named as the launcher's summary names it.
// A default RankNames is the world's: its names are the plain "rank N" they always were.
//
// What this is not: a rank translation. Every call of a group still takes group ranks.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace course {

/// The world rank of each rank of a group, and the group's name, for errors (see above).
struct RankNames {
  /// world_ranks[i]: the world rank of group rank i. Empty: the group is the world.
  std::vector<int> world_ranks;
  /// The group's name in errors ("tp1"); unused for the world.
  std::string group;

  /// The names of the world (plain "rank N").
  RankNames() = default;
  /// The names of the group `group` of world ranks `world_ranks` (group rank i is world
  /// rank world_ranks[i]).
  RankNames(std::vector<int> world_ranks, std::string group)
      : world_ranks(std::move(world_ranks)), group(std::move(group)) {}

  /// True when this names the world's ranks (no group beside them).
  bool is_world() const { return world_ranks.empty(); }

  /// The world rank of `group_rank` (itself for the world, or when out of range).
  int world_rank(int group_rank) const {
    if (group_rank < 0 || group_rank >= static_cast<int>(world_ranks.size())) return group_rank;
    return world_ranks[static_cast<size_t>(group_rank)];
  }

  /// "rank 3" for the world; "rank 3 (group rank 1 of 'tp1')" for group rank 1 of 'tp1'.
  std::string operator()(int group_rank) const {
    std::string world = "rank " + std::to_string(world_rank(group_rank));
    if (is_world()) return world;
    return world + " (group rank " + std::to_string(group_rank) + " of '" + group + "')";
  }
};

}  // namespace course
