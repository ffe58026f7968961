// peer_names_test.cpp: a subgroup's errors name a peer that closed or froze by its world
// rank, with the group rank and the group beside it (common/comm/rank_names.h), on tcp
// (lessons 02-05) and gloo, and lesson 01's mesh errors get the world ranks beside the
// group's; the world's errors keep their plain "rank N"; a send to a closed peer is an
// error, never SIGPIPE.
//
//   ./build/solutions/test_subgroups --gtest_filter='PeerNames*'
#include <gtest/gtest.h>
#include <signal.h>

#include <memory>
#include <string>
#include <vector>

#include "../collectives/suite.h"

namespace course::test {
namespace {

// Bounds every call of the groups made here: a frozen peer is named within it.
constexpr Millis kGroupTimeout{3000};

// A rank that closes its groups at once can do so while a peer's rendezvous still talks to
// it, and that peer then fails in its constructor, not in the call under test. Each rank
// says its groups are up; the closing rank waits for the ranks it is going to leave.
void say_up(RankContext& ctx, const std::string& prefix) {
  ctx.store().set(prefix + "/up/" + std::to_string(ctx.rank), "1");
}
void wait_up(RankContext& ctx, const std::string& prefix, const std::vector<int>& ranks) {
  for (int rank : ranks) ctx.store().get(prefix + "/up/" + std::to_string(rank), Millis(30000));
}

// World 6 as two groups of 3, "tp0" {0,1,2} and "tp1" {3,4,5}. Rank 5 (group rank 2 of
// tp1) closes its group at once (`freeze` false) or stays silent (`freeze` true); rank 3
// receives from it and must see it named by its world rank.
void expect_world_rank_named(const std::string& backend, bool freeze) {
  run_ranks(
      6,
      [&](RankContext& ctx) {
        const std::string prefix = std::string("names-") + (freeze ? "frozen" : "closed");
        Subgroups world_groups(ctx.store(), ctx.rank, ctx.world,
                               group_maker(backend, suite_recipe(ctx, prefix, kGroupTimeout)),
                               prefix, Millis(20000));
        std::shared_ptr<ProcessGroup> tp0 = world_groups.new_group({0, 1, 2}, "tp0");
        std::shared_ptr<ProcessGroup> tp1 = world_groups.new_group({3, 4, 5}, "tp1");
        const std::string seen = prefix + "/seen";
        say_up(ctx, prefix);
        if (ctx.rank == 5 && !freeze) {
          wait_up(ctx, prefix, {3, 4});
          tp1.reset();  // closes its connections: the peer is gone
          return;
        }
        if (ctx.rank == 3) {
          std::vector<float> data(4);
          try {
            tp1->recv(data, 2);
            ADD_FAILURE() << backend << ": the recv from a " << (freeze ? "frozen" : "closed")
                          << " peer returned";
          } catch (const Error& e) {
            const std::string what = e.what();
            EXPECT_NE(what.find("rank 5 (group rank 2 of 'tp1')"), std::string::npos)
                << backend << ": " << what;
          }
          ctx.store().set(seen, "1");
          return;
        }
        ctx.store().get(seen, Millis(30000));  // keep the groups up until rank 3 has seen it
      },
      suite_options(60));
}

TEST(PeerNames, ClosedPeerOfASubgroupIsNamedByWorldRank) {
  for (const std::string& backend : available_backends()) expect_world_rank_named(backend, false);
}

TEST(PeerNames, FrozenPeerOfASubgroupIsNamedByWorldRank) {
  for (const std::string& backend : available_backends()) expect_world_rank_named(backend, true);
}

TEST(PeerNames, TheWorldsPeersKeepTheirPlainNames) {
  for (const std::string& backend : available_backends()) {
    run_ranks(
        2,
        [&](RankContext& ctx) {
          std::unique_ptr<ProcessGroup> world =
              make_process_group(backend, ctx.store(), ctx.rank, ctx.world,
                                 suite_recipe(ctx, "names-world", kGroupTimeout));
          say_up(ctx, "names-world");
          if (ctx.rank == 1) {
            wait_up(ctx, "names-world", {0});
            return;  // closes the world's connections
          }
          std::vector<float> data(4);
          try {
            world->recv(data, 1);
            ADD_FAILURE() << backend << ": the recv from a closed peer returned";
          } catch (const Error& e) {
            const std::string what = e.what();
            EXPECT_NE(what.find("rank 1"), std::string::npos) << backend << ": " << what;
            EXPECT_EQ(what.find("group rank"), std::string::npos) << backend << ": " << what;
          }
        },
        suite_options(60));
  }
}

// Sends to a peer that has closed its end until one fails: an Error naming the peer, never
// a SIGPIPE that kills the sender (the harness reports a rank killed by a signal). Gloo
// writes with writev(), which cannot ask for MSG_NOSIGNAL (a recv from a given rank writes
// too: it tells the peer it is ready), and whether its thread has seen the peer's close
// before it writes is a race; so the gloo backend ignores SIGPIPE, checked here as well.
TEST(PeerNames, ASendToAClosedPeerIsAnErrorNotASignal) {
  for (const std::string& backend : available_backends()) {
    run_ranks(
        2,
        [&](RankContext& ctx) {
          std::unique_ptr<ProcessGroup> world =
              make_process_group(backend, ctx.store(), ctx.rank, ctx.world,
                                 suite_recipe(ctx, "names-send", kGroupTimeout));
          if (backend == "gloo") {
            struct sigaction now {};
            ASSERT_EQ(::sigaction(SIGPIPE, nullptr, &now), 0);
            EXPECT_EQ(now.sa_handler, SIG_IGN) << "a gloo group's process must not die of SIGPIPE";
          }
          say_up(ctx, "names-send");
          if (ctx.rank == 1) {
            wait_up(ctx, "names-send", {0});
            world.reset();  // closes its connections
            ctx.store().set("names-send/closed", "1");
            return;
          }
          ctx.store().get("names-send/closed", Millis(30000));
          std::vector<float> data(1 << 16, static_cast<float>(ctx.rank + 1));
          bool failed = false;
          for (int i = 0; i < 200 && !failed; ++i) {
            try {
              world->send(data, 1);
            } catch (const Error& e) {
              failed = true;
              EXPECT_NE(std::string(e.what()).find("rank 1"), std::string::npos)
                  << backend << ": " << e.what();
            }
          }
          EXPECT_TRUE(failed) << backend << ": 200 sends to a closed peer all returned";
        },
        suite_options(60));
  }
}

// Lesson 01's mesh names the ranks it connects by the numbers it was given: a subgroup's
// group ranks. make_process_group puts the group's world ranks beside them, keeping the
// error's type; the world's errors stay as they were.
TEST(PeerNames, ASubgroupsMeshErrorsNameTheWorldRanksToo) {
  run_ranks(1, [](RankContext& ctx) {
    GroupRecipe recipe;
    recipe.install = [](TcpAlgorithms&) {};
    recipe.monitor = false;
    recipe.connect_mesh = [](StoreClient&, int, int, const std::string&, const std::string&,
                             const std::string&, Millis) -> Mesh {
      throw TimeoutError("connect_full_mesh: still waiting for rank 1");
    };
    recipe.names = RankNames({2, 3}, "tp1");
    try {
      make_process_group("tcp", ctx.store(), 0, 2, recipe);
      ADD_FAILURE() << "the mesh's error was lost";
    } catch (const TimeoutError& e) {
      EXPECT_NE(std::string(e.what()).find(
                    "still waiting for rank 1 [in group 'tp1': group rank 0 is rank 2, group "
                    "rank 1 is rank 3]"),
                std::string::npos)
          << e.what();
    }
    recipe.names = RankNames();
    try {
      make_process_group("tcp", ctx.store(), 0, 2, recipe);
      ADD_FAILURE() << "the mesh's error was lost";
    } catch (const TimeoutError& e) {
      EXPECT_EQ(std::string(e.what()).find("in group"), std::string::npos) << e.what();
    }
  });
}

TEST(PeerNames, RankNamesForms) {
  EXPECT_EQ(RankNames()(3), "rank 3");
  const RankNames tp1({2, 3}, "tp1");
  EXPECT_EQ(tp1(1), "rank 3 (group rank 1 of 'tp1')");
  EXPECT_EQ(tp1.world_rank(0), 2);
}

}  // namespace
}  // namespace course::test
