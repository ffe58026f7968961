// subgroups.h: process groups over some ranks of the world (torch.distributed.new_group).
//
//   Subgroups world(ctx.store(), ctx.rank(), ctx.world(),
//                   group_maker(ctx.args().backend, driver_recipe(ctx, "lesson15", install)));
//   auto even = world.new_group({0, 2}, "even");   // every rank calls it, members or not
//   auto odd = world.new_group({1, 3}, "odd");     // ... in the same order
//   ProcessGroup& mine = world.rank() % 2 == 0 ? *even : *odd;   // the other one is nullptr
//   mine.all_reduce(grads, ReduceOp::SUM);         // rank() and size() are the group's
//
// torch's rules, kept here:
//  - EVERY rank of the world calls new_group for EVERY group, members and non-members
//    alike, with the same sorted member list, in the same order. A member gets the group;
//    a non-member gets nullptr (torch's GroupMember.NON_GROUP_MEMBER).
//  - Group rank i is the i-th smallest world rank of the list (torch sorts the list; here
//    an unsorted one is refused, so that nobody expects another order).
//  - The group is a ProcessGroup like the world's: rank() and size() are the group's, every
//    collective and p2p call takes group ranks (roots, send's dst, recv's src).
//
// HOW A GROUP IS BUILT. A subgroup is a new group of its members alone, made by the
// world's own recipe (a GroupMaker: on tcp a full mesh of the members with the lesson's
// algorithms, on gloo a context on a store prefix, on nccl a communicator whose unique id
// goes through the store), under the store prefix "<prefix>/<k>-<name>" (k: the group's
// sequence number). Not a view over the world's connections: lessons 02-05's algorithms
// see a TcpComm of streams indexed by rank, and translating ranks underneath every one of
// them (and giving each group its own tags on shared sockets, whose reader threads one
// group could starve) would reach into every lesson. A group of its own connections is the
// same object the lessons were tested as, so every collective of process_group.h works on
// it unchanged, and two groups cannot mix messages even when two threads drive them at
// once: they share no socket, no tag and no worker thread. The cost: one connection per
// pair of members per group (a 2 x 4 mesh: 4 more sockets per rank), made once.
//
// THE ORDER CHECK. Before it connects anything, new_group #k publishes in the store what
// this rank thinks group #k is ("'tp1' ranks {2,3}") and reads every other rank's. A rank
// whose groups differ (another order, another member list, another name) gets a
// ConfigError on every rank, naming group #k, what this rank made and what each other
// rank made: never a hang in a mesh that half the ranks are waiting on. A rank that
// never reaches new_group #k is named in a TimeoutError after `timeout`. The check is a
// store round trip per world rank (a world barrier, as torch's new_group by default).
//
// What this is not: torch's ncclCommSplit path (a group from the world's connections);
// nor the collective monitor's diagnosis (collective_monitor.h): its agent knows world
// ranks, so the groups made here run without a monitor.
//
// Thread safety: one thread calls new_group (it uses the world's store connection). The
// groups it returns are independent ProcessGroups: each follows process_group.h's rule
// (one thread issues its calls), and two groups may be driven from two threads at once.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "process_group.h"
#include "rank_names.h"
#include "store.h"

namespace course {

/// Makes one group of `size` ranks on the world's backend: this rank is `rank` of it,
/// `name` keys its rendezvous in `store` (unique per group of the job), and `names` holds
/// the members' world ranks and the group's label, so that the group's errors name every
/// peer by its world rank ("rank 3 (group rank 1 of 'tp1')", rank_names.h).
/// process_group_factory.h's group_maker(backend, recipe) makes one from a driver's or
/// test's recipe.
using GroupMaker = std::function<std::unique_ptr<ProcessGroup>(
    StoreClient& store, int rank, int size, const std::string& name, const RankNames& names)>;

/// The world that new_group splits: this rank, the world's size, its store and the maker
/// of its groups. torch's default process group, as far as new_group needs it.
class Subgroups {
 public:
  /// `store` must outlive this object (new_group uses it); `prefix` keys this object's
  /// groups in the store (two Subgroups of one job need two prefixes); `timeout` bounds the
  /// order check's wait for the other ranks (the groups' own timeouts are the maker's).
  /// Throws ConfigError when rank is not in [0, world) or make is empty.
  Subgroups(StoreClient& store, int rank, int world, GroupMaker make,
            std::string prefix = "subgroups", Millis timeout = default_timeout());

  /// This rank in the world.
  int rank() const { return rank_; }
  /// The number of ranks in the world.
  int world() const { return world_; }
  /// The number of new_group calls so far (the next group is #count() + 1).
  int count() const { return count_; }

  /// REQUIRES: `ranks` sorted, without duplicates, each in [0, world()), non-empty
  /// (ConfigError naming this rank and the list otherwise, before the store is touched).
  /// Collective over the WORLD: every rank calls it, with the same ranks and name, in the
  /// same order (see the top of this file; ConfigError naming the group and the ranks that
  /// differ, or TimeoutError naming a rank that never called it).
  /// EFFECT: the group of `ranks` (group rank i = ranks[i]) for a member; nullptr for a
  /// non-member. `name` labels the group in errors and in its store keys ("" names it
  /// "group<k>"); the group's errors name each peer by its world rank, the group rank and
  /// this label beside it ("rank 3 (group rank 1 of 'tp1')", rank_names.h). A group of one rank is
  /// a valid group (its collectives copy). After a ConfigError or TimeoutError of the order check
  /// the ranks are out of step: make no more groups from this object.
  std::shared_ptr<ProcessGroup> new_group(const std::vector<int>& ranks,
                                          const std::string& name = "");

 private:
  StoreClient& store_;
  int rank_;
  int world_;
  GroupMaker make_;
  std::string prefix_;
  Millis timeout_;
  int count_ = 0;
};

/// "{0,2,4}": a member list as errors and layouts print it.
std::string format_ranks(const std::vector<int>& ranks);

}  // namespace course
