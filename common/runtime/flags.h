// flags.h: a program's command-line flags, declared without CLI11's header.
//
//   course::Flags flags("lesson05: ring all-reduce");
//   flags.option("--lr", o.lr, "learning rate").check(course::positive_number());
//   flags.option("--epochs", o.epochs, "passes").check(course::count_in(1, 1000)).show_default();
//   flags.flag("--bench", bench, "run the benchmark");
//   flags.flag("--no-shuffle", [&o] { o.shuffle = false; }, "keep the file order");
//   std::string problem;
//   if (flags.parse(argc, argv, problem) == course::Parsed::kUsageError) ...
//
// CLI11 parses them. Its header is some 15,000 lines of inline code and templates: every
// file that included it spent seconds compiling it and clang-tidy half a minute walking it
// (docs/maintainers.md). Only flags.cpp includes it now; a driver's main.cpp and the
// lessons' *_flags.h declare their flags through this class, and the checks of
// flag_checks.h say what a value must be.
//
// Flag names are CLI11's: "--np", "-n,--np,--nproc-per-node" (aliases), "command" (a
// positional argument). Options of any of the types flags.cpp lists (integers, float,
// double, std::string, and vectors of int64_t and std::string); another type fails to link.
//
// Every declared flag is one the ranks of a job must agree on: after parsing, values()
// lists each flag's name and the text of its value, taken from its target (so a flag left
// at its default and one given the same value explicitly read alike: "--lr" -> "0.05"),
// and the driver compares them across ranks at start-up (flags_across_ranks.h). A flag that
// may rightly differ between ranks says so with may_differ_across_ranks() (--np, ignored
// by a rank; --data, a directory each machine keeps at its own place).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "flag_checks.h"

namespace CLI {
class App;
class Option;
}  // namespace CLI

namespace course {

namespace detail {
/// What Flags keeps of one declared flag: how to read its value as text, and whether the
/// ranks must agree on it.
struct FlagRecord {
  CLI::Option* option = nullptr;
  std::function<std::string()> text;
  bool agreed = true;
};
}  // namespace detail

/// One declared option, to refine: `flags.option(...).check(...).show_default()`.
class Flag {
 public:
  /// Its values must pass `check` (each one, for an option with several).
  Flag& check(const FlagCheck& check);
  /// --help shows the value the target holds when the flag is declared.
  Flag& show_default();
  /// --help shows `text` as the default.
  Flag& default_text(const std::string& text);
  /// It takes from `min` to `max` values (`--hidden 512 512`).
  Flag& values(int min, int max);
  /// Parsing fails without it.
  Flag& required();
  /// The ranks of a job need not agree on it: values() leaves it out.
  Flag& may_differ_across_ranks();
  /// values() reads its value through `text` instead of from its target (a default that
  /// is resolved later, as --lr's -1 meaning "the optimizer's own").
  Flag& compare_as(std::function<std::string()> text);

 private:
  friend class Flags;
  explicit Flag(detail::FlagRecord* record);
  CLI::Option* option_;
  detail::FlagRecord* record_;
};

/// `x` as values() writes a number: the shortest text that reads back as the same value
/// ("0.05", "1e-07", "64"; a float's own digits: 0.1f is "0.1").
std::string flag_number_text(double x);
std::string flag_number_text(float x);

/// What Flags::parse found.
enum class Parsed {
  kOk,          ///< every flag parsed and passed its checks
  kHelp,        ///< --help was given; the help is printed on stdout
  kUsageError,  ///< a flag did not parse or failed a check; `problem` says which and why
};

/// A program's flags: declare them, then parse the command line once.
class Flags {
 public:
  /// `description` opens --help.
  explicit Flags(const std::string& description = "");
  ~Flags();
  Flags(const Flags&) = delete;
  Flags& operator=(const Flags&) = delete;

  /// An option with a value, written into `target` when it is given.
  template <typename T>
  Flag option(const std::string& names, T& target, const std::string& help = "");
  /// An option whose text `on_value` converts itself (sizes with K, M, G suffixes).
  Flag option_function(const std::string& names,
                       const std::function<void(const std::string& text)>& on_value,
                       const std::string& help);
  /// A flag without a value: sets `target` to true when given.
  Flag flag(const std::string& names, bool& target, const std::string& help);
  /// A flag without a value: calls `on_set` when given (values() reads "on" or "off").
  Flag flag(const std::string& names, std::function<void()> on_set, const std::string& help);
  /// A line printed after the flags by --help.
  void footer(const std::string& text);

  /// Parses main's arguments (argv[0] is the program).
  Parsed parse(int argc, char** argv, std::string& problem);
  /// Parses `args`, the arguments after the program's name, in order.
  Parsed parse(const std::vector<std::string>& args, std::string& problem);

  /// After parse: every declared flag the ranks must agree on, in declaration order, with
  /// the text of its value: {{"--np", "2"}, {"--lr", "0.05"}, {"--no-shuffle", "off"}}.
  std::vector<std::pair<std::string, std::string>> values() const;

 private:
  Flag add(CLI::Option* option, std::function<std::string()> text);
  std::unique_ptr<CLI::App> app_;
  std::vector<std::unique_ptr<detail::FlagRecord>> records_;
};

}  // namespace course
