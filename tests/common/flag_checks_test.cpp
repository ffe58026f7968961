// flag_checks_test.cpp: numeric flags are range-checked with readable messages, and a usage
// error ends a driver with the verdict line and exit code 64 (common/runtime/flag_checks.h,
// driver.h).
#include "flag_checks.h"

#include <gtest/gtest.h>

#include <CLI/CLI.hpp>

#include "driver.h"

namespace course {
namespace {

/// Parses `args` (in order) into an app with --lr, --size and --count; returns CLI11's
/// message, or "" when they parse.
std::string parse(std::vector<std::string> args) {
  CLI::App app;
  float lr = -1;
  double size = 25;
  int count = 1;
  app.add_option("--lr", lr)->check(positive_number());
  app.add_option("--size", size)->check(number_in(0, 4096));
  app.add_option("--count", count)->check(count_in(1, 64));
  std::reverse(args.begin(), args.end());  // CLI11 takes them from the back
  try {
    app.parse(args);
    return "";
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
}

TEST(FlagChecks, NonFiniteAndOutOfRangeValuesAreRefusedInWords) {
  for (const char* lr : {"nan", "-1", "inf", "0", "-inf", "1e999", "0.1x", ""}) {
    const std::string what = parse({"--lr", lr});
    EXPECT_NE(what.find("--lr: must be a finite number greater than 0 (got " + std::string(lr)),
              std::string::npos)
        << "--lr " << lr << ": " << what;
  }
  const std::string size = parse({"--size", "-1"});
  EXPECT_NE(size.find("must be a number from 0 to 4096 (got -1)"), std::string::npos) << size;
  EXPECT_LT(size.size(), 120u) << "not a 309-digit range: " << size;
  EXPECT_NE(parse({"--size", "nan"}).find("must be"), std::string::npos);
  EXPECT_NE(parse({"--count", "0"}).find("must be a whole number from 1 to 64 (got 0)"),
            std::string::npos);
  EXPECT_NE(parse({"--count", "2.5"}).find("must be a whole number"), std::string::npos);
  EXPECT_EQ(parse({"--lr", "0.05", "--size", "0", "--count", "64"}), "");
}

TEST(FlagChecks, AUsageErrorPrintsTheVerdictAndExits64) {
  DriverConfig config;
  config.name = "lesson99";
  config.title = "flag checks";
  config.distributed = false;
  float lr = -1;
  bool ran = false;
  const auto add = [&](CLI::App& app) { app.add_option("--lr", lr)->check(positive_number()); };
  const auto main = [&](DriverContext&) {
    ran = true;
    return Verdict::pass();
  };
  for (std::vector<std::string> args :
       {std::vector<std::string>{"lesson99", "--lr", "nan"}, {"lesson99", "--no-such-flag"}}) {
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    testing::internal::CaptureStdout();
    testing::internal::CaptureStderr();
    const int code = run_driver(static_cast<int>(argv.size()), argv.data(), config, add, main);
    const std::string out = testing::internal::GetCapturedStdout();
    testing::internal::GetCapturedStderr();
    EXPECT_EQ(code, kUsageExitCode) << args[1];
    EXPECT_EQ(out.rfind("lesson99: FAIL usage: ", 0), 0u) << out;
    EXPECT_FALSE(ran);
  }
  std::vector<std::string> args = {"lesson99", "--lr", "0.5"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  testing::internal::CaptureStdout();
  EXPECT_EQ(run_driver(3, argv.data(), config, add, main), 0);
  testing::internal::GetCapturedStdout();
  EXPECT_TRUE(ran);
  EXPECT_FLOAT_EQ(lr, 0.5f);
}

}  // namespace
}  // namespace course
