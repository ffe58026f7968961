// flags_across_ranks_test.cpp: every flag a driver declares is compared across ranks at
// start-up, by value (common/runtime/flags.h, flags_across_ranks.h, driver.h), and an
// unknown flag is echoed in the order given.
#include "flags_across_ranks.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "../support/driver_env.h"
#include "driver.h"
#include "flags.h"
#include "harness.h"
#include "socket.h"

namespace course {
namespace {

using Values = std::vector<std::pair<std::string, std::string>>;

/// What a lesson's flags might be: one of each kind.
struct Options {
  std::string data = "/data";
  float lr = 0.05f;
  double cap_mb = 25;
  std::string hook = "powersgd";
  std::vector<int64_t> hidden = {512, 512};
  bool anomaly = false;
  bool warm_start = true;
  std::string size = "1M";
};

void declare(Flags& flags, Options& o) {
  flags.option("--data", o.data).may_differ_across_ranks();
  flags.option("--lr", o.lr);
  flags.option("--bucket-cap-mb", o.cap_mb);
  flags.option("--hook", o.hook);
  flags.option("--hidden", o.hidden).values(1, 4);
  flags.flag("--detect-anomaly", o.anomaly, "");
  flags.flag(
      "--no-warm-start", [&o] { o.warm_start = false; }, "");
  flags
      .option_function(
          "--size", [&o](const std::string& text) { o.size = text; }, "")
      .compare_as([&o] { return o.size; });
}

Values values_after(const std::vector<std::string>& args) {
  Flags flags;
  Options o;
  declare(flags, o);
  std::string problem;
  EXPECT_EQ(flags.parse(args, problem), Parsed::kOk) << problem;
  return flags.values();
}

TEST(FlagsAcrossRanks, EveryDeclaredFlagIsListedByItsValue) {
  const Values defaults = values_after({});
  const Values expected = {
      {"--lr", "0.05"},        {"--bucket-cap-mb", "25"},   {"--hook", "powersgd"},
      {"--hidden", "512 512"}, {"--detect-anomaly", "off"}, {"--no-warm-start", "off"},
      {"--size", "1M"}};
  EXPECT_EQ(defaults, expected);  // --data may differ: not listed
  // The defaults given explicitly, in other spellings: the same values.
  EXPECT_EQ(values_after({"--lr", "0.050", "--bucket-cap-mb", "25.0", "--hook", "powersgd",
                          "--hidden", "512", "512", "--data", "/elsewhere"}),
            expected);
  const Values changed = values_after(
      {"--lr", "1e-7", "--bucket-cap-mb", "0.1", "--no-warm-start", "--detect-anomaly"});
  EXPECT_EQ(changed[0].second, "1e-07");
  EXPECT_EQ(changed[1].second, "0.1");
  EXPECT_EQ(changed[4].second, "on");
  EXPECT_EQ(changed[5].second, "on");
  EXPECT_EQ(flag_number_text(0.1f), "0.1");  // a float's digits, not the double's
}

TEST(FlagsAcrossRanks, AnUnknownFlagIsEchoedInTheOrderGiven) {
  Flags flags;
  Options o;
  declare(flags, o);
  std::string problem;
  EXPECT_EQ(flags.parse({"--stage", "1"}, problem), Parsed::kUsageError);
  EXPECT_NE(problem.find("not expected: --stage 1"), std::string::npos) << problem;
}

TEST(FlagsAcrossRanks, EveryRankNamesTheFlagItsValuesAndTheirRanks) {
  test::run_ranks(3, [](test::RankContext& ctx) {
    Values mine = values_after(ctx.rank == 1 ? std::vector<std::string>{"--hook", "fp16"}
                                             : std::vector<std::string>{"--lr", "0.05"});
    const std::string differs = flag_disagreement(ctx.store(), ctx.rank, ctx.world, mine);
    EXPECT_EQ(differs,
              "--hook differs across ranks: fp16 on rank 1 vs powersgd on ranks 0, 2. Start "
              "every rank with the same flags");
  });
}

// A driver gets the check for free: ranks started by hand with another --no-warm-start
// stop at start-up with a usage error, on every rank, before the lesson runs.
TEST(FlagsAcrossRanks, ADriverStopsRanksStartedWithDifferentFlags) {
  test::run_ranks(2, [](test::RankContext& ctx) {
    test::set_driver_env(ctx);
    DriverConfig config;
    config.name = "lesson99";
    config.title = "flags across ranks";
    Options o;
    bool ran = false;
    std::vector<std::string> args = {"lesson99", "--lr", "0.05"};
    if (ctx.rank == 1) args.emplace_back("--no-warm-start");
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    testing::internal::CaptureStdout();
    const int code = run_driver(
        static_cast<int>(argv.size()), argv.data(), config,
        [&o](Flags& flags) { declare(flags, o); },
        [&ran](DriverContext&) {
          ran = true;
          return Verdict::pass();
        });
    const std::string out = testing::internal::GetCapturedStdout();
    EXPECT_EQ(code, kUsageExitCode) << out;
    EXPECT_FALSE(ran);
    EXPECT_NE(out.find("lesson99: FAIL usage: --no-warm-start differs across ranks: off on rank "
                       "0 vs on on rank 1"),
              std::string::npos)
        << out;
  });
}

}  // namespace
}  // namespace course
