// all_reduce_ring_test.cpp: lesson 05's own truths: the segment arithmetic, and
// all_reduce_ring called directly on a TcpComm against the serial oracle for every op,
// counts 0, 1, N-1, N+1, 7N+3 and 65537, chunk sizes from 1 element up, sends on this
// thread and on a sender thread, world sizes 1-8; identical bits on every rank; mismatched counts
// fail fast on every rank.
//
//   ctest -L lesson05     or     ./build/solutions/test_05 --gtest_filter='AllReduceRing*'
//
// What this is not: the backend suites (backends_test.cpp runs lessons 02-05's suites on
// the tcp backend with the ring installed, and on gloo).
#include "all_reduce_ring.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>

#include "../collectives/suite.h"
#include "activity.h"
#include "reductions.h"
#include "ring_allreduce.h"

namespace course::test {
namespace {

// ---- the segments ---------------------------------------------------------------------

TEST(RingSegments, ExamplesFromTheHeader) {
  EXPECT_EQ(ring_segment_offset(10, 4, 0), 0u);
  EXPECT_EQ(ring_segment_offset(10, 4, 1), 3u);
  EXPECT_EQ(ring_segment_offset(10, 4, 2), 6u);
  EXPECT_EQ(ring_segment_offset(10, 4, 3), 8u);
  EXPECT_EQ(ring_segment_offset(10, 4, 4), 10u);
  EXPECT_EQ(ring_segment_count(10, 4, 0), 3u);
  EXPECT_EQ(ring_segment_count(10, 4, 3), 2u);
  EXPECT_EQ(ring_segment_count(2, 4, 1), 1u);
  EXPECT_EQ(ring_segment_count(2, 4, 2), 0u);
  EXPECT_EQ(ring_segment_offset(2, 4, 3), 2u);
}

// For every count and world: the segments tile [0, count) in order, their sizes differ by
// at most one, and the larger ones come first.
TEST(RingSegments, TileTheBufferEvenlyWithTheRemainderInFront) {
  for (int world = 1; world <= 8; ++world) {
    for (size_t count = 0; count <= 50; ++count) {
      size_t next = 0;
      for (int s = 0; s < world; ++s) {
        const size_t offset = ring_segment_offset(count, world, s);
        const size_t len = ring_segment_count(count, world, s);
        ASSERT_EQ(offset, next) << "count " << count << ", world " << world << ", segment " << s;
        ASSERT_TRUE(len == count / world || len == count / world + 1)
            << "count " << count << ", world " << world << ", segment " << s << " has " << len;
        ASSERT_EQ(len, count / world + (static_cast<size_t>(s) < count % world ? 1 : 0));
        next = offset + len;
      }
      ASSERT_EQ(next, count) << "count " << count << ", world " << world;
      ASSERT_EQ(ring_segment_offset(count, world, world), count);
    }
  }
}

// ---- the ring, called directly ----------------------------------------------------------

class AllReduceRing : public testing::TestWithParam<int> {
 protected:
  int world() const { return GetParam(); }
};

std::string call(size_t count, ReduceOp op, size_t chunk) {
  return "all_reduce_ring of " + std::to_string(count) + " (" + reduce_op_name(op) +
         ") in chunks of " + std::to_string(chunk);
}

// The chunk sizes worth trying for a count: 1 and 3 (every segment many chunks, the last
// one short) where that stays quick, 64 or 1000 (65537 elements make 8 to 128 chunks per
// segment), and always the default.
std::vector<size_t> chunks_for(size_t count) {
  std::vector<size_t> chunks;
  if (count <= 100) chunks = {1, 3};
  chunks.push_back(count <= 1000 ? 64 : 1000);
  chunks.push_back(kRingChunkElements);
  return chunks;
}

TEST_P(AllReduceRing, MatchesTheOracleForEveryOpCountAndChunkSize) {
  run_ranks(
      world(),
      [&](RankContext& ctx) {
        auto comm = make_tcp_comm(ctx);
        ResultHash hash;
        for (size_t count : suite_counts(ctx.world)) {
          for (size_t chunk : chunks_for(count)) {
            for (ReduceOp op : all_reduce_ops()) {
              std::vector<float> data = reduce_values(ctx.rank, count);
              all_reduce_ring(*comm, data, op, chunk);
              if (!check_values(data, expected_reduce(op, ctx.world, count), call(count, op, chunk),
                                tolerance(op))) {
                return;
              }
              hash.add(data);
            }
          }
        }
        expect_same_on_every_rank(ctx, "ring", hash.value());
      },
      suite_options(90));
}

// The same with the sends on the send channel's thread (DuplexMode::sender_thread), which
// the ring uses for large buffers only: forced here with sender_thread_bytes = 0.
TEST_P(AllReduceRing, MatchesTheOracleWithASenderThread) {
  run_ranks(
      world(),
      [&](RankContext& ctx) {
        auto comm = make_tcp_comm(ctx);
        ResultHash hash;
        for (size_t count : suite_counts(ctx.world)) {
          for (size_t chunk : {size_t{3}, kRingChunkElements}) {
            if (chunk == 3 && count > 1000) continue;
            for (ReduceOp op : all_reduce_ops()) {
              std::vector<float> data = reduce_values(ctx.rank, count);
              all_reduce_ring(*comm, data, op, chunk, /*sender_thread_bytes=*/0);
              if (!check_values(data, expected_reduce(op, ctx.world, count),
                                call(count, op, chunk) + ", sender thread", tolerance(op))) {
                return;
              }
              hash.add(data);
            }
          }
        }
        expect_same_on_every_rank(ctx, "ring-sender-thread", hash.value());
      },
      suite_options(90));
}

// With power-of-two inputs every sum is exact, so the ring and lesson 04's naive
// all-reduce (another order of additions) must agree to the bit.
TEST_P(AllReduceRing, AgreesWithTheNaiveAllReduceToTheBit) {
  run_ranks(
      world(),
      [&](RankContext& ctx) {
        auto comm = make_tcp_comm(ctx);
        const size_t count = 7 * ctx.world + 3;
        for (ReduceOp op : {ReduceOp::SUM, ReduceOp::PRODUCT, ReduceOp::MIN, ReduceOp::MAX}) {
          std::vector<float> ring = reduce_values(ctx.rank, count);
          std::vector<float> naive = ring;
          all_reduce_ring(*comm, ring, op);
          // A hang in here names the naive all-reduce, not the ring (activity.h).
          const ActivityLabel label("all_reduce_naive (lesson 04, the comparison)");
          all_reduce_naive(*comm, naive, op);
          check_values(ring, naive, call(count, op, kRingChunkElements) + " vs all_reduce_naive");
        }
      },
      suite_options());
}

// A rank that passes one element more: the ring's header catches it before any payload
// moves. Its neighbours throw ProtocolError naming the sender and both counts; every other rank
// fails too (the abort cascades around the ring), and nobody hangs.
TEST_P(AllReduceRing, MismatchedCountsFailOnEveryRankInsteadOfHanging) {
  if (world() < 2) GTEST_SKIP() << "needs two ranks";
  run_ranks(
      world(),
      [&](RankContext& ctx) {
        auto comm = make_tcp_comm(ctx);
        const int odd = ctx.world - 1;
        std::vector<float> data = reduce_values(ctx.rank, ctx.rank == odd ? 6 : 5);
        const auto start = std::chrono::steady_clock::now();
        try {
          all_reduce_ring(*comm, data, ReduceOp::SUM);
          ADD_FAILURE() << "all_reduce_ring returned although rank " << odd << " passed 6 elements";
        } catch (const ProtocolError& e) {
          // The odd rank's right neighbour (rank 0) reads its header, and the odd rank
          // reads its left neighbour's: each names the sender's count and its own.
          const std::string what = e.what();
          const int left = (ctx.rank - 1 + ctx.world) % ctx.world;
          if (ctx.rank == 0 || ctx.rank == odd) {
            const size_t theirs = left == odd ? 6 : 5;
            EXPECT_NE(what.find("rank " + std::to_string(left) + " all-reduces " +
                                std::to_string(theirs) + " elements"),
                      std::string::npos)
                << "rank " << ctx.rank << ": " << what;
            EXPECT_NE(what.find("rank " + std::to_string(ctx.rank) + " " +
                                std::to_string(data.size()) + ";"),
                      std::string::npos)
                << "rank " << ctx.rank << ": " << what;
          }
        } catch (const Error& e) {
          // Not a neighbour of the odd rank: the abort reached it as a closed connection.
          EXPECT_TRUE(ctx.rank != odd && ctx.rank != 0) << "rank " << ctx.rank << ": " << e.what();
        }
        EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
      },
      suite_options());
}

// Segments larger than the socket buffers (16 MiB each; a loopback socket holds a few
// MiB), in both duplex modes: a ring that sends a whole segment before it receives (a
// flush() after each post_send) passes every small case, because the kernel takes the
// bytes, and deadlocks here. With the comm's timeout at kLargeMessageTimeout it fails in
// seconds, naming all_reduce_ring and saying deadlock (suite.h's large-message cases).
// Sending a segment before receiving it is a deadlock on 2 and 3 ranks alike.
class AllReduceRingLarge : public AllReduceRing {};

TEST_P(AllReduceRingLarge, SegmentsLargerThanTheSocketBuffersDoNotDeadlock) {
  run_ranks(
      world(),
      [&](RankContext& ctx) {
        const size_t count = static_cast<size_t>(ctx.world) * (kLargeMessageElements / 2) + 3;
        const std::vector<float> expected = expected_reduce(ReduceOp::SUM, ctx.world, count);
        for (const size_t sender_thread_bytes : {SIZE_MAX, size_t{0}}) {
          // A mesh per mode: sockets that have carried large transfers grow their buffers
          // (up to tcp_rmem's maximum, 32 MiB on some systems) and might hold a segment.
          auto comm =
              make_tcp_comm(ctx, sender_thread_bytes == 0 ? "sender" : "one", kLargeMessageTimeout);
          const std::string what = call(count, ReduceOp::SUM, kRingChunkElements) +
                                   (sender_thread_bytes == 0 ? ", sender thread" : ", one thread");
          std::vector<float> data = reduce_values(ctx.rank, count);
          if (!run_large(ctx, what, [&] {
                all_reduce_ring(*comm, data, ReduceOp::SUM, kRingChunkElements,
                                sender_thread_bytes);
              })) {
            return;
          }
          if (!check_values(data, expected, what)) return;
        }
      },
      large_options());
}

INSTANTIATE_TEST_SUITE_P(Worlds, AllReduceRingLarge, testing::Values(2, 3),
                         [](const testing::TestParamInfo<int>& info) {
                           return "world" + std::to_string(info.param);
                         });

TEST(AllReduceRingArguments, ChunkOfZeroIsAConfigError) {
  run_ranks(2, [&](RankContext& ctx) {
    auto comm = make_tcp_comm(ctx);
    std::vector<float> data = reduce_values(ctx.rank, 10);
    EXPECT_THROW(all_reduce_ring(*comm, data, ReduceOp::SUM, 0), ConfigError);
  });
}

TEST(AllReduceRingInstall, TheTcpBackendRunsTheRingAndKeepsNaiveByName) {
  TcpAlgorithms algorithms;
  install_lesson05(algorithms);
  EXPECT_EQ(algorithms.names["all_reduce"], "ring (lesson 05)");
  EXPECT_TRUE(algorithms.all_reduce);
  EXPECT_TRUE(algorithms.reduce_scatter) << "install_lesson05 must install lessons 02-04 too";
  TcpAlgorithms naive;
  install_lesson04(naive);
  EXPECT_NE(naive.names["all_reduce"], algorithms.names["all_reduce"]);
}

INSTANTIATE_TEST_SUITE_P(Worlds, AllReduceRing, testing::Range(1, 9),
                         [](const testing::TestParamInfo<int>& info) {
                           return "world" + std::to_string(info.param);
                         });

}  // namespace
}  // namespace course::test
