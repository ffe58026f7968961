// link_spec.cpp: see link_spec.h.
#include "link_spec.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "env.h"
#include "error.h"

namespace course {

namespace {

constexpr const char* kForms =
    "expected <bandwidth>[,<latency>[,<burst>]], e.g. 10gbit,20us or 1gbit,50us or "
    "100mbit,1ms or 1gbit,0us,512kb: bandwidth in gbit, mbit or kbit (per second), latency "
    "in ns, us or ms, burst in b, kb or mb (as tc's: 1kb = 1024 bytes); none for no "
    "emulated link";

std::string lower_trimmed(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (!std::isspace(static_cast<unsigned char>(c))) {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return out;
}

// "10gbit" -> (10, "gbit"); false when there is no leading number.
bool split_number(const std::string& s, double& value, std::string& unit) {
  const char* begin = s.c_str();
  char* end = nullptr;
  value = std::strtod(begin, &end);
  if (end == begin || !std::isfinite(value)) return false;
  unit = std::string(end);
  return true;
}

// `label` names the string and where it came from: "emulated link '10gbt'".
[[noreturn]] void bad(const std::string& label, const std::string& why) {
  throw ConfigError(label + ": " + why + "; " + kForms);
}

double parse_bandwidth(const std::string& label, const std::string& part) {
  double value = 0;
  std::string unit;
  if (!split_number(part, value, unit)) bad(label, "'" + part + "' is not a bandwidth");
  if (unit.size() > 2 && unit.compare(unit.size() - 2, 2, "/s") == 0) unit.resize(unit.size() - 2);
  double scale = 0;
  if (unit == "gbit" || unit == "gbps") scale = 1e9;
  if (unit == "mbit" || unit == "mbps") scale = 1e6;
  if (unit == "kbit" || unit == "kbps") scale = 1e3;
  if (scale == 0) {
    bad(label, unit.empty() ? "the bandwidth '" + part + "' has no unit"
                            : "unknown bandwidth unit '" + unit + "'");
  }
  if (value <= 0) bad(label, "the bandwidth must be positive");
  return value * scale;
}

double parse_latency(const std::string& label, const std::string& part) {
  double value = 0;
  std::string unit;
  if (!split_number(part, value, unit)) bad(label, "'" + part + "' is not a latency");
  double scale = 0;
  if (unit == "ns") scale = 1e-9;
  if (unit == "us") scale = 1e-6;
  if (unit == "ms") scale = 1e-3;
  if (scale == 0) {
    bad(label, unit.empty() ? "the latency '" + part + "' has no unit"
                            : "unknown latency unit '" + unit + "'");
  }
  if (value < 0) bad(label, "the latency must not be negative");
  return value * scale;
}

size_t parse_burst(const std::string& label, const std::string& part) {
  double value = 0;
  std::string unit;
  if (!split_number(part, value, unit)) bad(label, "'" + part + "' is not a burst");
  double scale = 0;
  if (unit == "b") scale = 1;
  if (unit == "kb" || unit == "kib") scale = 1024;
  if (unit == "mb" || unit == "mib") scale = 1024.0 * 1024;
  if (scale == 0) {
    bad(label, unit.empty() ? "the burst '" + part + "' has no unit"
                            : "unknown burst unit '" + unit + "'");
  }
  if (value < 0 || value * scale > 1024.0 * 1024 * 1024) {
    bad(label, "the burst must be from 0 to 1024mb");
  }
  return static_cast<size_t>(std::llround(value * scale));
}

std::string figure(double value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

LinkSpec parse_link_from(const std::string& text, const std::string& source) {
  const std::string label = source + " '" + text + "'";
  const std::string s = lower_trimmed(text);
  if (s.empty() || s == "none" || s == "off") return {};
  std::vector<std::string> parts(1);
  for (char c : s) {
    if (c == ',') {
      parts.emplace_back();
    } else {
      parts.back() += c;
    }
  }
  if (parts.size() > 3) bad(label, "more than three parts");
  LinkSpec spec;
  spec.bits_per_second = parse_bandwidth(label, parts[0]);
  if (parts.size() > 1) spec.latency_s = parse_latency(label, parts[1]);
  if (parts.size() > 2) spec.burst_bytes = parse_burst(label, parts[2]);
  return spec;
}

}  // namespace

double LinkSpec::wire_seconds(size_t bytes) const {
  if (!emulated()) return 0;
  return latency_s + static_cast<double>(bytes) * 8.0 / bits_per_second;
}

std::string LinkSpec::describe() const {
  if (!emulated()) return "loopback (no emulated link)";
  const double b = bits_per_second;
  const std::string bw = b >= 1e9   ? figure(b / 1e9) + " Gbit/s"
                         : b >= 1e6 ? figure(b / 1e6) + " Mbit/s"
                                    : figure(b / 1e3) + " kbit/s";
  std::string text = "emulated " + bw + ", " + figure(latency_s * 1e6) + " us per message";
  if (burst_bytes > 0) {
    text += burst_bytes % 1024 == 0 ? ", " + std::to_string(burst_bytes / 1024) + " KiB burst"
                                    : ", " + std::to_string(burst_bytes) + " B burst";
  }
  return text;
}

LinkSpec parse_link(const std::string& text) {
  return parse_link_from(text, "emulated link");
}

LinkSpec link_from_env() {
  return parse_link_from(env_or(kLinkEnv, ""), kLinkEnv);
}

std::string link_header() {
  const LinkSpec link = link_from_env();
  const std::string shaped = env_or(kShapedLinkEnv, "");
  if (!link.emulated() && !shaped.empty()) {
    return "link: " + shaped + ", shaped by the kernel between network namespaces (not paced)";
  }
  return "link: " + link.describe() +
         (link.emulated() ? " on the tcp transport (gloo, nccl and shm are not paced)" : "");
}

}  // namespace course
