// collective_bench.h: measuring collectives the way nccl-tests does, written once.
//
// THE COST MODEL (docs/cost_models.md; nccl-tests' doc/PERFORMANCE.md). For a buffer of
// S bytes on N ranks, nccl-tests reports
//   algbw = S / t                       (bytes of the user's buffer per second)
//   busbw = algbw * factor(collective)  (bytes each rank's link must carry per second)
// where factor is what the best algorithm makes each rank send (and receive), per byte of
// buffer:
//   all_reduce                        2 (N-1) / N   (reduce-scatter + all-gather)
//   reduce_scatter, all_gather,
//   all_to_all                          (N-1) / N
//   broadcast, reduce                   1
// busbw is comparable across N and across collectives, and with the link's own speed: a
// bandwidth-optimal all-reduce keeps busbw near the link's throughput whatever N is, and
// an algorithm that funnels through one rank sees it fall as N grows. GB/s = 1e9 bytes/s.
//
// What is here:
//   BenchSweep                     -b -e -f -n -w, as nccl-tests spells them (the flags:
//                                  add_sweep_flags, collective_bench_flags.h)
//   bus_factor                     the table above
//   time_all_reduce                one row: check once (#wrong), warm up, time, max over ranks
//   measure_link                   the link's own throughput between two ranks (both ways, one way)
//   measure_memcpy                 main memory's copy rate on this rank
//   CollectiveBenchTable           the nccl-tests columns, printed and saved as CSV
// and, in busbw_plot.h, plot_busbw_svg: busbw against size from those CSV files.
//
// What this is not: a lesson's benchmark. Each lesson picks its algorithms and sizes
// (solutions/05_ring_allreduce/all_reduce_bench.h is the one for the ring).
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "bench_table.h"
#include "process_group.h"
#include "tcp_comm.h"

namespace course {

/// The sizes and repetitions of a sweep (nccl-tests' flags and defaults, except -b).
struct BenchSweep {
  size_t min_bytes = 4u << 10;   ///< -b, first size
  size_t max_bytes = 64u << 20;  ///< -e, last size
  int factor = 4;                ///< -f, each size is the previous times this
  int iterations = 20;           ///< -n, timed calls per size
  int warmup = 5;                ///< -w, untimed calls before them
  ReduceOp op = ReduceOp::SUM;   ///< -o
  /// --rounds: each row is the best of this many rounds of (-w, then -n), the rounds of
  /// all algorithms interleaved, so that one burst of load elsewhere on the machine does
  /// not decide a comparison (nccl-tests has one round; on a shared machine that is noise).
  int rounds = 3;

  /// min_bytes, min_bytes * factor, ... up to max_bytes, each rounded down to whole
  /// float32 elements (at least one). ConfigError when the flags make no sense.
  std::vector<size_t> sizes() const;
};

/// "64M" -> 67108864, "4K" -> 4096, "100" -> 100. ConfigError on anything else.
size_t parse_size(const std::string& text);

enum class Collective { all_reduce, reduce_scatter, all_gather, all_to_all, broadcast, reduce };

/// busbw / algbw for `collective` on `world` ranks (the table above); 1 when world == 1
/// would give 0 (nothing moves), so a one-rank run still prints its algbw.
double bus_factor(Collective collective, int world);

/// One measured row.
struct CollectiveTiming {
  size_t bytes = 0;    ///< the buffer's size in bytes
  size_t count = 0;    ///< the buffer's size in elements
  double time_us = 0;  ///< per call, the slowest rank's mean
  double algbw = 0;    ///< GB/s
  double busbw = 0;    ///< GB/s
  long wrong = 0;      ///< elements that differed from the serial oracle, summed over ranks
};

/// Times group.all_reduce on `bytes` of float32 with sweep.op, the nccl-tests way:
///   1. check: inputs that depend on rank and index, one call, every element compared
///      with the serial answer of collective_oracle.h (#wrong, summed over the ranks);
///   2. sweep.warmup untimed calls, a barrier, sweep.iterations timed calls;
///   3. time = the slowest rank's mean (an all-reduce is done when its last rank is).
/// Every rank of the group calls it with the same arguments; all get the same result.
CollectiveTiming time_all_reduce(ProcessGroup& group, size_t bytes, const BenchSweep& sweep);

/// Times `op`, one call of `collective` on a buffer of `bytes` (the whole buffer, as
/// nccl-tests counts it: N*k values for a reduce-scatter's input or an all-gather's
/// output), as time_all_reduce does without its check: `warmup` untimed calls, a barrier,
/// `iterations` timed calls; time = the slowest rank's mean, algbw and busbw from it
/// (bus_factor). Collective: every rank of the group, the same arguments, `op` calling the
/// same collective of `group` on every rank.
CollectiveTiming time_collective(ProcessGroup& group, Collective collective, size_t bytes,
                                 int iterations, int warmup, const std::function<void()>& op);

/// The better of two timings of one thing: the faster, a timing never taken (time 0) losing.
CollectiveTiming faster(const CollectiveTiming& a, const CollectiveTiming& b);

/// One column of an all-reduce comparison: a process group and how to label it.
struct BenchContender {
  std::string name;                     ///< the algorithm column
  std::string title;                    ///< the heading of its block
  std::unique_ptr<ProcessGroup> group;  ///< the group whose all_reduce is timed
};

/// An all-reduce comparison, interleaved so that a slow moment of the machine hurts every
/// contender alike: at each size of the sweep, every contender once per round
/// (time_all_reduce); each keeps its best round and the most wrong elements any round saw.
/// `os` (rank 0's, or null) gets "# measured <size>" after each size. Returns name -> one
/// timing per size; `wrong` gets every row's wrong elements added.
std::map<std::string, std::vector<CollectiveTiming>> sweep_all_reduce(
    std::vector<BenchContender>& contenders, const BenchSweep& sweep, std::ostream* os,
    long& wrong);

/// How two ranks use their link in measure_link.
enum class LinkMode {
  full_duplex,              ///< both ways at once, one small buffer reused (like iperf)
  full_duplex_from_memory,  ///< both ways at once, from and into `bytes`-sized buffers
  one_way,                  ///< rank 0 to rank 1 only, one small buffer reused
};

/// The link's own throughput between ranks 0 and 1, over their existing socket in
/// `comm`, with the same DuplexLink the ring uses, in 256 KiB pieces:
///   full_duplex              each streams `bytes` to the other at the same time, from and
///                            into one 256 KiB buffer (as iperf does): the link itself,
///                            system calls and kernel copies, the ceiling of a ring step;
///   full_duplex_from_memory  the same, but from and into buffers of `bytes` (too large
///                            for the cache, like a real all-reduce's): the link plus
///                            main memory;
///   one_way                  rank 0 streams to rank 1 only: what one hop of a tree gets.
/// Runs `warmup` + `iterations` transfers in each DuplexMode and keeps the faster mode;
/// time is the mean of the timed ones (the slower rank's; one way, the receiver's). busbw = algbw =
/// bytes / time, per direction. Ranks other than 0 and 1 return zeros at once. REQUIRES:
/// comm.size() >= 2, and ranks 0 and 1 call it together.
CollectiveTiming measure_link(TcpComm& comm, size_t bytes, int iterations, int warmup,
                              LinkMode mode);

/// This rank's main-memory copy rate: memcpy between two `bytes`-sized buffers, best of
/// `iterations`, in GB/s of bytes copied. On one machine a collective's bytes go through
/// main memory as well as through the link (a 64 MiB buffer does not fit in cache), so
/// this is the other ceiling the lesson 05 benchmark reports.
double measure_memcpy(size_t bytes, int iterations);

/// A benchmark's measured figure against a ceiling measured in the same run (the link's
/// bandwidth, a bound the links allow). An algorithm cannot beat its ceiling; when it
/// seems to (by more than 5%, the noise of a quiet machine), the ceiling was measured
/// while other processes had the cores, and the ratios built on it mean nothing.
/// Returns "" when measured <= bound x 1.05, else a note naming both figures, saying the
/// machine was busy and to rerun on an idle one.
std::string busy_machine_note(const std::string& what, double measured, double bound);

/// The nccl-tests table, with the algorithm and the number of ranks in front:
///   algorithm ranks size count type redop time(us) algbw(GB/s) busbw(GB/s) #wrong
class CollectiveBenchTable {
 public:
  CollectiveBenchTable();
  /// Prints "# <title>" and the column names: the start of one algorithm's block.
  void begin_block(const std::string& title, std::ostream* os);
  /// One row; `type`/`redop` as nccl-tests prints them ("float", "sum"; the link row
  /// uses "bytes" and "none").
  void add(const std::string& algorithm, int ranks, const CollectiveTiming& timing,
           const std::string& type, const std::string& redop, std::ostream* os);
  /// A "# ..." line under the table (BenchTable::add_note).
  void add_note(const std::string& note, std::ostream* os) { table_.add_note(note, os); }
  /// Writes every block as CSV (BenchTable::write_csv).
  void write_csv(const std::string& path) const { table_.write_csv(path); }
  /// The rows so far.
  const BenchTable& table() const { return table_; }

 private:
  BenchTable table_;
};

/// A size for a label: "512B", "4K", "1.5M", "64M".
std::string short_size(size_t bytes);

}  // namespace course
