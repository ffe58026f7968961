// suite_one_to_all.h: the truths of lesson 03 for any backend: broadcast, scatter, gather
// and barrier against the serial oracle (collective_oracle.h), for every count of
// suite_counts(N), every root, in place and out of place; results identical on every rank;
// counts that differ across ranks give errors, not hangs or wrong data.
//
// Include once in a test binary, then instantiate with the backends it links:
//   INSTANTIATE_TEST_SUITE_P(Tcp, OneToAll, testing::ValuesIn(world_params({"tcp"})),
//                            course::test::world_param_name);
#pragma once

#include <atomic>
#include <chrono>
#include <thread>

#include "suite.h"

namespace course::test {

class OneToAll : public WorldSuite {};

TEST_P(OneToAll, Broadcast) {
  run_ranks(
      world(),
      [&](RankContext& ctx) {
        auto pg = make_group(backend(), ctx);
        ResultHash hash;
        for (size_t count : suite_counts(ctx.world)) {
          for (int root = 0; root < ctx.world; ++root) {
            std::vector<float> data =
                ctx.rank == root ? data_values(root, count) : stale(ctx.rank, count);
            pg->broadcast(data, root);
            if (!check_values(data, expected_broadcast(root, count),
                              "broadcast of " + std::to_string(count) + " from root " +
                                  std::to_string(root))) {
              return;
            }
            hash.add(data);
          }
        }
        expect_same_on_every_rank(ctx, "broadcast", hash.value());
      },
      suite_options());
}

TEST_P(OneToAll, Scatter) {
  run_ranks(
      world(),
      [&](RankContext& ctx) {
        auto pg = make_group(backend(), ctx);
        const int n = ctx.world;
        for (size_t k : suite_counts(n)) {
          for (int root = 0; root < n; ++root) {
            for (bool in_place : {false, true}) {
              const std::string call = "scatter of " + std::to_string(k) + " per rank from root " +
                                       std::to_string(root) + (in_place ? ", in place" : "");
              // The root's input is N blocks; non-roots pass an empty input (it is ignored).
              std::vector<float> input =
                  ctx.rank == root ? data_values(root, n * k) : std::vector<float>{};
              std::vector<float> separate = stale(ctx.rank, k);
              std::span<float> output = separate;
              if (in_place && ctx.rank == root)
                output = std::span<float>(input).subspan(root * k, k);
              pg->scatter(input, output, root);
              if (!check_values(output, expected_scatter(root, ctx.rank, k), call)) return;
            }
          }
        }
      },
      suite_options());
}

TEST_P(OneToAll, Gather) {
  run_ranks(
      world(),
      [&](RankContext& ctx) {
        auto pg = make_group(backend(), ctx);
        const int n = ctx.world;
        for (size_t k : suite_counts(n)) {
          for (int root = 0; root < n; ++root) {
            for (bool in_place : {false, true}) {
              const std::string call = "gather of " + std::to_string(k) + " per rank to root " +
                                       std::to_string(root) + (in_place ? ", in place" : "");
              std::vector<float> output = stale(ctx.rank, n * k);
              std::vector<float> separate = data_values(ctx.rank, k);
              std::span<const float> input = separate;
              if (in_place) {
                // Input is this rank's block of output (on non-roots too: output is theirs to
                // pass, and the block must still go out intact).
                std::span<float> mine = std::span<float>(output).subspan(ctx.rank * k, k);
                std::copy(separate.begin(), separate.end(), mine.begin());
                input = mine;
              }
              pg->gather(input, output, root);
              if (ctx.rank == root && !check_values(output, expected_gather(n, k), call)) return;
            }
          }
          // Non-roots may pass an empty output.
          std::vector<float> output = ctx.rank == 0 ? stale(0, n * k) : std::vector<float>{};
          pg->gather(data_values(ctx.rank, k), output, 0);
          if (ctx.rank == 0 &&
              !check_values(output, expected_gather(n, k), "gather, empty outputs")) {
            return;
          }
        }
      },
      suite_options());
}

// Nobody leaves a barrier before everybody has entered it: every rank counts itself in
// through the store before the barrier and reads the count after it.
TEST_P(OneToAll, Barrier) {
  run_ranks(
      world(),
      [&](RankContext& ctx) {
        auto pg = make_group(backend(), ctx);
        for (int round = 0; round < 5; ++round) {
          const std::string key = "barrier/arrived/" + std::to_string(round);
          // The last rank dawdles, so that a barrier that does not wait would be caught.
          if (ctx.rank == ctx.world - 1) std::this_thread::sleep_for(std::chrono::milliseconds(20));
          ctx.store().add(key, 1);
          pg->barrier();
          EXPECT_EQ(ctx.store().add(key, 0), ctx.world)
              << "rank " << ctx.rank << " left barrier " << round << " before every rank entered";
        }
      },
      suite_options());
}

// The last rank passes one element more than the others. The ranks whose result would
// depend on it must throw (a course::Error), nobody may hang, and the ranks that do not
// throw must hold correct data.
TEST_P(OneToAll, MismatchedCountsFailInsteadOfHanging) {
  if (world() < 2) GTEST_SKIP() << "one rank: no count to disagree with";
  if (!detects_mismatched_counts(backend())) GTEST_SKIP() << backend() << " does not promise it";
  run_ranks(
      world(),
      [&](RankContext& ctx) {
        const int n = ctx.world, odd = n - 1;
        const size_t k = ctx.rank == odd ? 6 : 5;
        const auto attempt = [&](const std::string& name,
                                 const std::function<void(ProcessGroup&)>& call) {
          return throws_on_mismatch(backend(), ctx, name, call);
        };
        const auto start = std::chrono::steady_clock::now();
        {  // broadcast from 0: the odd rank must throw; the others get the root's data
          std::vector<float> data = ctx.rank == 0 ? data_values(0, k) : stale(ctx.rank, k);
          const bool threw = attempt("broadcast", [&](ProcessGroup& pg) { pg.broadcast(data, 0); });
          if (ctx.rank == odd) {
            EXPECT_TRUE(threw) << "broadcast with a count that differs";
          }
          if (!threw) check_values(data, expected_broadcast(0, 5), "broadcast on a matching rank");
        }
        {  // scatter from 0: the odd rank's output is larger than its block
          std::vector<float> input = ctx.rank == 0 ? data_values(0, n * k) : std::vector<float>{};
          std::vector<float> output = stale(ctx.rank, k);
          const bool threw =
              attempt("scatter", [&](ProcessGroup& pg) { pg.scatter(input, output, 0); });
          if (ctx.rank == odd) {
            EXPECT_TRUE(threw) << "scatter with a count that differs";
          }
          if (!threw)
            check_values(output, expected_scatter(0, ctx.rank, 5), "scatter, matching rank");
        }
        {  // gather to 0: the root must throw
          std::vector<float> output(ctx.rank == 0 ? n * k : 0);
          const bool threw = attempt(
              "gather", [&](ProcessGroup& pg) { pg.gather(data_values(ctx.rank, k), output, 0); });
          if (ctx.rank == 0) {
            EXPECT_TRUE(threw) << "gather with a count that differs";
          }
        }
        EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
      },
      suite_options(60));
}

// ---- messages larger than the socket buffers (suite.h) ---------------------------------
// One broadcast, scatter and gather each, with 32 MiB going to or from every rank: a root
// that waits on one peer while another peer waits on it stalls here, within seconds.
// Instantiate with world_params({...}, 2, 3).
class LargeOneToAll : public WorldSuite {};

TEST_P(LargeOneToAll, BroadcastScatterGatherOf32MiBPerRank) {
  run_ranks(
      world(),
      [&](RankContext& ctx) {
        auto pg = make_group(backend(), ctx);
        use_large_message_timeout(*pg);
        const int n = ctx.world;
        const size_t k = kLargeMessageElements;
        const int root = n - 1;  // not rank 0: a root fixed at 0 is caught too
        std::vector<float> data = ctx.rank == root ? data_values(root, k) : stale(ctx.rank, k);
        if (!run_large(ctx, "broadcast of 32 MiB from root " + std::to_string(root),
                       [&] { pg->broadcast(data, root); }) ||
            !check_values(data, expected_broadcast(root, k), "broadcast of 32 MiB")) {
          return;
        }
        const std::vector<float> input =
            ctx.rank == root ? data_values(root, n * k) : std::vector<float>{};
        std::vector<float> output = stale(ctx.rank, k);
        if (!run_large(ctx, "scatter of 32 MiB per rank from root " + std::to_string(root),
                       [&] { pg->scatter(input, output, root); }) ||
            !check_values(output, expected_scatter(root, ctx.rank, k), "scatter of 32 MiB")) {
          return;
        }
        std::vector<float> gathered = ctx.rank == root ? stale(root, n * k) : std::vector<float>{};
        if (!run_large(ctx, "gather of 32 MiB per rank to root " + std::to_string(root),
                       [&] { pg->gather(data_values(ctx.rank, k), gathered, root); })) {
          return;
        }
        if (ctx.rank == root) check_values(gathered, expected_gather(n, k), "gather of 32 MiB");
      },
      large_options());
}

}  // namespace course::test
