// flag_checks.h: checks for flags' values, with messages a learner can act on.
//
//   flags.option("--lr", o.lr, "learning rate").check(course::positive_number());
//   flags.option("--hidden", o.hidden, "hidden sizes").check(course::count_in(1, 65536));
//   flags.option("--device", o.device, "cpu or cuda").check(course::one_of({"cpu", "cuda"}));
//
// They reject NaN and infinities and say what is allowed in words: "--lr: must be a finite
// number greater than 0 (got nan)" (CLI11's own Range would print "[0 - 1.79769e+308]" for
// a double, with its 309 digits, and let "nan" through).
//
// A value that fails a check is a usage error: the driver prints the message, then the
// verdict "lessonNN: FAIL usage: ..." and exits with kUsageExitCode (driver.h). flags.h
// declares the flags themselves.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace course {

/// The exit code of a usage error (a flag that does not parse or is out of range): 64,
/// EX_USAGE of BSD's sysexits.h, apart from 1 (FAIL) and 2 (TODO).
constexpr int kUsageExitCode = 64;

/// What a flag's value must be, checked on the text given (each value, for a flag that
/// takes several).
struct FlagCheck {
  /// What --help shows in place of the value's type: "INT in 1 to 64".
  std::string name;
  /// "" when `text` is fine, else what is wrong with it ("must be ... (got text)").
  std::function<std::string(const std::string& text)> problem;
};

/// A finite number > 0 (a learning rate, a size in MB that must not be zero).
FlagCheck positive_number();

/// A finite number in [lo, hi].
FlagCheck number_in(double lo, double hi);

/// An integer in [lo, hi] (counts, steps, sizes, ranks).
FlagCheck count_in(int64_t lo, int64_t hi);

/// One of `choices` ("tcp", "gloo"), spelled exactly.
FlagCheck one_of(std::vector<std::string> choices);

/// What an output path names, for writable().
enum class OutputPath {
  kFile,                ///< a file in a directory that must exist (checkpoints)
  kFileInNewDirectory,  ///< a file whose missing directories the writer creates (CSVs)
  kDirectory,           ///< a directory, created with its missing parents when needed
};

/// An output path that can be written now, so that a run does not fail on it only after
/// training: "--checkpoint: cannot write /nonexistent/d/x: its directory /nonexistent/d
/// does not exist". A directory is tried by making (and removing) an empty directory in
/// it, the one test that also holds for root, read-only mounts and /proc. An empty path
/// (nothing written) passes.
FlagCheck writable(OutputPath kind);

}  // namespace course
