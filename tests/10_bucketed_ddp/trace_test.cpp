// trace_test.cpp: lesson 10, the timeline: valid Chrome trace JSON with events from every
// rank, and an all-reduce launched before backward ended (overlap observed, not assumed).
//
//   ./build/solutions/test_10 --gtest_filter='Trace*'
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "ddp_fixtures.h"
#include "distributed_data_parallel.h"
#include "error.h"
#include "trace_recorder.h"

namespace course::test {
namespace {

TEST(Trace, SpansSurviveSerialization) {
  TraceRecorder trace(0);
  trace.span(TraceRecorder::kCompute, "forward", 10.5, 20.25, "x");
  trace.span(TraceRecorder::kComm, "all_reduce bucket 0", 15, 40, "");
  const std::vector<TraceSpan> back = parse_spans(trace.serialize());
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].name, "forward");
  EXPECT_EQ(back[0].detail, "x");
  EXPECT_DOUBLE_EQ(back[0].end_us, 20.25);
  EXPECT_EQ(back[1].lane, TraceRecorder::kComm);
  EXPECT_THROW(parse_spans("not a span\n"), ProtocolError);
}

// gather_spans (lessons 10 and 16 ship their traces with it): rank r records r + 1 spans
// whose names and details carry r and a byte above 127, so a text cut at another rank's
// length, a rank's slot read from the wrong offset or a byte sign-extended on the way
// shows.
TEST(Trace, GatherSpansBringsEveryRanksSpansToRankZeroInRankOrder) {
  constexpr int kWorld = 3;
  run_ranks(kWorld, [&](RankContext& ctx) {
    auto group = make_group("tcp", ctx);
    TraceRecorder trace(ctx.rank);
    for (int i = 0; i <= ctx.rank; ++i) {
      trace.span(i % 2, "span " + std::to_string(ctx.rank) + "." + std::to_string(i) + " \xc3\xa9",
                 100.0 * ctx.rank + i, 100.0 * ctx.rank + i + 0.5, std::string(ctx.rank * 7, 'd'));
    }
    const std::vector<std::vector<TraceSpan>> all = gather_spans(trace, *group);
    if (ctx.rank != 0) {
      EXPECT_TRUE(all.empty()) << "rank " << ctx.rank;
      return;
    }
    ASSERT_EQ(all.size(), static_cast<size_t>(kWorld));
    for (int r = 0; r < kWorld; ++r) {
      SCOPED_TRACE("rank " + std::to_string(r) + "'s spans");
      ASSERT_EQ(all[r].size(), static_cast<size_t>(r + 1));
      for (int i = 0; i <= r; ++i) {
        const TraceSpan& s = all[r][i];
        EXPECT_EQ(s.lane, i % 2);
        EXPECT_EQ(s.name, "span " + std::to_string(r) + "." + std::to_string(i) + " \xc3\xa9");
        EXPECT_DOUBLE_EQ(s.start_us, 100.0 * r + i);
        EXPECT_DOUBLE_EQ(s.end_us, 100.0 * r + i + 0.5);
        EXPECT_EQ(s.detail, std::string(r * 7, 'd'));
      }
    }
  });
}

TEST(Trace, EveryRankAppearsAndAnAllReduceStartsBeforeBackwardEnds) {
  const std::string path = std::filesystem::temp_directory_path().string() + "/test10-trace-" +
                           std::to_string(::getpid()) + ".json";
  run_ranks(2, [&](RankContext& ctx) {
    auto group = make_group("tcp", ctx);
    TraceRecorder trace(ctx.rank);
    Rng rng(3);
    auto model = make_mlp({32, 64, 64, 64, 8}, rng);
    // Small buckets: the last layer's bucket is complete long before the first layer's.
    DistributedDataParallel ddp(
        *model, *group, {.first_bucket_bytes = 4096, .bucket_cap_bytes = 8192, .trace = &trace});
    Sgd opt(model->parameters(), {.lr = 0.05f});
    for (int step = 0; step < 2; ++step) {
      const auto batch = make_batch(16, 32, 8, step + 10 * ctx.rank);
      opt.zero_grad();
      Variable loss = cross_entropy(ddp.forward(Variable(batch.first)), batch.second);
      trace.begin_backward();
      const double b0 = TraceRecorder::now_us();
      loss.backward();
      trace.span(TraceRecorder::kCompute, "backward (whole)", b0, TraceRecorder::now_us());
      const double o0 = TraceRecorder::now_us();
      opt.step();
      trace.span(TraceRecorder::kCompute, "optimizer", o0, TraceRecorder::now_us());
    }
    ctx.store().set("trace/" + std::to_string(ctx.rank), trace.serialize());
    if (ctx.rank != 0) return;
    std::vector<std::vector<TraceSpan>> ranks;
    for (int r = 0; r < ctx.world; ++r) {
      ranks.push_back(parse_spans(ctx.store().get("trace/" + std::to_string(r))));
    }
    write_chrome_trace(path, ranks);
  });
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  const nlohmann::json doc = nlohmann::json::parse(in);  // throws on invalid JSON
  std::filesystem::remove(path);
  const auto& events = doc.at("traceEvents");
  std::map<int, std::vector<nlohmann::json>> by_rank;
  for (const auto& e : events) {
    if (e.at("ph") == "X") by_rank[e.at("pid").get<int>()].push_back(e);
  }
  ASSERT_EQ(by_rank.size(), 2u);
  for (const auto& [rank, spans] : by_rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    const auto starts_with = [](const std::string& s, const char* prefix) {
      return s.rfind(prefix, 0) == 0;
    };
    std::vector<double> forwards;
    int hooks = 0, reduces = 0, waits = 0;
    for (const auto& e : spans) {
      const std::string name = e.at("name");
      EXPECT_GE(e.at("dur").get<double>(), 0.0);
      if (name == "forward") forwards.push_back(e.at("ts"));
      waits += name == "wait for all-reduces";
      hooks += starts_with(name, "hook ");
      if (starts_with(name, "all_reduce bucket")) {
        ++reduces;
        EXPECT_EQ(e.at("tid"), TraceRecorder::kComm);
      }
    }
    ASSERT_EQ(forwards.size(), 2u);
    EXPECT_EQ(waits, 2);
    EXPECT_EQ(hooks, 2 * 8);  // 8 parameters, 2 steps
    EXPECT_GE(reduces, 2 * 3);
    // In each step (from its forward to the next), the first all-reduce was launched
    // before the last gradient hook ran: communication overlapped backward.
    std::sort(forwards.begin(), forwards.end());
    forwards.push_back(1e300);
    for (size_t step = 0; step + 1 < forwards.size(); ++step) {
      double last_hook = 0, first_reduce = 1e300;
      for (const auto& e : spans) {
        const std::string name = e.at("name");
        const double ts = e.at("ts");
        if (ts < forwards[step] || ts >= forwards[step + 1]) continue;
        if (starts_with(name, "hook ")) last_hook = std::max(last_hook, ts);
        if (starts_with(name, "all_reduce bucket")) first_reduce = std::min(first_reduce, ts);
      }
      EXPECT_LT(first_reduce, last_hook) << "step " << step;
    }
  }
}

}  // namespace
}  // namespace course::test
