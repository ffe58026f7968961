// flag_checks.h: range checks for numeric flags, with messages a learner can act on.
//
//   app.add_option("--lr", o.lr, "learning rate")->check(course::positive_number());
//   app.add_option("--hidden", o.hidden, "hidden sizes")->check(course::count_in(1, 65536));
//
// CLI11's own Range prints its bounds in full ("[0 - 1.79769e+308]" becomes 309 digits for
// a double) and lets "nan" through; these reject NaN and infinities and say what is
// allowed in words: "--lr: must be a finite number greater than 0 (got nan)".
//
// A value that fails a check is a usage error: the driver prints CLI11's message, then the
// verdict "lessonNN: FAIL usage: ..." and exits with kUsageExitCode (driver.h).
//
// CLI::Validator is only declared here: a file that checks flags includes <CLI/CLI.hpp>
// itself (it declares them with CLI11), and one that needs only kUsageExitCode does not
// compile CLI11's 15,000 lines for it.
#pragma once

#include <cstdint>

namespace CLI {
class Validator;
}  // namespace CLI

namespace course {

/// The exit code of a usage error (a flag that does not parse or is out of range): 64,
/// EX_USAGE of BSD's sysexits.h, apart from 1 (FAIL) and 2 (TODO).
constexpr int kUsageExitCode = 64;

/// A finite number > 0 (a learning rate, a size in MB that must not be zero).
CLI::Validator positive_number();

/// A finite number in [lo, hi].
CLI::Validator number_in(double lo, double hi);

/// An integer in [lo, hi] (counts, steps, sizes, ranks).
CLI::Validator count_in(int64_t lo, int64_t hi);

}  // namespace course
