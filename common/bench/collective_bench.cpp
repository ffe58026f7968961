// collective_bench.cpp: see collective_bench.h.
#include "collective_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "clock.h"
#include "collective_oracle.h"
#include "duplex_link.h"
#include "error.h"

namespace course {

namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

std::string short_size(size_t bytes) {
  const char* units[] = {"B", "K", "M", "G"};
  int unit = 0;
  double value = static_cast<double>(bytes);
  while (value >= 1024 && unit < 3) value /= 1024, ++unit;
  return format_fixed(value, value == std::floor(value) ? 0 : 1) + units[unit];
}

std::vector<size_t> BenchSweep::sizes() const {
  if (min_bytes == 0 || max_bytes < min_bytes || factor < 2 || iterations < 1 || warmup < 0 ||
      rounds < 1) {
    throw ConfigError("benchmark sweep: need 0 < -b <= -e, -f >= 2, -n >= 1, -w >= 0 (got -b " +
                      std::to_string(min_bytes) + " -e " + std::to_string(max_bytes) + " -f " +
                      std::to_string(factor) + " -n " + std::to_string(iterations) + " -w " +
                      std::to_string(warmup) + " --rounds " + std::to_string(rounds) + ")");
  }
  std::vector<size_t> out;
  for (size_t bytes = min_bytes; bytes <= max_bytes; bytes *= factor) {
    out.push_back(std::max(sizeof(float), bytes / sizeof(float) * sizeof(float)));
    if (bytes > max_bytes / factor) break;
  }
  return out;
}

size_t parse_size(const std::string& text) {
  size_t pos = 0;
  unsigned long long value = 0;
  try {
    value = std::stoull(text, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  const std::string suffix = pos == 0 ? "?" : text.substr(pos);
  const std::map<std::string, unsigned long long> scale = {
      {"", 1},           {"K", 1ull << 10}, {"k", 1ull << 10}, {"M", 1ull << 20},
      {"m", 1ull << 20}, {"G", 1ull << 30}, {"g", 1ull << 30}};
  const auto it = scale.find(suffix);
  if (pos == 0 || it == scale.end()) {
    throw ConfigError("bad size '" + text +
                      "': write bytes, optionally with K, M or G "
                      "(powers of 1024), e.g. 4K or 64M");
  }
  return static_cast<size_t>(value * it->second);
}

double bus_factor(Collective collective, int world) {
  if (world <= 1) return 1.0;
  const double n = world;
  switch (collective) {
    case Collective::all_reduce:
      return 2.0 * (n - 1) / n;
    case Collective::reduce_scatter:
    case Collective::all_gather:
    case Collective::all_to_all:
      return (n - 1) / n;
    case Collective::broadcast:
    case Collective::reduce:
      return 1.0;
  }
  return 1.0;
}

CollectiveTiming time_all_reduce(ProcessGroup& group, size_t bytes, const BenchSweep& sweep) {
  const int world = group.size();
  const int rank = group.rank();
  CollectiveTiming timing;
  timing.count = std::max<size_t>(1, bytes / sizeof(float));
  timing.bytes = timing.count * sizeof(float);

  // 1. The check: one call on known inputs (collective_oracle.h), compared element by
  // element with the serial answer.
  std::vector<float> data = reduce_values(rank, timing.count);
  group.all_reduce(data, sweep.op);
  const size_t wrong =
      count_wrong(data, expected_reduce(sweep.op, world, timing.count), tolerance(sweep.op));
  std::vector<float> wrong_total{static_cast<float>(wrong)};
  group.all_reduce(wrong_total, ReduceOp::SUM);
  timing.wrong = std::lround(wrong_total[0]);

  // 2. Warm up (connections, page faults, socket buffer autotuning), line up, time.
  for (int i = 0; i < sweep.warmup; ++i) group.all_reduce(data, sweep.op);
  group.barrier();
  const auto start = Clock::now();
  for (int i = 0; i < sweep.iterations; ++i) group.all_reduce(data, sweep.op);
  std::vector<float> mean_us{static_cast<float>(seconds_since(start) * 1e6 / sweep.iterations)};

  // 3. The slowest rank's mean is the collective's time.
  group.all_reduce(mean_us, ReduceOp::MAX);
  timing.time_us = mean_us[0];
  timing.algbw = timing.bytes / (timing.time_us * 1e-6) / 1e9;
  timing.busbw = timing.algbw * bus_factor(Collective::all_reduce, world);
  return timing;
}

CollectiveTiming time_collective(ProcessGroup& group, Collective collective, size_t bytes,
                                 int iterations, int warmup, const std::function<void()>& op) {
  CollectiveTiming timing;
  timing.bytes = bytes;
  timing.count = bytes / sizeof(float);
  for (int i = 0; i < warmup; ++i) op();
  group.barrier();
  const auto start = Clock::now();
  for (int i = 0; i < iterations; ++i) op();
  std::vector<float> mean_us{static_cast<float>(seconds_since(start) * 1e6 / iterations)};
  group.all_reduce(mean_us, ReduceOp::MAX);
  timing.time_us = mean_us[0];
  timing.algbw = static_cast<double>(timing.bytes) / (timing.time_us * 1e-6) / 1e9;
  timing.busbw = timing.algbw * bus_factor(collective, group.size());
  return timing;
}

CollectiveTiming faster(const CollectiveTiming& a, const CollectiveTiming& b) {
  return a.time_us == 0 || (b.time_us > 0 && b.time_us < a.time_us) ? b : a;
}

std::map<std::string, std::vector<CollectiveTiming>> sweep_all_reduce(
    std::vector<BenchContender>& contenders, const BenchSweep& sweep, std::ostream* os,
    long& wrong) {
  std::map<std::string, std::vector<CollectiveTiming>> rows;
  for (size_t bytes : sweep.sizes()) {
    std::map<std::string, CollectiveTiming> best;
    for (int round = 0; round < sweep.rounds; ++round) {
      for (BenchContender& c : contenders) {
        const CollectiveTiming t = time_all_reduce(*c.group, bytes, sweep);
        const long most_wrong = std::max(best[c.name].wrong, t.wrong);
        best[c.name] = faster(best[c.name], t);
        best[c.name].wrong = most_wrong;
      }
    }
    for (BenchContender& c : contenders) {
      rows[c.name].push_back(best[c.name]);
      wrong += best[c.name].wrong;
    }
    if (os) *os << "# measured " << format_bytes(bytes) << "\n" << std::flush;
  }
  return rows;
}

CollectiveTiming measure_link(TcpComm& comm, size_t bytes, int iterations, int warmup,
                              LinkMode mode) {
  CollectiveTiming timing;
  if (comm.rank() > 1) return timing;
  if (comm.size() < 2) throw ConfigError("measure_link needs at least 2 ranks");
  const int peer = 1 - comm.rank();
  const bool sends = mode != LinkMode::one_way || comm.rank() == 0;
  const bool receives = mode != LinkMode::one_way || comm.rank() == 1;
  const bool from_memory = mode == LinkMode::full_duplex_from_memory;
  constexpr size_t kPiece = 256 << 10;
  const size_t buffer = from_memory ? bytes : std::min(bytes, kPiece);
  std::vector<char> out(sends ? buffer : 0, 1);
  std::vector<char> in(receives ? buffer : 0, 0);

  // The mean time of one transfer of `bytes` with the sends done the `how` way.
  const auto mean_seconds = [&](DuplexMode how) {
    double total = 0;
    for (int i = 0; i < warmup + iterations; ++i) {
      // One byte each way first, so that both ranks start the clock together.
      char go = 0, their_go = 0;
      run_duplex(comm, peer, peer, "link start", DuplexMode::one_thread, [&](DuplexLink& link) {
        link.post_send(&go, 1);
        link.recv(&their_go, 1);
      });
      const auto start = Clock::now();
      run_duplex(comm, peer, peer, "link", how, [&](DuplexLink& link) {
        for (size_t done = 0; done < bytes; done += kPiece) {
          const size_t piece = std::min(kPiece, bytes - done);
          const size_t at = from_memory ? done : 0;
          if (sends) link.post_send(out.data() + at, piece);
          if (receives) link.recv(in.data() + at, piece);
        }
      });
      if (i >= warmup) total += seconds_since(start);
    }
    return total / iterations;
  };
  // Both ways of moving the sends (duplex_link.h); the link's number is the better one.
  double mine[2] = {mean_seconds(DuplexMode::one_thread), mean_seconds(DuplexMode::sender_thread)};
  double theirs[2] = {0, 0};
  run_duplex(comm, peer, peer, "link result", DuplexMode::one_thread, [&](DuplexLink& link) {
    link.post_send(mine, sizeof(mine));
    link.recv(theirs, sizeof(theirs));
  });
  double seconds = 0;
  for (int m = 0; m < 2; ++m) {
    // One way, the sender's clock stops when its bytes are in the kernel: the receiver's
    // is the one that counts. Both ways, the slower of the two ranks.
    const double t = mode == LinkMode::one_way ? (comm.rank() == 1 ? mine[m] : theirs[m])
                                               : std::max(mine[m], theirs[m]);
    if (seconds == 0 || t < seconds) seconds = t;
  }
  timing.bytes = bytes;
  timing.count = bytes;
  timing.time_us = seconds * 1e6;
  timing.algbw = bytes / seconds / 1e9;
  timing.busbw = timing.algbw;
  return timing;
}

double measure_memcpy(size_t bytes, int iterations) {
  std::vector<char> from(bytes, 1);
  std::vector<char> to(bytes, 0);
  double best = 0;
  for (int i = 0; i < std::max(1, iterations); ++i) {
    const auto start = Clock::now();
    std::memcpy(to.data(), from.data(), bytes);
    const double seconds = seconds_since(start);
    from[i % bytes] = to[(i + 1) % bytes];  // keeps the copies from being optimised away
    if (seconds > 0) best = std::max(best, bytes / seconds / 1e9);
  }
  return best;
}

CollectiveBenchTable::CollectiveBenchTable()
    : table_({{"algorithm", 9},
              {"ranks", 5},
              {"size", 10},
              {"count", 10},
              {"type", 6},
              {"redop", 5},
              {"time(us)", 10},
              {"algbw(GB/s)", 11},
              {"busbw(GB/s)", 11},
              {"#wrong", 6}}) {}

void CollectiveBenchTable::begin_block(const std::string& title, std::ostream* os) {
  if (!os) return;
  *os << "#\n# " << title << '\n';
  table_.print_header(*os);
}

void CollectiveBenchTable::add(const std::string& algorithm, int ranks, const CollectiveTiming& t,
                               const std::string& type, const std::string& redop,
                               std::ostream* os) {
  table_.add_row({algorithm, std::to_string(ranks), std::to_string(t.bytes),
                  std::to_string(t.count), type, redop, format_fixed(t.time_us, 1),
                  format_fixed(t.algbw, 3), format_fixed(t.busbw, 3), std::to_string(t.wrong)},
                 os);
}

std::string busy_machine_note(const std::string& what, double measured, double bound) {
  if (!(bound > 0) || measured <= bound * 1.05) return "";
  return "BUSY MACHINE: " + what + " measured " + format_fixed(measured, 3) +
         ", above the ceiling of " + format_fixed(bound, 3) +
         " measured in the same run, which no algorithm can beat: other processes had the "
         "cores while the ceiling (or the baseline) ran. The ratios of this run are not "
         "meaningful; rerun on an idle machine";
}

}  // namespace course
