// full_mesh_test.cpp: lesson 01's full mesh on 1..8 forked ranks over real sockets.
#include "full_mesh.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <vector>

#include "handshake.h"
#include "harness.h"

namespace course {
namespace {

// Every rank sends 1000*rank + peer + 7*round to each peer and checks what comes back.
void exchange_with_every_peer(Mesh& mesh, int round) {
  for (int peer = 0; peer < mesh.world; ++peer) {
    if (peer == mesh.rank) continue;
    const int64_t value = 1000 * mesh.rank + peer + 7 * round;
    mesh.to(peer).send_all(&value, sizeof(value));
  }
  for (int peer = 0; peer < mesh.world; ++peer) {
    if (peer == mesh.rank) continue;
    int64_t value = -1;
    mesh.to(peer).recv_all(&value, sizeof(value));
    EXPECT_EQ(value, 1000 * peer + mesh.rank + 7 * round) << "from rank " << peer;
  }
}

class FullMesh : public ::testing::TestWithParam<int> {};

TEST_P(FullMesh, EveryPairIsConnectedBothWays) {
  const int world = GetParam();
  test::run_ranks(world, [](test::RankContext& ctx) {
    Mesh mesh = connect_full_mesh(ctx.store(), ctx.rank, ctx.world, ctx.token);
    ASSERT_EQ(mesh.rank, ctx.rank);
    ASSERT_EQ(mesh.world, ctx.world);
    ASSERT_EQ(static_cast<int>(mesh.peers.size()), ctx.world);
    for (int peer = 0; peer < ctx.world; ++peer) {
      EXPECT_EQ(mesh.peers[peer].valid(), peer != ctx.rank) << "peer " << peer;
    }
    exchange_with_every_peer(mesh, 0);
  });
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, FullMesh, ::testing::Values(1, 2, 3, 4, 5, 7, 8));

TEST(FullMeshTest, TwoMeshesInOneJobUseTheirOwnKeys) {
  test::run_ranks(3, [](test::RankContext& ctx) {
    Mesh a = connect_full_mesh(ctx.store(), ctx.rank, ctx.world, ctx.token, "127.0.0.1", "a");
    Mesh b = connect_full_mesh(ctx.store(), ctx.rank, ctx.world, ctx.token, "127.0.0.1", "b");
    exchange_with_every_peer(a, 1);
    exchange_with_every_peer(b, 2);
  });
}

TEST(FullMeshTest, StrangersAreRefusedAndTheMeshStillForms) {
  test::run_ranks(3, [](test::RankContext& ctx) {
    if (ctx.rank == 2) {
      // Before joining, rank 2 plays two strangers at rank 0's mesh port.
      const std::string addr = ctx.store().get("mesh/addr/0");
      const int port = std::stoi(addr.substr(addr.rfind(':') + 1));
      Socket wrong_token = Socket::connect("127.0.0.1", port);
      EXPECT_THROW(hello_send(wrong_token, Hello{"not-the-token", 2, "mesh"}), ProtocolError);
      Socket garbage = Socket::connect("127.0.0.1", port);
      const char junk[] = "GET / HTTP/1.0\r\n\r\n";
      garbage.send_all(junk, sizeof(junk));
      garbage.close();
    }
    Mesh mesh = connect_full_mesh(ctx.store(), ctx.rank, ctx.world, ctx.token);
    exchange_with_every_peer(mesh, 3);
  });
}

// Fifty connections that never say a word, opened at rank 0's mesh port while the mesh
// forms: the ranks behind them still get in, at once.
TEST(FullMeshTest, SilentStrangersDoNotStallTheMesh) {
  test::run_ranks(3, [](test::RankContext& ctx) {
    std::vector<Socket> silent;
    if (ctx.rank == 2) {
      const std::string addr = ctx.store().get("mesh/addr/0");
      const int port = std::stoi(addr.substr(addr.rfind(':') + 1));
      for (int i = 0; i < 50; ++i) silent.push_back(Socket::connect("127.0.0.1", port));
    }
    const auto t0 = std::chrono::steady_clock::now();
    Mesh mesh = connect_full_mesh(ctx.store(), ctx.rank, ctx.world, ctx.token);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
    exchange_with_every_peer(mesh, 4);
  });
}

TEST(FullMeshTest, BadRankIsAConfigError) {
  test::run_ranks(1, [](test::RankContext& ctx) {
    EXPECT_THROW(connect_full_mesh(ctx.store(), 1, 1, ctx.token), ConfigError);
    EXPECT_THROW(connect_full_mesh(ctx.store(), -1, 2, ctx.token), ConfigError);
  });
}

}  // namespace
}  // namespace course
