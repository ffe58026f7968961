// flags.cpp: see flags.h. The one file of the course that includes CLI11.
#include "flags.h"

#include <CLI/CLI.hpp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace course {

Flag::Flag(detail::FlagRecord* record) : option_(record->option), record_(record) {}

Flag& Flag::may_differ_across_ranks() {
  record_->agreed = false;
  return *this;
}

Flag& Flag::compare_as(std::function<std::string()> text) {
  record_->text = std::move(text);
  return *this;
}

std::string flag_number_text(double x) {
  char text[32];
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, x);
    if (std::strtod(text, nullptr) == x) break;
  }
  return text;
}

std::string flag_number_text(float x) {
  char text[32];
  for (int digits = 1; digits <= 9; ++digits) {
    std::snprintf(text, sizeof text, "%.*g", digits, static_cast<double>(x));
    if (std::strtof(text, nullptr) == x) break;
  }
  return text;
}

namespace {

// The text values() gives a target's value: numbers read back exactly, lists space-separated.
std::string value_text(int64_t x) {
  return std::to_string(x);
}
std::string value_text(uint64_t x) {
  return std::to_string(x);
}
std::string value_text(int x) {
  return std::to_string(x);
}
std::string value_text(float x) {
  return flag_number_text(x);
}
std::string value_text(double x) {
  return flag_number_text(x);
}
std::string value_text(const std::string& x) {
  return x;
}
template <typename T>
std::string value_text(const std::vector<T>& xs) {
  std::string out;
  for (const T& x : xs) out += (out.empty() ? "" : " ") + value_text(x);
  return out;
}

}  // namespace

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

Flag Flags::add(CLI::Option* option, std::function<std::string()> text) {
  records_.push_back(std::make_unique<detail::FlagRecord>());
  records_.back()->option = option;
  records_.back()->text = std::move(text);
  return Flag(records_.back().get());
}

template <typename T>
Flag Flags::option(const std::string& names, T& target, const std::string& help) {
  return add(app_->add_option(names, target, help), [&target] { return value_text(target); });
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
  CLI::Option* option = app_->add_option_function<std::string>(names, on_value, help);
  // The text as given, for want of a target (compare_as reads a converted one).
  return add(option, [option] { return value_text(option->results()); });
}

Flag Flags::flag(const std::string& names, bool& target, const std::string& help) {
  return add(app_->add_flag(names, target, help),
             [&target] { return std::string(target ? "on" : "off"); });
}

Flag Flags::flag(const std::string& names, std::function<void()> on_set, const std::string& help) {
  CLI::Option* option = app_->add_flag_function(
      names, [on_set = std::move(on_set)](int64_t) { on_set(); }, help);
  return add(option, [option] { return std::string(option->count() > 0 ? "on" : "off"); });
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
  } catch (const CLI::ExtrasError&) {
    // CLI11's own message lists them back to front ("not expected: 1 --stage").
    const std::vector<std::string> extras = app.remaining(false);
    problem = std::string(extras.size() > 1 ? "The following arguments were not expected: "
                                            : "The following argument was not expected: ") +
              value_text(extras);
    return Parsed::kUsageError;
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

std::vector<std::pair<std::string, std::string>> Flags::values() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& record : records_) {
    if (record->agreed) out.emplace_back(record->option->get_name(), record->text());
  }
  return out;
}

Parsed Flags::parse(const std::vector<std::string>& args, std::string& problem) {
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes from the back
  return sorted(
      *app_, [&] { app_->parse(reversed); }, problem);
}

}  // namespace course
