// flags.cpp: see flags.h. The one file of the course that includes CLI11.
#include "flags.h"

#include <CLI/CLI.hpp>
#include <cstdint>
#include <utility>

namespace course {

Flag& Flag::check(const FlagCheck& check) {
  option_->check(CLI::Validator(
      [problem = check.problem](std::string& text) { return problem(text); }, check.name));
  return *this;
}

Flag& Flag::show_default() {
  option_->capture_default_str();
  return *this;
}

Flag& Flag::default_text(const std::string& text) {
  option_->default_str(text);
  return *this;
}

Flag& Flag::values(int min, int max) {
  option_->expected(min, max);
  return *this;
}

Flag& Flag::required() {
  option_->required();
  return *this;
}

Flags::Flags(const std::string& description) : app_(std::make_unique<CLI::App>(description)) {}

Flags::~Flags() = default;

template <typename T>
Flag Flags::option(const std::string& names, T& target, const std::string& help) {
  return Flag(app_->add_option(names, target, help));
}

// The types a flag may have; another one is a link error naming it.
template Flag Flags::option(const std::string&, int&, const std::string&);
template Flag Flags::option(const std::string&, int64_t&, const std::string&);
template Flag Flags::option(const std::string&, uint64_t&, const std::string&);
template Flag Flags::option(const std::string&, float&, const std::string&);
template Flag Flags::option(const std::string&, double&, const std::string&);
template Flag Flags::option(const std::string&, std::string&, const std::string&);
template Flag Flags::option(const std::string&, std::vector<int64_t>&, const std::string&);
template Flag Flags::option(const std::string&, std::vector<std::string>&, const std::string&);

Flag Flags::option_function(const std::string& names,
                            const std::function<void(const std::string& text)>& on_value,
                            const std::string& help) {
  return Flag(app_->add_option_function<std::string>(names, on_value, help));
}

void Flags::flag(const std::string& names, bool& target, const std::string& help) {
  app_->add_flag(names, target, help);
}

void Flags::flag(const std::string& names, std::function<void()> on_set, const std::string& help) {
  app_->add_flag_function(
      names, [on_set = std::move(on_set)](int64_t) { on_set(); }, help);
}

void Flags::footer(const std::string& text) {
  app_->footer(text);
}

namespace {

/// Runs CLI11's `parse` and sorts its outcome.
template <typename Parse>
Parsed sorted(CLI::App& app, const Parse& parse, std::string& problem) {
  try {
    parse();
    return Parsed::kOk;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) {  // --help (and --help-all): CLI11 prints it
      app.exit(e);
      return Parsed::kHelp;
    }
    problem = e.what();
    return Parsed::kUsageError;
  }
}

}  // namespace

Parsed Flags::parse(int argc, char** argv, std::string& problem) {
  return sorted(
      *app_, [&] { app_->parse(argc, argv); }, problem);
}

Parsed Flags::parse(const std::vector<std::string>& args, std::string& problem) {
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes from the back
  return sorted(
      *app_, [&] { app_->parse(reversed); }, problem);
}

}  // namespace course
