// suite_reductions.h: the truths of lesson 04 for any backend: reduce, all_reduce,
// all_gather, reduce_scatter and all_to_all against the serial oracle
// (collective_oracle.h), for every count of suite_counts(N), every op, every root, in place
// and out of place; results identical on every rank; mismatched counts give errors.
//
// Include once in a test binary, then instantiate with the backends it links:
//   INSTANTIATE_TEST_SUITE_P(Tcp, Reductions, testing::ValuesIn(world_params({"tcp"})),
//                            course::test::world_param_name);
#pragma once

#include <chrono>
#include <functional>

#include "suite.h"
#include "work.h"

namespace course::test {

class Reductions : public WorldSuite {};

inline std::string describe_call(const std::string& name, size_t count, ReduceOp op) {
  return name + " of " + std::to_string(count) + " (" + reduce_op_name(op) + ")";
}

TEST_P(Reductions, Reduce) {
  run_ranks(
      world(),
      [&](RankContext& ctx) {
        auto pg = make_group(backend(), ctx);
        for (size_t count : suite_counts(ctx.world)) {
          for (ReduceOp op : all_reduce_ops()) {
            for (int root = 0; root < ctx.world; ++root) {
              std::vector<float> data = reduce_values(ctx.rank, count);
              pg->reduce(data, op, root);
              if (ctx.rank == root && !check_values(data, expected_reduce(op, ctx.world, count),
                                                    describe_call("reduce", count, op) +
                                                        " to root " + std::to_string(root),
                                                    tolerance(op))) {
                return;
              }
            }
          }
        }
      },
      suite_options());
}

TEST_P(Reductions, AllReduce) {
  run_ranks(
      world(),
      [&](RankContext& ctx) {
        auto pg = make_group(backend(), ctx);
        ResultHash hash;
        for (size_t count : suite_counts(ctx.world)) {
          for (ReduceOp op : all_reduce_ops()) {
            std::vector<float> data = reduce_values(ctx.rank, count);
            pg->all_reduce(data, op);
            if (!check_values(data, expected_reduce(op, ctx.world, count),
                              describe_call("all_reduce", count, op), tolerance(op))) {
              return;
            }
            hash.add(data);
          }
        }
        expect_same_on_every_rank(ctx, "all_reduce", hash.value());
      },
      suite_options());
}

// all_reduce_async: several in flight, completing in order with the same results.
TEST_P(Reductions, AllReduceAsync) {
  run_ranks(
      world(),
      [&](RankContext& ctx) {
        auto pg = make_group(backend(), ctx);
        const std::vector<size_t> counts = suite_counts(ctx.world);
        std::vector<std::vector<float>> buffers;
        for (size_t count : counts) buffers.push_back(reduce_values(ctx.rank, count, count));
        std::vector<WorkPtr> works;
        for (auto& buffer : buffers) works.push_back(pg->all_reduce_async(buffer, ReduceOp::SUM));
        // A blocking call while they are in flight.
        std::vector<float> last = reduce_values(ctx.rank, 9);
        pg->all_reduce(last, ReduceOp::MAX);
        wait_all(works);
        for (size_t i = 0; i < counts.size(); ++i) {
          check_values(buffers[i], expected_reduce(ReduceOp::SUM, ctx.world, counts[i], counts[i]),
                       describe_call("all_reduce_async", counts[i], ReduceOp::SUM));
        }
        check_values(last, expected_reduce(ReduceOp::MAX, ctx.world, 9), "all_reduce after async");
      },
      suite_options());
}

TEST_P(Reductions, AllGather) {
  run_ranks(
      world(),
      [&](RankContext& ctx) {
        auto pg = make_group(backend(), ctx);
        const int n = ctx.world;
        ResultHash hash;
        for (size_t k : suite_counts(n)) {
          for (bool in_place : {false, true}) {
            std::vector<float> output = stale(ctx.rank, n * k);
            std::vector<float> separate = data_values(ctx.rank, k);
            std::span<const float> input = separate;
            if (in_place) {
              std::span<float> mine = std::span<float>(output).subspan(ctx.rank * k, k);
              std::copy(separate.begin(), separate.end(), mine.begin());
              input = mine;
            }
            pg->all_gather(input, output);
            if (!check_values(output, expected_gather(n, k),
                              "all_gather of " + std::to_string(k) + " per rank" +
                                  (in_place ? ", in place" : ""))) {
              return;
            }
            hash.add(output);
          }
        }
        expect_same_on_every_rank(ctx, "all_gather", hash.value());
      },
      suite_options());
}

TEST_P(Reductions, ReduceScatter) {
  run_ranks(
      world(),
      [&](RankContext& ctx) {
        auto pg = make_group(backend(), ctx);
        const int n = ctx.world;
        for (size_t k : suite_counts(n)) {
          for (ReduceOp op : all_reduce_ops()) {
            for (bool in_place : {false, true}) {
              std::vector<float> input = reduce_values(ctx.rank, n * k);
              std::vector<float> separate = stale(ctx.rank, k);
              std::span<float> output = separate;
              if (in_place) output = std::span<float>(input).subspan(ctx.rank * k, k);
              pg->reduce_scatter(input, output, op);
              if (!check_values(output, expected_reduce_scatter(op, n, ctx.rank, k),
                                describe_call("reduce_scatter", k, op) + " per rank" +
                                    (in_place ? ", in place" : ""),
                                tolerance(op))) {
                return;
              }
            }
          }
        }
      },
      suite_options());
}

TEST_P(Reductions, AllToAll) {
  run_ranks(
      world(),
      [&](RankContext& ctx) {
        auto pg = make_group(backend(), ctx);
        const int n = ctx.world;
        for (size_t k : suite_counts(n)) {
          const std::vector<float> input = data_values(ctx.rank, n * k);
          std::vector<float> output = stale(ctx.rank, n * k);
          pg->all_to_all(input, output);
          if (!check_values(output, expected_all_to_all(n, ctx.rank, k),
                            "all_to_all of " + std::to_string(k) + " per block")) {
            return;
          }
        }
      },
      suite_options());
}

// The last rank passes one element more than the others: every rank whose result depends
// on it throws a course::Error (for the all-* collectives, every rank), and nobody hangs.
TEST_P(Reductions, MismatchedCountsFailInsteadOfHanging) {
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
        std::vector<float> data = reduce_values(ctx.rank, k);
        std::vector<float> big = reduce_values(ctx.rank, n * k);
        std::vector<float> out(n * k);
        const bool reduce =
            attempt("reduce", [&](ProcessGroup& pg) { pg.reduce(data, ReduceOp::SUM, 0); });
        if (ctx.rank == 0) {
          EXPECT_TRUE(reduce) << "reduce to the root";
        }
        EXPECT_TRUE(attempt("all_reduce", [&](ProcessGroup& pg) {
          pg.all_reduce(data, ReduceOp::SUM);
        })) << "all_reduce";
        EXPECT_TRUE(attempt("all_gather", [&](ProcessGroup& pg) { pg.all_gather(data, out); }))
            << "all_gather";
        EXPECT_TRUE(attempt("reduce_scatter", [&](ProcessGroup& pg) {
          pg.reduce_scatter(big, data, ReduceOp::SUM);
        })) << "reduce_scatter";
        std::vector<float> received(n * k);
        EXPECT_TRUE(attempt("all_to_all", [&](ProcessGroup& pg) { pg.all_to_all(big, received); }))
            << "all_to_all";
        EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
      },
      suite_options(60));
}

// ---- messages larger than the socket buffers (suite.h) ---------------------------------
// Each collective once (SUM), with 32 MiB between each pair of ranks: an all_to_all or an
// all-reduce whose ranks all send before they receive deadlocks here, and fails within
// seconds saying so. Instantiate with world_params({...}, 2, 3).
class LargeReductions : public WorldSuite {
 protected:
  // Runs `call` on a fresh group with the large-message timeout.
  void run(const std::function<void(RankContext&, ProcessGroup&)>& call) {
    run_ranks(
        world(),
        [&](RankContext& ctx) {
          auto pg = make_group(backend(), ctx);
          use_large_message_timeout(*pg);
          call(ctx, *pg);
        },
        large_options());
  }
};

TEST_P(LargeReductions, AllReduceOf32MiB) {
  run([](RankContext& ctx, ProcessGroup& pg) {
    const size_t count = kLargeMessageElements;
    std::vector<float> data = reduce_values(ctx.rank, count);
    if (run_large(ctx, "all_reduce of 32 MiB (sum)", [&] { pg.all_reduce(data, ReduceOp::SUM); })) {
      check_values(data, expected_reduce(ReduceOp::SUM, ctx.world, count), "all_reduce of 32 MiB");
    }
  });
}

TEST_P(LargeReductions, AllGatherAndReduceScatterOf16MiBPerBlock) {
  run([](RankContext& ctx, ProcessGroup& pg) {
    const int n = ctx.world;
    const size_t k = kLargeMessageElements / 2;  // N blocks in or out: keep it quick
    std::vector<float> gathered = stale(ctx.rank, n * k);
    if (!run_large(ctx, "all_gather of 16 MiB per rank",
                   [&] { pg.all_gather(data_values(ctx.rank, k), gathered); }) ||
        !check_values(gathered, expected_gather(n, k), "all_gather of 16 MiB per rank")) {
      return;
    }
    std::vector<float> block = stale(ctx.rank, k);
    if (run_large(ctx, "reduce_scatter of 16 MiB per block (sum)", [&] {
          pg.reduce_scatter(reduce_values(ctx.rank, n * k), block, ReduceOp::SUM);
        })) {
      check_values(block, expected_reduce_scatter(ReduceOp::SUM, n, ctx.rank, k),
                   "reduce_scatter of 16 MiB per block");
    }
  });
}

// On a group of its own: sockets that have carried large transfers grow their buffers and
// might hold a whole block, hiding the deadlock of sends posted before the receives.
TEST_P(LargeReductions, AllToAllOf32MiBPerBlock) {
  run([](RankContext& ctx, ProcessGroup& pg) {
    const int n = ctx.world;
    const size_t k = kLargeMessageElements;
    std::vector<float> output = stale(ctx.rank, n * k);
    if (run_large(ctx, "all_to_all of 32 MiB per block",
                  [&] { pg.all_to_all(data_values(ctx.rank, n * k), output); })) {
      check_values(output, expected_all_to_all(n, ctx.rank, k), "all_to_all of 32 MiB per block");
    }
  });
}

}  // namespace course::test
