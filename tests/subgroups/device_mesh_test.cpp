// device_mesh_test.cpp: init_device_mesh (common/comm/device_mesh.h): torch's layout (the
// last dimension inner), its printout, and every rank's groups on tcp and gloo for worlds
// of 4, 6 and 8 in each shape.
//
//   ctest -L subgroups     or     ./build/solutions/test_subgroups --gtest_filter='*Mesh*'
#include "device_mesh.h"

#include <gtest/gtest.h>

#include <utility>

#include "../collectives/suite.h"
#include "group_checks.h"

namespace course::test {
namespace {

TEST(MeshLayout, TwoByTwoAsTorch) {
  const MeshLayout layout({{"dp", 2}, {"tp", 2}});
  EXPECT_EQ(layout.describe(), "dp x tp = 2 x 2: tp groups {0,1} {2,3}; dp groups {0,2} {1,3}");
  EXPECT_EQ(layout.describe_rank(3), "rank 3: dp 1 of 2 {1,3}, tp 1 of 2 {2,3}");
}

TEST(MeshLayout, TheLastDimensionIsInner) {
  const MeshLayout layout({{"dp", 2}, {"tp", 3}});
  EXPECT_EQ(layout.world(), 6);
  for (int r = 0; r < 6; ++r) {
    EXPECT_EQ(layout.coordinate(r, "dp"), r / 3) << "rank " << r;
    EXPECT_EQ(layout.coordinate(r, "tp"), r % 3) << "rank " << r;
    EXPECT_EQ(layout.rank_at(layout.coordinates(r)), r);
  }
  EXPECT_EQ(layout.groups("tp"), (std::vector<std::vector<int>>{{0, 1, 2}, {3, 4, 5}}));
  EXPECT_EQ(layout.groups("dp"), (std::vector<std::vector<int>>{{0, 3}, {1, 4}, {2, 5}}));
  EXPECT_EQ(layout.group_ranks(4, "dp"), (std::vector<int>{1, 4}));
  EXPECT_EQ(layout.group_ranks(4, "tp"), (std::vector<int>{3, 4, 5}));
}

TEST(MeshLayout, ThreeDimensions) {
  const MeshLayout layout({{"pp", 2}, {"dp", 2}, {"tp", 2}});
  EXPECT_EQ(layout.coordinates(6), (std::vector<int>{1, 1, 0}));
  EXPECT_EQ(layout.group_ranks(6, "pp"), (std::vector<int>{2, 6}));
  EXPECT_EQ(layout.group_ranks(6, "dp"), (std::vector<int>{4, 6}));
  EXPECT_EQ(layout.group_ranks(6, "tp"), (std::vector<int>{6, 7}));
}

TEST(MeshLayout, BadDimensionsAreRefused) {
  EXPECT_THROW(MeshLayout({}), ConfigError);
  EXPECT_THROW(MeshLayout({{"dp", 0}}), ConfigError);
  EXPECT_THROW(MeshLayout({{"tp", 2}, {"tp", 2}}), ConfigError);
  const MeshLayout layout({{"dp", 2}, {"tp", 2}});
  try {
    layout.size("pp");
    ADD_FAILURE() << "an unknown dimension was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("its dimensions are dp, tp"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(layout.rank_at({2, 0}), ConfigError);
  EXPECT_THROW(layout.coordinates(4), ConfigError);
}

// The shapes of a world: every (outer, inner) with outer * inner == world and both > 1.
std::vector<std::pair<int, int>> shapes(int world) {
  std::vector<std::pair<int, int>> out;
  for (int inner = 2; inner < world; ++inner) {
    if (world % inner == 0) out.emplace_back(world / inner, inner);
  }
  return out;
}

class DeviceMeshSuite : public WorldSuite {};

TEST_P(DeviceMeshSuite, GroupsFollowTheLayout) {
  run_ranks(
      world(),
      [&](RankContext& ctx) {
        Subgroups world_groups = make_subgroups(backend(), ctx);
        int salt = 0;
        for (const auto& [dp, tp] : shapes(ctx.world)) {
          const DeviceMesh mesh = init_device_mesh(world_groups, {{"dp", dp}, {"tp", tp}});
          const std::string shape = std::to_string(dp) + " x " + std::to_string(tp);
          EXPECT_EQ(mesh.coordinate("dp"), ctx.rank / tp) << shape;
          EXPECT_EQ(mesh.coordinate("tp"), ctx.rank % tp) << shape;
          // In turn, then the other way round: tp, dp, tp.
          for (const char* dim : {"tp", "dp", "tp"}) {
            ProcessGroup& group = *mesh.group(dim);
            EXPECT_EQ(group.size(), mesh.size(dim)) << shape << " " << dim;
            EXPECT_EQ(group.rank(), mesh.coordinate(dim)) << shape << " " << dim;
            const std::vector<int> members = mesh.group_ranks(dim);
            const uint64_t hash = exercise_group(group, members, ctx.rank, salt, shape + " " + dim);
            expect_same_on_members(ctx.store(),
                                   shape + "/" + std::to_string(salt) + "/" + format_ranks(members),
                                   group, hash);
            ++salt;
          }
        }
      },
      suite_options());
}

INSTANTIATE_TEST_SUITE_P(Backends, DeviceMeshSuite, testing::ValuesIn(subgroup_worlds()),
                         world_param_name);

TEST(DeviceMesh, SizesMustMultiplyToTheWorld) {
  run_ranks(4, [](RankContext& ctx) {
    Subgroups world_groups = make_subgroups("tcp", ctx);
    try {
      init_device_mesh(world_groups, {{"dp", 2}, {"tp", 3}});
      ADD_FAILURE() << "a 2 x 3 mesh was built on 4 ranks";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("has 6 ranks, but the world has 4"), std::string::npos)
          << e.what();
    }
    // A dimension of size 1 is a group of one per rank.
    const DeviceMesh mesh = init_device_mesh(world_groups, {{"dp", 4}, {"tp", 1}});
    EXPECT_EQ(mesh.group("tp")->size(), 1);
    EXPECT_EQ(mesh.group("dp")->rank(), ctx.rank);
    exercise_group(*mesh.group("dp"), {0, 1, 2, 3}, ctx.rank, 2, "dp of 4 x 1");
  });
}

}  // namespace
}  // namespace course::test
