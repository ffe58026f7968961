// trace_recorder.cpp: lesson 10, the timeline (see the header). Given code.
#include "trace_recorder.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>

#include "bench_table.h"
#include "error.h"
#include "output_file.h"
#include "svg_canvas.h"

namespace course {

double TraceRecorder::now_us() {
  using namespace std::chrono;
  return static_cast<double>(
             duration_cast<nanoseconds>(steady_clock::now().time_since_epoch()).count()) /
         1e3;
}

void TraceRecorder::span(int lane, std::string name, double start_us, double end_us,
                         std::string detail) {
  std::lock_guard<std::mutex> lock(mutex_);
  spans_.push_back({lane, std::move(name), start_us, end_us, std::move(detail)});
}

std::vector<TraceSpan> TraceRecorder::spans() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return spans_;
}

void TraceRecorder::clear() {
  std::lock_guard<std::mutex> lock(mutex_);
  spans_.clear();
}

std::string TraceRecorder::serialize() const {
  std::ostringstream out;
  out.precision(17);
  for (const TraceSpan& s : spans()) {
    out << s.lane << '\t' << s.start_us << '\t' << s.end_us << '\t' << s.name << '\t' << s.detail
        << '\n';
  }
  return out.str();
}

std::vector<std::vector<TraceSpan>> gather_spans(const TraceRecorder& trace, ProcessGroup& group) {
  const std::string text = trace.serialize();
  constexpr size_t kLargest = size_t{1} << 24;  // a float holds every integer up to 2^24
  if (text.size() > kLargest) {
    throw ProtocolError("gather_spans: rank " + std::to_string(group.rank()) + "'s trace is " +
                        std::to_string(text.size()) +
                        " bytes, more than 16 MiB: record fewer steps");
  }
  const int n = group.size();
  const std::vector<float> mine = {static_cast<float>(text.size())};
  std::vector<float> lengths(static_cast<size_t>(n));
  group.all_gather(mine, lengths);
  const size_t longest = static_cast<size_t>(*std::max_element(lengths.begin(), lengths.end()));
  std::vector<float> padded(longest, 0.0f);
  std::transform(text.begin(), text.end(), padded.begin(),
                 [](char c) { return static_cast<float>(static_cast<unsigned char>(c)); });
  std::vector<float> all(group.rank() == 0 ? longest * static_cast<size_t>(n) : 0);
  group.gather(padded, all, 0);
  std::vector<std::vector<TraceSpan>> spans;
  if (group.rank() != 0) return spans;
  for (int r = 0; r < n; ++r) {
    const auto first = all.begin() + static_cast<std::ptrdiff_t>(longest * static_cast<size_t>(r));
    std::string bytes(static_cast<size_t>(lengths[static_cast<size_t>(r)]), '\0');
    std::transform(first, first + static_cast<std::ptrdiff_t>(bytes.size()), bytes.begin(),
                   [](float b) { return static_cast<char>(static_cast<unsigned char>(b)); });
    spans.push_back(parse_spans(bytes));
  }
  return spans;
}

std::vector<TraceSpan> parse_spans(const std::string& text) {
  std::vector<TraceSpan> spans;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    std::vector<std::string> fields;
    size_t begin = 0;
    for (size_t tab; (tab = line.find('\t', begin)) != std::string::npos; begin = tab + 1) {
      fields.push_back(line.substr(begin, tab - begin));
    }
    fields.push_back(line.substr(begin));
    TraceSpan s;
    try {
      if (fields.size() != 5) throw std::invalid_argument("fields");
      s.lane = std::stoi(fields[0]);
      s.start_us = std::stod(fields[1]);
      s.end_us = std::stod(fields[2]);
    } catch (const std::exception&) {
      throw ProtocolError("trace: line " + std::to_string(number) +
                          " is not 'lane<TAB>start<TAB>end<TAB>name<TAB>detail': \"" + line + "\"");
    }
    s.name = fields[3];
    s.detail = fields[4];
    spans.push_back(std::move(s));
  }
  return spans;
}

namespace {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

double earliest(const std::vector<std::vector<TraceSpan>>& ranks) {
  double t0 = std::numeric_limits<double>::infinity();
  for (const auto& spans : ranks) {
    for (const TraceSpan& s : spans) t0 = std::min(t0, s.start_us);
  }
  return std::isfinite(t0) ? t0 : 0;
}

// What a span is, for its colour and its category in the viewer.
std::string category(const TraceSpan& s) {
  for (const char* prefix : {"forward", "backward", "hook", "all_reduce", "wait", "optimizer"}) {
    if (s.name.rfind(prefix, 0) == 0) return prefix;
  }
  return "other";
}

}  // namespace

void write_chrome_trace(const std::string& path, const std::vector<std::vector<TraceSpan>>& ranks) {
  const double t0 = earliest(ranks);
  std::ostringstream out;
  out.precision(3);
  out << std::fixed << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  bool first = true;
  const auto event = [&](const std::string& text) {
    out << (first ? "  " : ",\n  ") << text;
    first = false;
  };
  for (size_t r = 0; r < ranks.size(); ++r) {
    const std::string pid = std::to_string(r);
    event("{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": " + pid +
          ", \"args\": {\"name\": \"rank " + pid + "\"}}");
    event("{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": " + pid +
          ", \"tid\": 0, \"args\": {\"name\": \"compute\"}}");
    event("{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": " + pid +
          ", \"tid\": 1, \"args\": {\"name\": \"communication\"}}");
    for (const TraceSpan& s : ranks[r]) {
      std::ostringstream e;
      e.precision(3);
      e << std::fixed << "{\"ph\": \"X\", \"name\": " << json_string(s.name)
        << ", \"cat\": " << json_string(category(s)) << ", \"pid\": " << r
        << ", \"tid\": " << s.lane << ", \"ts\": " << (s.start_us - t0)
        << ", \"dur\": " << std::max(0.0, s.end_us - s.start_us)
        << ", \"args\": {\"detail\": " << json_string(s.detail) << "}}";
      event(e.str());
    }
  }
  out << "\n]}\n";
  write_output_file(path, out.str());
}

void write_timeline_svg(const std::string& path, const std::vector<std::vector<TraceSpan>>& ranks,
                        const std::string& title) {
  const double t0 = earliest(ranks);
  double t1 = t0;
  for (const auto& spans : ranks) {
    for (const TraceSpan& s : spans) t1 = std::max(t1, s.end_us);
  }
  const double width = 1100, left = 150, right = 20, lane_h = 22, gap = 12, top = 40;
  const double scale = (width - left - right) / std::max(t1 - t0, 1.0);
  const double height = top + ranks.size() * (2 * lane_h + gap) + 50;
  SvgCanvas svg(width, height, 11);
  svg.text(left, 20, title, {.size = 14});
  const auto colour = [](const std::string& cat) {
    if (cat == "forward") return "#4e79a7";
    if (cat == "backward") return "#59a14f";
    if (cat == "hook") return "#edc948";
    if (cat == "all_reduce") return "#e15759";
    if (cat == "wait") return "#bab0ac";
    if (cat == "optimizer") return "#b07aa1";
    return "#cccccc";
  };
  for (size_t r = 0; r < ranks.size(); ++r) {
    const double y = top + r * (2 * lane_h + gap);
    svg.text(8, y + 15, "rank " + std::to_string(r) + " compute");
    svg.text(8, y + lane_h + 15, "rank " + std::to_string(r) + " communication");
    for (const TraceSpan& s : ranks[r]) {
      const std::string cat = category(s);
      const double x = left + (s.start_us - t0) * scale;
      const double w = std::max(0.8, (s.end_us - s.start_us) * scale);
      // A hook is drawn as a thin tick over the backward box it fires in.
      const double yy = y + s.lane * lane_h + (cat == "hook" ? 2 : 4);
      const double hh = cat == "hook" ? lane_h - 4 : lane_h - 8;
      svg.rect(x, yy, w, hh, colour(cat), "#333",
               s.name + " " + format_fixed((s.end_us - s.start_us) / 1e3, 2) + " ms");
    }
  }
  const double ly = height - 25;
  double lx = left;
  for (const char* cat : {"forward", "backward", "hook", "all_reduce", "wait", "optimizer"}) {
    svg.rect(lx, ly - 10, 12, 12, colour(cat));
    svg.text(lx + 16, ly, cat);
    lx += 110;
  }
  svg.text(width - right, ly, format_fixed((t1 - t0) / 1e3, 2) + " ms", {.anchor = "end"});
  svg.write(path);
}

}  // namespace course
