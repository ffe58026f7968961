// group_checks.h: every call of process_group.h on a subgroup, against serial answers
// written in world ranks.
//
// Inputs depend on the member's WORLD rank (and a salt per use), answers are computed
// from the member list: so a group whose rank translation is off, or whose messages cross
// with another group's, gives wrong values, not just wrong timing.
//
// What this is not: the collective suites (tests/collectives), which try every count on
// the world group; here a few counts, on groups of some ranks.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "../collectives/suite.h"
#include "collective_oracle.h"
#include "process_group.h"
#include "process_group_factory.h"
#include "result_checks.h"
#include "subgroups.h"

namespace course::test {

/// The worlds the subgroup suites run on: 4, 6 and 8 ranks, on tcp and (where built) gloo.
inline std::vector<WorldParam> subgroup_worlds() {
  std::vector<WorldParam> worlds;
  for (const std::string& backend : available_backends()) {
    for (int world : {4, 6, 8}) worlds.push_back({backend, world});
  }
  return worlds;
}

/// The rank whose values member `world_rank` contributes under `salt` (data_value is exact
/// below rank 256: salt < 30 with worlds of 8).
inline int value_rank(int world_rank, int salt) {
  return world_rank + 8 * salt;
}

/// Element-wise serial SUM over the members, in order, of reduce_values(value_rank(m), n).
inline std::vector<float> members_sum(const std::vector<int>& members, int salt, size_t n,
                                      size_t offset = 0) {
  std::vector<float> sum(n, 0.0f);
  for (int m : members) {
    const std::vector<float> v = reduce_values(value_rank(m, salt), n, offset);
    for (size_t i = 0; i < n; ++i) sum[i] += v[i];
  }
  return sum;
}

/// Runs every call of process_group.h on `pg`, a group of `members` seen from world rank
/// `world_rank` (which must be members[pg.rank()]), and EXPECTs the serial answers; `what` names
/// the group in failures. Returns the hash of the results every member holds alike (all_reduce,
/// broadcast, all_gather), the same on every member.
inline uint64_t exercise_group(ProcessGroup& pg, const std::vector<int>& members, int world_rank,
                               int salt, const std::string& what) {
  const int n = pg.size();
  const int g = pg.rank();
  EXPECT_EQ(n, static_cast<int>(members.size())) << what << ": size()";
  if (n != static_cast<int>(members.size()) || g < 0 || g >= n) return 0;
  EXPECT_EQ(members[g], world_rank) << what << ": group rank " << g << " is not world rank "
                                    << world_rank << "'s place in " << format_ranks(members);
  const int me = value_rank(world_rank, salt);
  ResultHash hash;
  auto check = [&](const std::string& call, const std::vector<float>& got,
                   const std::vector<float>& want) {
    EXPECT_EQ(describe_wrong(got, want), "") << what << " (group rank " << g << "): " << call;
  };

  // all_reduce: an odd count, so the ring's chunks are uneven.
  std::vector<float> sum = reduce_values(me, 37);
  pg.all_reduce(sum, ReduceOp::SUM);
  check("all_reduce sum", sum, members_sum(members, salt, 37));
  std::vector<float> mx = reduce_values(me, 11, 5);
  pg.all_reduce(mx, ReduceOp::MAX);
  std::vector<float> want_max = reduce_values(value_rank(members[0], salt), 11, 5);
  for (int m : members) {
    const std::vector<float> v = reduce_values(value_rank(m, salt), 11, 5);
    for (size_t i = 0; i < v.size(); ++i) want_max[i] = std::max(want_max[i], v[i]);
  }
  check("all_reduce max", mx, want_max);

  // broadcast from the last group rank.
  std::vector<float> b = data_values(me, 9);
  pg.broadcast(b, n - 1);
  check("broadcast from group rank " + std::to_string(n - 1), b,
        data_values(value_rank(members[n - 1], salt), 9));

  // all_gather, gather: slot j holds member j's input.
  const size_t k = 5;
  std::vector<float> gathered(n * k, -1.0f);
  std::vector<float> want_gathered;
  for (int m : members) {
    const std::vector<float> v = data_values(value_rank(m, salt), k);
    want_gathered.insert(want_gathered.end(), v.begin(), v.end());
  }
  pg.all_gather(data_values(me, k), gathered);
  check("all_gather", gathered, want_gathered);
  std::vector<float> at_root(g == 0 ? n * k : 0, -1.0f);
  pg.gather(data_values(me, k), at_root, 0);
  if (g == 0) check("gather to group rank 0", at_root, want_gathered);

  // scatter from group rank 0: slice g of its input.
  std::vector<float> piece(k, -1.0f);
  pg.scatter(data_values(me, n * k), piece, 0);
  check("scatter from group rank 0", piece,
        data_values(value_rank(members[0], salt), k, static_cast<size_t>(g) * k));

  // reduce to group rank 0, reduce_scatter: slice g of the sum.
  std::vector<float> red = reduce_values(me, 13, 100);
  pg.reduce(red, ReduceOp::SUM, 0);
  if (g == 0) check("reduce to group rank 0", red, members_sum(members, salt, 13, 100));
  std::vector<float> rs(3, -1.0f);
  pg.reduce_scatter(reduce_values(me, n * 3, 7), rs, ReduceOp::SUM);
  check("reduce_scatter", rs, members_sum(members, salt, 3, 7 + static_cast<size_t>(g) * 3));

  // all_to_all: slice j of the output is member j's input slice g.
  std::vector<float> a2a(n * 2, -1.0f);
  pg.all_to_all(data_values(me, n * 2), a2a);
  std::vector<float> want_a2a;
  for (int m : members) {
    const std::vector<float> v = data_values(value_rank(m, salt), 2, static_cast<size_t>(g) * 2);
    want_a2a.insert(want_a2a.end(), v.begin(), v.end());
  }
  check("all_to_all", a2a, want_a2a);

  // p2p in group ranks: each sends to the next, receives from the previous.
  if (n > 1) {
    const int next = (g + 1) % n;
    const int prev = (g + n - 1) % n;
    const std::vector<float> out = data_values(me, 6);
    WorkPtr sent = pg.isend(out, next, 3);
    std::vector<float> in(6, -1.0f);
    pg.recv(in, prev, 3);
    sent->wait();
    check("recv from group rank " + std::to_string(prev), in,
          data_values(value_rank(members[prev], salt), 6));
  }

  // async all-reduce, then a barrier.
  std::vector<float> async = reduce_values(me, 17, 30);
  pg.all_reduce_async(async, ReduceOp::SUM)->wait();
  check("all_reduce_async sum", async, members_sum(members, salt, 17, 30));
  pg.barrier();
  for (const std::vector<float>* everywhere : {&sum, &mx, &b, &gathered, &async}) {
    hash.add(*everywhere);
  }
  return hash.value();
}

/// EXPECTs that every member of a group reached the same hash (through the store, keyed
/// by `key`: unique per group and use).
inline void expect_same_on_members(StoreClient& store, const std::string& key,
                                   const ProcessGroup& pg, uint64_t hash) {
  store.set("same/" + key + "/" + std::to_string(pg.rank()), std::to_string(hash));
  for (int r = 0; r < pg.size(); ++r) {
    EXPECT_EQ(store.get("same/" + key + "/" + std::to_string(r)), std::to_string(hash))
        << key << ": group rank " << r << " holds different results than group rank " << pg.rank();
  }
}

}  // namespace course::test
