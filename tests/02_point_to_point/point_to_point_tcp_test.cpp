// point_to_point_tcp_test.cpp: what lesson 02 promises beyond any backend's send/recv: the
// wire format, the errors it names, the deadlock that isend avoids, and the failure policy.
//
//   ctest -L lesson02        or        ./build/solutions/test_02 --gtest_filter='TcpPointToPoint.*'
#include <gtest/gtest.h>

#include <cstring>

#include "../collectives/suite.h"
#include "point_to_point.h"

namespace course::test {
namespace {

TcpAlgorithms lesson02() {
  TcpAlgorithms algorithms;
  install_lesson02(algorithms);
  return algorithms;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// A message is a 16-byte header (magic, tag, count) and the payload: read it raw.
TEST(TcpPointToPoint, MessageIsSixteenByteHeaderThenPayload) {
  run_ranks(2, [](RankContext& ctx) {
    auto comm = make_tcp_comm(ctx);
    const std::vector<float> payload{1.5f, -2.0f, 3.25f};
    if (ctx.rank == 0) {
      p2p_send(*comm, payload, 1, 7);
    } else {
      unsigned char bytes[16 + 12];
      comm->stream(0).recv_all(bytes, sizeof(bytes), comm->timeout());
      MessageHeader header;
      std::memcpy(&header, bytes, 16);
      EXPECT_EQ(header.magic, kMessageMagic);
      EXPECT_EQ(header.tag, 7);
      EXPECT_EQ(header.count, 3u);
      float got[3];
      std::memcpy(got, bytes + 16, sizeof(got));
      EXPECT_EQ(std::vector<float>(got, got + 3), payload);
    }
  });
}

// The receive buffer is smaller (then larger) than the message: a ProtocolError naming
// both sizes and both ranks.
TEST(TcpPointToPoint, RecvOfAnotherSizeNamesBothSizesAndBothRanks) {
  run_ranks(2, [](RankContext& ctx) {
    for (size_t buffer : {size_t(4), size_t(12)}) {
      auto pg = make_tcp_group(ctx, lesson02(), "size" + std::to_string(buffer));
      if (ctx.rank == 0) {
        pg->send(data_values(0, 8), 1, 0);
      } else {
        std::vector<float> data(buffer);
        try {
          pg->recv(data, 0, 0);
          ADD_FAILURE() << "a receive of " << buffer << " elements took a message of 8";
        } catch (const ProtocolError& e) {
          // detail(): the message without its "rank 1 (pid ...)" prefix, which would
          // supply "rank 1" whatever the message says.
          const std::string& what = e.detail();
          EXPECT_TRUE(contains(what, "8 elements")) << what;
          EXPECT_TRUE(contains(what, std::to_string(buffer) + " elements")) << what;
          EXPECT_TRUE(contains(what, "rank 0")) << what;
          EXPECT_TRUE(contains(what, "rank 1")) << what;
        }
      }
      ctx.store().set("size/done/" + std::to_string(buffer) + "/" + std::to_string(ctx.rank), "1");
      ctx.store().get("size/done/" + std::to_string(buffer) + "/" + std::to_string(1 - ctx.rank));
    }
  });
}

// Receives are matched in order: a receive for another tag than the next message's is a
// ProtocolError naming both tags (here: a user's tag and a collective's).
TEST(TcpPointToPoint, RecvOfAnotherTagNamesBothTags) {
  run_ranks(2, [](RankContext& ctx) {
    auto comm = make_tcp_comm(ctx);
    std::vector<float> data(2, 1.0f);
    if (ctx.rank == 0) {
      p2p_send(*comm, data, 1, tags::kBroadcast);
    } else {
      try {
        p2p_recv(*comm, data, 0, 4);
        ADD_FAILURE() << "a receive for tag 4 took a message with tag -1";
      } catch (const ProtocolError& e) {
        EXPECT_TRUE(contains(e.what(), "tag 4")) << e.what();
        EXPECT_TRUE(contains(e.what(), "tag -1 (broadcast)")) << e.what();
      }
    }
  });
}

// Both ranks blocking-send 64 MiB before receiving: neither send can finish, because
// neither rank reads. The sends time out (1 s here) instead of hanging forever. This is
// the deadlock that IsendBothWays64MiBDoesNotDeadlock avoids.
TEST(TcpPointToPoint, BlockingSendsBothWaysDeadlock) {
  run_ranks(
      2,
      [](RankContext& ctx) {
        auto comm = make_tcp_comm(ctx, "deadlock", std::chrono::milliseconds(1000));
        const std::vector<float> big((64u << 20) / sizeof(float), 1.0f);
        EXPECT_THROW(p2p_send(*comm, big, 1 - ctx.rank), NetworkError);
      },
      suite_options(30));
}

// After an error the group is aborted: the next call on it throws at once, naming the
// first error, and the peer's next receive fails instead of waiting for its timeout.
TEST(TcpPointToPoint, AnErrorAbortsTheGroupOnBothSides) {
  run_ranks(2, [](RankContext& ctx) {
    auto pg = make_tcp_group(ctx, lesson02());
    std::vector<float> data(3);
    if (ctx.rank == 0) {
      pg->send(data_values(0, 5), 1);
      const auto start = std::chrono::steady_clock::now();
      EXPECT_THROW(pg->recv(data, 1), NetworkError);  // rank 1 aborted: its sockets closed
      EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
    } else {
      EXPECT_THROW(pg->recv(data, 0), ProtocolError);
      try {
        pg->send(data, 0);
        ADD_FAILURE() << "a send on an aborted group succeeded";
      } catch (const NetworkError& e) {
        EXPECT_TRUE(contains(e.what(), "aborted")) << e.what();
        EXPECT_TRUE(contains(e.what(), "5 elements")) << e.what();  // the first error
      }
    }
  });
}

// Negative tags belong to the collectives; a peer must be another rank of the group.
TEST(TcpPointToPoint, ArgumentsAreCheckedBeforeAnythingIsSent) {
  run_ranks(2, [](RankContext& ctx) {
    auto pg = make_tcp_group(ctx, lesson02());
    std::vector<float> data(3);
    EXPECT_THROW(pg->send(data, 1 - ctx.rank, -1), ConfigError);
    EXPECT_THROW(pg->irecv(data, 1 - ctx.rank, -3), ConfigError);
    EXPECT_THROW(pg->send(data, ctx.rank), ConfigError);
    EXPECT_THROW(pg->recv(data, 2), ConfigError);
    // The group still works: nothing was sent. (The isend's buffer must outlive its wait:
    // a temporary here would be freed while the send still reads it.)
    const std::vector<float> mine = data_values(ctx.rank, 3);
    WorkPtr send = pg->isend(mine, 1 - ctx.rank);
    pg->recv(data, 1 - ctx.rank);
    send->wait();
    check_values(data, data_values(1 - ctx.rank, 3), "after the rejected calls");
  });
}

// A blocking send queued behind isends to the same rank leaves after them (one order per
// peer and direction), and receives see the messages in that order.
TEST(TcpPointToPoint, BlockingSendWaitsForEarlierIsends) {
  run_ranks(2, [](RankContext& ctx) {
    auto comm = make_tcp_comm(ctx);
    const size_t big = 1u << 20;
    if (ctx.rank == 0) {
      const std::vector<float> a = data_values(0, big), b = data_values(1, big);
      WorkPtr wa = p2p_isend(*comm, a, 1, 1);
      WorkPtr wb = p2p_isend(*comm, b, 1, 2);
      p2p_send(*comm, data_values(2, 3), 1, 3);  // runs after a and b have gone
      EXPECT_TRUE(wa->is_completed() && wb->is_completed());
      wait_all({wa, wb});
    } else {
      std::vector<float> a(big), b(big), c(3);
      p2p_recv(*comm, a, 0, 1);
      p2p_recv(*comm, b, 0, 2);
      p2p_recv(*comm, c, 0, 3);
      check_values(a, data_values(0, big), "first");
      check_values(b, data_values(1, big), "second");
      check_values(c, data_values(2, 3), "third");
    }
  });
}

}  // namespace
}  // namespace course::test
