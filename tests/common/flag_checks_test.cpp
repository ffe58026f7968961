// flag_checks_test.cpp: numeric flags are range-checked with readable messages, and a usage
// error ends a driver with the verdict line and exit code 64 (common/runtime/flag_checks.h,
// driver.h).
#include "flag_checks.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "driver.h"
#include "flags.h"

namespace course {
namespace {

/// Parses `args` (in order) with --lr, --size, --count and --backend declared; returns CLI11's
/// message, or "" when they parse.
std::string parse(const std::vector<std::string>& args) {
  Flags flags;
  float lr = -1;
  double size = 25;
  int count = 1;
  std::string backend = "tcp";
  flags.option("--lr", lr).check(positive_number());
  flags.option("--size", size).check(number_in(0, 4096));
  flags.option("--count", count).check(count_in(1, 64));
  flags.option("--backend", backend).check(one_of({"tcp", "gloo"}));
  std::string problem;
  const Parsed parsed = flags.parse(args, problem);
  EXPECT_EQ(parsed == Parsed::kOk, problem.empty()) << problem;
  return problem;
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
  EXPECT_NE(parse({"--backend", "nccl"}).find("--backend: must be one of tcp|gloo (got nccl)"),
            std::string::npos);
  EXPECT_EQ(parse({"--lr", "0.05", "--size", "0", "--count", "64", "--backend", "gloo"}), "");
}

TEST(Flags, EveryDeclaredKindOfFlagParses) {
  Flags flags("flags under test");
  int i = 0;
  int64_t big = 0;
  uint64_t bytes = 0;
  float f = 0;
  double d = 0;
  std::string text;
  std::vector<int64_t> sizes;
  std::vector<std::string> command;
  bool on = false;
  int called = 0;
  std::string converted;
  flags.option("-i,--int", i).check(count_in(-5, 5));
  flags.option("--big", big);
  flags.option("--bytes", bytes);
  flags.option("--float", f);
  flags.option("--double", d).show_default();
  flags.option("--text", text).default_text("none");
  flags.option("--sizes", sizes).values(1, 3);
  flags.flag("--on", on, "a switch");
  flags.flag(
      "--call", [&] { ++called; }, "a callback");
  flags.option_function(
      "--size", [&](const std::string& t) { converted = t + "!"; }, "text");
  flags.option("command", command, "after --").required();
  std::string problem;
  ASSERT_EQ(flags.parse({"-i",      "-3",   "--big",    "-9000000000", "--bytes", "18000000000",
                         "--float", "0.25", "--double", "1e-300",      "--text",  "x y",
                         "--sizes", "7",    "8",        "9",           "--on",    "--call",
                         "--size",  "4M",   "--",       "prog",        "--np"},
                        problem),
            Parsed::kOk)
      << problem;
  EXPECT_EQ(i, -3);
  EXPECT_EQ(big, -9000000000);
  EXPECT_EQ(bytes, 18000000000u);
  EXPECT_FLOAT_EQ(f, 0.25f);
  EXPECT_DOUBLE_EQ(d, 1e-300);
  EXPECT_EQ(text, "x y");
  EXPECT_EQ(sizes, (std::vector<int64_t>{7, 8, 9}));
  EXPECT_EQ(command, (std::vector<std::string>{"prog", "--np"}));
  EXPECT_TRUE(on);
  EXPECT_EQ(called, 1);
  EXPECT_EQ(converted, "4M!");

  Flags strict;
  strict.option("command", command).required();
  strict.option("--sizes", sizes).values(1, 2).check(count_in(1, 9));
  EXPECT_EQ(strict.parse({"--sizes", "1"}, problem), Parsed::kUsageError);
  EXPECT_NE(problem.find("command"), std::string::npos) << problem;
  EXPECT_EQ(strict.parse({"--sizes", "1", "10", "--", "p"}, problem), Parsed::kUsageError);
  EXPECT_NE(problem.find("--sizes: must be a whole number from 1 to 9 (got 10)"), std::string::npos)
      << problem;
  EXPECT_EQ(strict.parse({"--no-such-flag", "--", "p"}, problem), Parsed::kUsageError);
  EXPECT_NE(problem.find("--no-such-flag"), std::string::npos) << problem;
  testing::internal::CaptureStdout();
  EXPECT_EQ(strict.parse({"--help"}, problem), Parsed::kHelp);
  const std::string help = testing::internal::GetCapturedStdout();
  EXPECT_NE(help.find("--sizes"), std::string::npos) << help;
  EXPECT_NE(help.find("INT in 1 to 9"), std::string::npos) << help;
}

// An output path is tried when the flags are parsed, not when the run ends, and the
// problem names the flag.
TEST(FlagChecks, OutputPathsAreTriedBeforeAnythingRuns) {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("course-flag-paths-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto problem = [](OutputPath kind, const std::string& path) {
    Flags flags;
    std::string target, problem;
    flags.option("--out", target).check(writable(kind));
    flags.parse({"--out", path}, problem);
    return problem;
  };
  const std::string missing = problem(OutputPath::kFile, "/nonexistent/d/x");
  EXPECT_NE(missing.find("--out: cannot write /nonexistent/d/x: its directory /nonexistent/d "
                         "does not exist"),
            std::string::npos)
      << missing;
  const std::string proc = problem(OutputPath::kDirectory, "/proc/nope");
  EXPECT_NE(proc.find("--out: cannot write /proc/nope: nothing can be created in /proc"),
            std::string::npos)
      << proc;
  EXPECT_NE(problem(OutputPath::kFile, dir.string()).find("it is a directory"), std::string::npos);
  std::ofstream((dir / "plain").string()) << "x";
  EXPECT_NE(
      problem(OutputPath::kDirectory, (dir / "plain" / "sub").string()).find("is not a directory"),
      std::string::npos);
  EXPECT_EQ(problem(OutputPath::kFile, (dir / "x.safetensors").string()), "");
  EXPECT_EQ(problem(OutputPath::kFileInNewDirectory, (dir / "new" / "x.csv").string()), "");
  EXPECT_EQ(problem(OutputPath::kDirectory, (dir / "runs" / "a").string()), "");
  EXPECT_EQ(problem(OutputPath::kFile, ""), "");  // nothing written
  // Trying leaves nothing behind.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
  fs::remove_all(dir);
}

TEST(FlagChecks, AUsageErrorPrintsTheVerdictAndExits64) {
  DriverConfig config;
  config.name = "lesson99";
  config.title = "flag checks";
  config.distributed = false;
  float lr = -1;
  bool ran = false;
  const auto add = [&](Flags& flags) { flags.option("--lr", lr).check(positive_number()); };
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

// Runs a one-process driver with `args` and returns what rank_main saw of the bench's
// outputs ("" when it never ran), with the exit code in `code`.
std::pair<std::string, std::string> bench_outputs(const DriverConfig& config,
                                                  std::vector<std::string> args, int& code) {
  std::pair<std::string, std::string> seen;
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  code = run_driver(static_cast<int>(argv.size()), argv.data(), config, nullptr,
                    [&](DriverContext& ctx) {
                      seen = {ctx.bench_csv(), ctx.args().trace};
                      return Verdict::pass();
                    });
  testing::internal::GetCapturedStdout();
  testing::internal::GetCapturedStderr();
  return seen;
}

TEST(FlagChecks, EveryBenchTakesTheDriversCsvAndTrace) {
  DriverConfig config;
  config.name = "lesson99";
  config.title = "bench outputs";
  config.distributed = false;
  config.has_bench = true;
  int code = -1;
  // No default given: bench-results/<name>.csv; no --trace flag at all.
  EXPECT_EQ(bench_outputs(config, {"lesson99", "--bench"}, code).first,
            "bench-results/lesson99.csv");
  EXPECT_EQ(code, 0);
  bench_outputs(config, {"lesson99", "--bench", "--trace", "t"}, code);
  EXPECT_EQ(code, kUsageExitCode);
  // A default with <N>, replaced by the world size; --csv and --trace as given.
  config.bench_csv = "out/lesson99_np<N>.csv";
  config.bench_trace = "out/lesson99_timeline";
  EXPECT_EQ(
      bench_outputs(config, {"lesson99", "--bench"}, code),
      std::make_pair(std::string("out/lesson99_np1.csv"), std::string("out/lesson99_timeline")));
  EXPECT_EQ(bench_outputs(config, {"lesson99", "--csv", "a/<N>-<N>.csv", "--trace", "a/t"}, code),
            std::make_pair(std::string("a/1-1.csv"), std::string("a/t")));
  EXPECT_EQ(code, 0);
  // An output that cannot be written is a usage error before anything runs.
  EXPECT_EQ(bench_outputs(config, {"lesson99", "--bench", "--csv", "/proc/no/x.csv"}, code).first,
            "");
  EXPECT_EQ(code, kUsageExitCode);
  // <N> is the world of the rank that asks: 4 ranks write lesson99_np4.csv.
  DriverContext ctx;
  ctx.env_.world_size = 4;
  ctx.args_.csv = config.bench_csv;
  EXPECT_EQ(ctx.bench_csv(), "out/lesson99_np4.csv");
}

}  // namespace
}  // namespace course
