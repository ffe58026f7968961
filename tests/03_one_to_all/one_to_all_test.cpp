// one_to_all_test.cpp: lesson 03's suite (tests/collectives/suite_one_to_all.h) on the tcp
// backend built from lessons 02-03, plus the algorithm the backend does not install
// (broadcast_flat) and what the collectives' tags buy.
//
//   ctest -L lesson03        or        ./build/solutions/test_03 --gtest_filter='*world5*'
#include "one_to_all.h"

#include "../collectives/suite_one_to_all.h"

namespace course::test {

void install_suite_algorithms(TcpAlgorithms& algorithms) {
  install_lesson03(algorithms);
}

INSTANTIATE_TEST_SUITE_P(Tcp, OneToAll, testing::ValuesIn(world_params({"tcp"})), world_param_name);
INSTANTIATE_TEST_SUITE_P(Tcp, LargeOneToAll, testing::ValuesIn(world_params({"tcp"}, 2, 3)),
                         world_param_name);

namespace {

// The backend broadcasts with the binomial tree; the flat broadcast is checked here
// directly, side by side with it, on the same comm: same results, every root and count.
class BroadcastFlatAndTree : public testing::TestWithParam<int> {};

TEST_P(BroadcastFlatAndTree, AgreeWithTheOracle) {
  run_ranks(GetParam(), [](RankContext& ctx) {
    auto comm = make_tcp_comm(ctx);
    for (size_t count : suite_counts(ctx.world)) {
      for (int root = 0; root < ctx.world; ++root) {
        for (bool tree : {false, true}) {
          std::vector<float> data =
              ctx.rank == root ? data_values(root, count) : stale(ctx.rank, count);
          if (tree) {
            broadcast_binomial_tree(*comm, data, root);
          } else {
            broadcast_flat(*comm, data, root);
          }
          if (!check_values(data, expected_broadcast(root, count),
                            std::string(tree ? "binomial tree" : "flat") + " broadcast of " +
                                std::to_string(count) + " from root " + std::to_string(root))) {
            return;
          }
        }
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Worlds, BroadcastFlatAndTree, testing::Values(1, 2, 3, 5, 8),
                         [](const testing::TestParamInfo<int>& info) {
                           return "world" + std::to_string(info.param);
                         });

// Two ranks that call different collectives get a ProtocolError naming both, not each
// other's data: every collective's messages carry its own tag.
TEST(OneToAllTcp, CollectivesInDifferentOrdersNameBothTags) {
  run_ranks(2, [](RankContext& ctx) {
    auto comm = make_tcp_comm(ctx);
    std::vector<float> data(4, 1.0f);
    if (ctx.rank == 0) {
      broadcast_flat(*comm, data, 0);  // rank 1 calls scatter instead
    } else {
      try {
        scatter_flat(*comm, {}, data, 0);
        ADD_FAILURE() << "scatter took a broadcast's message";
      } catch (const ProtocolError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("(scatter)"), std::string::npos) << what;
        EXPECT_NE(what.find("(broadcast)"), std::string::npos) << what;
      }
    }
  });
}

// Wrong roots and sizes that this rank can see are ConfigErrors before any byte moves.
TEST(OneToAllTcp, LocalArgumentErrorsAreConfigErrors) {
  run_ranks(1, [](RankContext& ctx) {
    auto comm = make_tcp_comm(ctx);
    std::vector<float> a(6), b(4);
    EXPECT_THROW(broadcast_binomial_tree(*comm, a, 1), ConfigError);
    EXPECT_THROW(broadcast_flat(*comm, a, -1), ConfigError);
    EXPECT_THROW(scatter_flat(*comm, a, b, 0), ConfigError);  // 6 != 1 x 4
    EXPECT_THROW(gather_flat(*comm, b, a, 0), ConfigError);
  });
}

}  // namespace
}  // namespace course::test
