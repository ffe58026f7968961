// flag_checks.cpp: see flag_checks.h.
#include "flag_checks.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>

namespace course {
namespace {

/// "0.05", "1e+06", "64": short and exact enough for a bound.
std::string short_number(double x) {
  std::ostringstream s;
  s << x;
  return s.str();
}

/// Parses the whole of `text` as a finite double; false otherwise.
bool parse_finite(const std::string& text, double& out) {
  if (text.empty()) return false;
  char* end = nullptr;
  errno = 0;
  out = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size() && errno == 0 && std::isfinite(out);
}

/// "" when a directory can be made in the directory `dir` (then removed); else why not.
std::string write_problem(const std::filesystem::path& dir) {
  std::string probe = (dir / ".course-write-check-XXXXXX").string();
  if (::mkdtemp(probe.data()) == nullptr) return std::strerror(errno);
  ::rmdir(probe.c_str());
  return "";
}

/// `path` itself when it exists, else its nearest existing ancestor ("." for a relative
/// path none of whose parts exist).
std::filesystem::path nearest_existing(std::filesystem::path path) {
  std::error_code ec;
  while (!std::filesystem::exists(path, ec)) {
    const std::filesystem::path up = path.parent_path();
    if (up.empty() || up == path) return up.empty() ? "." : up;
    path = up;
  }
  return path;
}

}  // namespace

FlagCheck writable(OutputPath kind) {
  const bool directory = kind == OutputPath::kDirectory;
  return {directory ? "DIR" : "FILE", [kind, directory](const std::string& text) -> std::string {
            namespace fs = std::filesystem;
            const std::string cannot = "cannot write " + text + ": ";
            if (text.empty()) return "";  // "": nothing is written
            std::error_code ec;
            const fs::path path(text);
            if (!directory && fs::is_directory(path, ec)) return cannot + "it is a directory";
            fs::path dir = directory ? path : path.parent_path();
            if (dir.empty()) dir = ".";
            if (kind == OutputPath::kFile && !fs::exists(dir, ec)) {
              return cannot + "its directory " + dir.string() + " does not exist (create it first)";
            }
            const fs::path existing = nearest_existing(dir);
            if (!fs::is_directory(existing, ec)) {
              return cannot + existing.string() + " is not a directory";
            }
            const std::string why = write_problem(existing);
            if (!why.empty()) {
              return cannot + "nothing can be created in " + existing.string() + " (" + why + ")";
            }
            return "";
          }};
}

FlagCheck positive_number() {
  return {"NUMBER>0", [](const std::string& text) -> std::string {
            double x = 0;
            if (parse_finite(text, x) && x > 0) return "";
            return "must be a finite number greater than 0 (got " + text + ")";
          }};
}

FlagCheck number_in(double lo, double hi) {
  const std::string range = short_number(lo) + " to " + short_number(hi);
  return {"NUMBER in " + range, [lo, hi, range](const std::string& text) -> std::string {
            double x = 0;
            if (parse_finite(text, x) && x >= lo && x <= hi) return "";
            return "must be a number from " + range + " (got " + text + ")";
          }};
}

FlagCheck count_in(int64_t lo, int64_t hi) {
  const std::string range = std::to_string(lo) + " to " + std::to_string(hi);
  return {"INT in " + range, [lo, hi, range](const std::string& text) -> std::string {
            char* end = nullptr;
            errno = 0;
            const long long x = std::strtoll(text.c_str(), &end, 10);
            if (!text.empty() && end == text.c_str() + text.size() && errno == 0 && x >= lo &&
                x <= hi) {
              return "";
            }
            return "must be a whole number from " + range + " (got " + text + ")";
          }};
}

FlagCheck one_of(std::vector<std::string> choices) {
  std::string list;
  for (const std::string& c : choices) {
    if (!list.empty()) list += '|';
    list += c;
  }
  return {"{" + list + "}", [choices = std::move(choices), list](const std::string& text) {
            for (const std::string& c : choices) {
              if (c == text) return std::string();
            }
            return "must be one of " + list + " (got " + text + ")";
          }};
}

}  // namespace course
