// suite_point_to_point.h: the truths of lesson 02, for any backend's send/recv/isend/irecv.
//
// Include once in a test binary, then instantiate with the backends it links:
//   INSTANTIATE_TEST_SUITE_P(Tcp, PointToPoint, testing::Values("tcp"),
//                            course::test::backend_param_name);
//
// What this is not: the tcp backend's own error messages and wire format; those are in
// tests/02_point_to_point/point_to_point_tcp_test.cpp.
#pragma once

#include <chrono>
#include <thread>

#include "suite.h"
#include "work.h"

namespace course::test {

class PointToPoint : public BackendSuite {};

// The seed's ping-pong: a tensor starts at 0; rank 0 adds 1 and sends; rank 1 adds 2 and
// sends it back; rank 0 ends with 3.
TEST_P(PointToPoint, PingPongEndsWithThree) {
  run_ranks(2, [&](RankContext& ctx) {
    auto pg = make_group(backend(), ctx);
    std::vector<float> tensor{0.0f};
    if (ctx.rank == 0) {
      tensor[0] += 1;
      pg->send(tensor, 1);
      pg->recv(tensor, 1);
      EXPECT_EQ(tensor[0], 3.0f);
    } else {
      pg->recv(tensor, 0);
      EXPECT_EQ(tensor[0], 1.0f);
      tensor[0] += 2;
      pg->send(tensor, 0);
    }
  });
}

// Several messages with different tags and sizes (0 and 1 included) arrive in order.
TEST_P(PointToPoint, TaggedMessagesArriveInOrder) {
  run_ranks(2, [&](RankContext& ctx) {
    auto pg = make_group(backend(), ctx);
    const std::vector<std::pair<int, size_t>> messages{{5, 3}, {9, 0}, {5, 1}, {0, 1000}, {77, 2}};
    for (size_t m = 0; m < messages.size(); ++m) {
      const auto [tag, count] = messages[m];
      if (ctx.rank == 0) {
        pg->send(data_values(0, count, 100 * m), 1, tag);
      } else {
        std::vector<float> got(count, -1.0f);
        pg->recv(got, 0, tag);
        check_values(got, data_values(0, count, 100 * m), "message " + std::to_string(m));
      }
    }
  });
}

// Both ranks send 64 MiB to each other at once, isend first, then a blocking recv. With
// blocking sends on both sides this deadlocks (lesson 02's README), and so does an isend
// that sends on the calling thread before it returns: that case fails here within
// kLargeMessageTimeout, saying deadlock (suite.h's large-message cases). With a real
// isend, each direction drains while the other rank receives.
TEST_P(PointToPoint, IsendBothWays64MiBDoesNotDeadlock) {
  run_ranks(
      2,
      [&](RankContext& ctx) {
        auto pg = make_group(backend(), ctx);
        use_large_message_timeout(*pg);
        const size_t count = 2 * kLargeMessageElements;
        const int peer = 1 - ctx.rank;
        const std::vector<float> mine = data_values(ctx.rank, count);
        std::vector<float> theirs(count, -1.0f);
        const auto start = std::chrono::steady_clock::now();
        WorkPtr send;
        const std::string call =
            "isend of 64 MiB to rank " + std::to_string(peer) + ", then recv of 64 MiB from it";
        if (!run_large(ctx, call, [&] {
              send = pg->isend(mine, peer, 3);
              pg->recv(theirs, peer, 3);
              send->wait();
            })) {
          return;
        }
        EXPECT_TRUE(send->is_completed());
        check_values(theirs, data_values(peer, count), "64 MiB from rank " + std::to_string(peer));
        EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
      },
      large_options());
}

// isend and irecv both ways, then wait on both.
TEST_P(PointToPoint, IsendIrecvBothWays) {
  run_ranks(2, [&](RankContext& ctx) {
    auto pg = make_group(backend(), ctx);
    const int peer = 1 - ctx.rank;
    for (size_t count : {size_t(0), size_t(1), size_t(4097), size_t(1) << 20}) {
      const std::vector<float> mine = data_values(ctx.rank, count, 7);
      std::vector<float> theirs(count, -1.0f);
      WorkPtr recv = pg->irecv(theirs, peer);
      WorkPtr send = pg->isend(mine, peer);
      wait_all({recv, send});
      EXPECT_TRUE(recv->is_completed() && send->is_completed());
      if (!check_values(theirs, data_values(peer, count, 7), "count " + std::to_string(count))) {
        return;
      }
    }
  });
}

// Every rank exchanges a message with every other rank; the sizes differ per pair, so a
// message delivered to the wrong rank or from the wrong rank is caught. World sizes 1..8.
TEST_P(PointToPoint, EveryPairExchanges) {
  for (int world = 1; world <= 8; ++world) {
    run_ranks(world, [&](RankContext& ctx) {
      auto pg = make_group(backend(), ctx);
      const auto count = [](int src, int dst) { return 1 + 3 * size_t(src) + 11 * size_t(dst); };
      std::vector<std::vector<float>> inbox(world);
      std::vector<std::vector<float>> outbox(world);
      std::vector<WorkPtr> works;
      for (int peer = 0; peer < world; ++peer) {
        if (peer == ctx.rank) continue;
        inbox[peer].assign(count(peer, ctx.rank), -1.0f);
        works.push_back(pg->irecv(inbox[peer], peer, 1));
      }
      for (int peer = 0; peer < world; ++peer) {
        if (peer == ctx.rank) continue;
        outbox[peer] = data_values(ctx.rank, count(ctx.rank, peer), 1000 * peer);
        works.push_back(pg->isend(outbox[peer], peer, 1));
      }
      wait_all(works);
      for (int peer = 0; peer < world; ++peer) {
        if (peer == ctx.rank) continue;
        check_values(inbox[peer], data_values(peer, count(peer, ctx.rank), 1000 * ctx.rank),
                     "from rank " + std::to_string(peer));
      }
      // And around a ring with blocking receives: isend right, recv from the left.
      const int right = (ctx.rank + 1) % world, left = (ctx.rank + world - 1) % world;
      if (world > 1) {
        for (size_t n : {size_t(0), size_t(1), size_t(65537)}) {
          const std::vector<float> mine = data_values(ctx.rank, n);
          std::vector<float> got(n, -1.0f);
          WorkPtr send = pg->isend(mine, right, 2);
          pg->recv(got, left, 2);
          send->wait();
          check_values(got, data_values(left, n), "ring, count " + std::to_string(n));
        }
      }
    });
  }
}

// Many operations in flight on one pair at once complete, in order, with the right data.
TEST_P(PointToPoint, ManyIsendsInFlightStayInOrder) {
  run_ranks(2, [&](RankContext& ctx) {
    auto pg = make_group(backend(), ctx);
    const int messages = 40;
    std::vector<std::vector<float>> buffers(messages);
    std::vector<WorkPtr> works;
    for (int m = 0; m < messages; ++m) {
      const size_t count = (m % 5 == 0) ? 0 : size_t(1) << (m % 17);
      if (ctx.rank == 0) {
        buffers[m] = data_values(0, count, m);
        works.push_back(pg->isend(buffers[m], 1, 4));
      } else {
        buffers[m].assign(count, -1.0f);
        works.push_back(pg->irecv(buffers[m], 0, 4));
      }
    }
    wait_all(works);
    if (ctx.rank == 1) {
      for (int m = 0; m < messages; ++m) {
        if (!check_values(buffers[m], data_values(0, buffers[m].size(), m),
                          "message " + std::to_string(m))) {
          return;
        }
      }
    }
  });
}

// is_completed() never blocks; wait(timeout) throws TimeoutError while the peer has not
// sent, and the same Work completes once it has.
TEST_P(PointToPoint, WorkIsCompletedNeverBlocksAndWaitTimesOut) {
  run_ranks(2, [&](RankContext& ctx) {
    auto pg = make_group(backend(), ctx);
    std::vector<float> data(5, -1.0f);
    if (ctx.rank == 1) {
      WorkPtr recv = pg->irecv(data, 0, 6);
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < 100; ++i) EXPECT_FALSE(recv->is_completed());
      EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500));
      EXPECT_THROW(recv->wait(std::chrono::milliseconds(50)), TimeoutError);
      ctx.store().set("p2p/go", "1");
      recv->wait();
      EXPECT_TRUE(recv->is_completed());
      check_values(data, data_values(0, 5), "after wait");
    } else {
      ctx.store().get("p2p/go");
      pg->send(data_values(0, 5), 1, 6);
    }
  });
}

// A buffer may be reused once wait() has returned: the message holds what the buffer
// held at isend time, not what it holds later.
TEST_P(PointToPoint, BufferReusableAfterWait) {
  run_ranks(2, [&](RankContext& ctx) {
    auto pg = make_group(backend(), ctx);
    const size_t count = 300000;  // larger than the socket buffers
    std::vector<float> buffer(count);
    if (ctx.rank == 0) {
      for (int m = 0; m < 3; ++m) {
        buffer = data_values(m, count);
        WorkPtr send = pg->isend(buffer, 1, 8);
        send->wait();
      }
    } else {
      for (int m = 0; m < 3; ++m) {
        pg->recv(buffer, 0, 8);
        check_values(buffer, data_values(m, count), "message " + std::to_string(m));
      }
    }
  });
}

}  // namespace course::test
