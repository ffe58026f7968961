// driver.h: what every ./lessonNN does, written once (docs/maintainers.md).
//
//   int main(int argc, char** argv) {
//     course::DriverConfig config{.name = "lesson01", .title = "ranks and the full mesh"};
//     return course::run_driver(argc, argv, config, nullptr, [](course::DriverContext& ctx) {
//       ...                                   // this rank's work
//       return course::Verdict::pass("mesh of " + std::to_string(ctx.world()) + " ranks");
//     });
//   }
//
// Distributed lessons: with no RANK (nor Slurm/Open MPI rank) in the environment the
// driver launches itself as --np ranks (launcher.h) and prints the final verdict; with
// RANK set it is one rank: rank 0 hosts the store, every rank connects to it, the ranks
// compare all their declared flags (flags_across_ranks.h: a difference is a usage error
// naming the flag, its values and their ranks), then rank_main runs. One-process lessons
// (distributed = false) just run rank_main.
//
// The verdict is the last line: "lessonNN: PASS ..." (exit 0), "lessonNN: FAIL ..." (exit
// 1), "lessonNN: FAIL usage: ..." (exit 64, kUsageExitCode in flag_checks.h) when a flag
// does not parse or is out of range, or "lessonNN: TODO lessons/NN_topic/file.cpp:LINE"
// (exit 2) when a stub threw
// NotImplementedError. Any other exception is a FAIL naming the rank and the error, except
// a broken connection caused by another rank's TODO: that rank prints "lessonNN: stopped:
// rank R reached a TODO (FILE:LINE)" (exit 2), so a first run shows nothing alarming.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "env.h"
#include "flags.h"
#include "store.h"

namespace course {

/// A rank's result: the driver prints it as "lessonNN: PASS ..." or "lessonNN: FAIL ...".
struct Verdict {
  /// PASS (exit 0) or FAIL (exit 1)
  bool passed = true;
  /// what was checked, or what differed
  std::string detail;
  /// A PASS saying what was checked.
  static Verdict pass(std::string detail = "") { return {true, std::move(detail)}; }
  /// A FAIL saying what differed.
  static Verdict fail(std::string detail) { return {false, std::move(detail)}; }
};

/// The flags every driver shares, after parsing.
struct DriverArgs {
  /// --np: the number of ranks to launch
  int np = 1;
  /// --backend: "tcp", "gloo" or "nccl" (empty when the lesson has no such flag)
  std::string backend;
  /// --bench: run the lesson's benchmark instead of its self-check
  bool bench = false;
  /// --csv: the bench's CSV file, as given ("<N>" not yet replaced: DriverContext::bench_csv)
  std::string csv;
  /// --trace: the prefix of the timelines a bench draws (empty when the lesson has no such
  /// flag from the driver)
  std::string trace;
  /// --link: the emulated link the tcp transport paces its sends on ("10gbit,20us"),
  /// passed to every rank as COURSE_LINK; empty: COURSE_LINK as the environment has it
  std::string link;
};

/// What a lesson's driver is: its name, its flags, one process or many.
struct DriverConfig {
  std::string name;                   ///< "lesson05": the verdict's prefix
  std::string title;                  ///< one line for --help
  bool distributed = true;            ///< false: one process, no launcher, no store
  int default_np = 4;                 ///< --np default
  std::vector<std::string> backends;  ///< allowed --backend values, default first; empty: no flag
  bool has_bench = false;             ///< adds --bench and --csv
  /// With has_bench: --csv's default ("bench-results/<name>.csv" when empty); "<N>" in it
  /// stands for the world size. A bench of several tables writes each beside it, named
  /// after its stem (STEM_<table>.csv, output_beside in output_file.h), so every bench
  /// takes the one --csv.
  std::string bench_csv;
  /// With has_bench, when not empty: adds --trace, the prefix of the timelines the bench
  /// draws (PREFIX_gpipe.svg, PREFIX_gpipe.json, ...), with this default.
  std::string bench_trace;
  bool has_link = false;  ///< adds --link (an emulated network, emulated_link.h)
  /// Checks between flags, after they parsed (--tp or --pp must divide --np): "" when they
  /// agree, else the problem, a usage error (exit 64) like a flag out of range, reported
  /// before any rank starts. Empty: no such checks.
  std::function<std::string(const DriverArgs&)> check_flags;
};

/// What rank_main gets.
class DriverContext {
 public:
  /// This rank's RANK, WORLD_SIZE, LOCAL_RANK, ... (env.h).
  const DistEnv& env() const { return env_; }
  /// The parsed flags.
  const DriverArgs& args() const { return args_; }
  /// --csv with "<N>" replaced by the world size: where the bench writes its table.
  std::string bench_csv() const;
  /// This rank.
  int rank() const { return env_.rank; }
  /// The number of ranks.
  int world() const { return env_.world_size; }
  /// This rank's connection to the store (distributed lessons only).
  StoreClient& store();
  /// The address other ranks dial to reach this one: COURSE_ADVERTISE_ADDR if set,
  /// 127.0.0.1 when MASTER_ADDR is a loopback address, else this host's name.
  std::string advertise_host() const;

  // Set up by run_driver.
  /// Set by run_driver: what env() returns.
  DistEnv env_;
  /// Set by run_driver: what args() returns.
  DriverArgs args_;
  /// Set by run_driver on rank 0: the store it hosts.
  std::unique_ptr<StoreServer> server_;
  /// Set by run_driver: what store() returns.
  std::unique_ptr<StoreClient> store_;
};

/// Parses the flags (add_options may declare the lesson's own, flags.h), then launches or
/// runs one rank as described above. Returns the process exit code.
int run_driver(int argc, char** argv, const DriverConfig& config,
               const std::function<void(Flags&)>& add_options,
               const std::function<Verdict(DriverContext&)>& rank_main);

// The first steps of a rank_main, written once; lesson 01's driver_prologue.h puts them
// together with the device and the group (start_driver).

/// Rank 0 prints "backend B, N rank(s)", then ", " and `detail` when it is not empty: the
/// first line of every distributed training driver.
void print_driver_header(const DriverContext& ctx, const std::string& detail);

/// A self-check's result as the driver reports it: when `problem` is not empty, the FAIL
/// "self-check: PROBLEM" (the problem names the function at fault) for rank_main to
/// return; when it is empty, rank 0 prints `passed_line` and there is nothing to return.
std::optional<Verdict> self_check_failure(const DriverContext& ctx, const std::string& problem,
                                          const std::string& passed_line);

}  // namespace course
