// all_reduce_bench.cpp: lesson 05's benchmark (see all_reduce_bench.h).
#include "all_reduce_bench.h"

#include <algorithm>
#include <filesystem>
#include <memory>

#include "all_reduce_ring.h"
#include "busbw_plot.h"
#include "driver_recipe.h"
#include "emulated_link.h"
#include "error.h"
#include "process_group_factory.h"
#include "process_group_tcp.h"
#include "reductions.h"
#include "ring_allreduce.h"

namespace course {

namespace {

GroupRecipe recipe_for(DriverContext& ctx, const std::string& name,
                       void (*install)(TcpAlgorithms&)) {
  return driver_recipe(ctx, "bench/" + name, install);
}

// The timing of `name` at the size nearest `bytes`, or nullptr.
const CollectiveTiming* row_at(const AllreduceBenchResult& result, const std::string& name,
                               size_t bytes) {
  const auto it = result.rows.find(name);
  if (it == result.rows.end()) return nullptr;
  for (const CollectiveTiming& t : it->second) {
    if (t.bytes == bytes) return &t;
  }
  return nullptr;
}

std::string ratio_note(const AllreduceBenchResult& result, const std::string& a,
                       const std::string& b, size_t bytes) {
  const CollectiveTiming* x = row_at(result, a, bytes);
  const CollectiveTiming* y = row_at(result, b, bytes);
  if (!x || !y || y->busbw <= 0) return "";
  return a + " / " + b + " busbw at " + format_bytes(bytes) + ": " + format_fixed(x->busbw, 3) +
         " / " + format_fixed(y->busbw, 3) + " = " + format_fixed(x->busbw / y->busbw, 2) + "x";
}

}  // namespace

AllreduceBenchResult run_allreduce_bench(DriverContext& ctx, const AllreduceBenchOptions& options,
                                         std::ostream& out) {
  const std::vector<size_t> sizes = options.sweep.sizes();
  const int world = ctx.world();
  const bool printer = ctx.rank() == 0;
  std::ostream* os = printer ? &out : nullptr;

  std::vector<BenchContender> contenders;
  contenders.push_back({"naive",
                        "naive: lesson 04's all_reduce_naive (reduce to rank 0, then "
                        "broadcast), tcp backend",
                        make_process_group("tcp", ctx.store(), ctx.rank(), world,
                                           recipe_for(ctx, "naive", install_lesson04))});
  contenders.push_back({"ring",
                        "ring: this lesson's all_reduce_ring (chunked, pipelined), tcp "
                        "backend",
                        make_process_group("tcp", ctx.store(), ctx.rank(), world,
                                           recipe_for(ctx, "ring", install_lesson05))});
  const std::vector<std::string> backends = available_backends();
  if (std::find(backends.begin(), backends.end(), "gloo") != backends.end()) {
    contenders.push_back({"gloo", "gloo: gloo::allreduce (ring algorithm), gloo backend",
                          make_process_group("gloo", ctx.store(), ctx.rank(), world,
                                             recipe_for(ctx, "gloo", nullptr))});
  } else if (printer) {
    out << "# gloo: not in this build (install libgloo-dev and reconfigure)\n";
  }

  AllreduceBenchResult result;
  const BenchSweep& sweep = options.sweep;
  if (printer) {
    out << "# lesson05 all_reduce benchmark: " << world << " ranks, float32, op "
        << reduce_op_name(sweep.op) << ", sizes " << format_bytes(sizes.front()) << " .. "
        << format_bytes(sizes.back()) << " (x" << sweep.factor << "), " << sweep.iterations
        << " timed iterations after " << sweep.warmup << " warm-up, best of " << sweep.rounds
        << " rounds\n# " << link_header() << "\n"
        << "# time = slowest rank's mean per call, best round; algbw = size / time; busbw = "
        << "algbw * 2(N-1)/N = " << format_fixed(bus_factor(Collective::all_reduce, world), 3)
        << " x algbw; GB/s = 1e9 "
        << "B/s\n";
  }

  // The link, over the ring group's own sockets, at the largest size: both ways at once
  // (the ceiling), both ways from and into main memory, one way. Best of the rounds.
  auto& ring_group = static_cast<TcpProcessGroup&>(*contenders[1].group);
  if (world >= 2) {
    TcpComm& comm = ring_group.comm();
    const size_t bytes = sizes.back();
    for (int round = 0; round < sweep.rounds; ++round) {
      result.link = faster(result.link, measure_link(comm, bytes, sweep.iterations, sweep.warmup,
                                                     LinkMode::full_duplex));
      result.link_memory =
          faster(result.link_memory, measure_link(comm, bytes, sweep.iterations, sweep.warmup,
                                                  LinkMode::full_duplex_from_memory));
      result.link_one_way =
          faster(result.link_one_way,
                 measure_link(comm, bytes, sweep.iterations, sweep.warmup, LinkMode::one_way));
    }
  }
  // Ranks 2 and up idle while ranks 0 and 1 measure the link, which can take longer than a
  // socket timeout on a loaded machine: they wait for rank 0's release in the store, with
  // no deadline, instead of in the ring's sockets. Rank 0, done measuring, waits for the
  // others' arrivals with the usual timeout and names any rank that froze meanwhile; if
  // rank 0 or 1 fails while measuring, the other times out on it and the job ends.
  monitored_barrier(ctx.store(), "lesson05/link", ctx.rank(), world,
                    ctx.rank() == 0 ? default_timeout() : Millis::max());
  ring_group.barrier();

  // Interleaved sweep: at each size, every contender once per round, best round kept.
  result.rows = sweep_all_reduce(contenders, sweep, os, result.wrong);

  // The blocks.
  CollectiveBenchTable table;
  if (world >= 2) {
    table.begin_block(
        "link: ranks 0 and 1 streaming to each other at once over one raw mesh socket (the "
        "ceiling per direction): link from and into one 256 KiB buffer, like iperf; link-mem "
        "from and into buffers of the largest size; link-1way one way only",
        os);
    table.add("link", world, result.link, "bytes", "none", os);
    table.add("link-mem", world, result.link_memory, "bytes", "none", os);
    table.add("link-1way", world, result.link_one_way, "bytes", "none", os);
  }
  for (const BenchContender& c : contenders) {
    table.begin_block(c.title, os);
    for (const CollectiveTiming& t : result.rows[c.name]) {
      table.add(c.name, world, t, "float", reduce_op_name(sweep.op), os);
    }
  }

  // The notes: efficiency and the lesson's target ratios.
  std::vector<std::string> notes;
  const size_t largest = sizes.back();
  // Ceilings measured while the machine was busy: say so instead of printing an
  // efficiency above 100% or a ratio above what the links allow.
  std::vector<std::string> busy;
  if (world >= 2 && result.link.busbw > 0) {
    if (const CollectiveTiming* ring = row_at(result, "ring", largest)) {
      const std::string note = busy_machine_note("ring busbw at " + format_bytes(largest),
                                                 ring->busbw, result.link.busbw);
      if (!note.empty()) busy.push_back(note);
    }
  }
  if (world >= 2 && result.link.busbw > 0 && busy.empty()) {
    if (const CollectiveTiming* ring = row_at(result, "ring", largest)) {
      notes.push_back("ring efficiency at " + format_bytes(largest) + ": busbw " +
                      format_fixed(ring->busbw, 3) + " / link " +
                      format_fixed(result.link.busbw, 3) + " = " +
                      format_fixed(100.0 * ring->busbw / result.link.busbw, 1) + "%; / link-mem " +
                      format_fixed(result.link_memory.busbw, 3) + " = " +
                      format_fixed(100.0 * ring->busbw / result.link_memory.busbw, 1) + "%");
    }
  }
  for (size_t bytes : {size_t{16} << 20, size_t{64} << 20}) {
    const std::string note = ratio_note(result, "ring", "gloo", bytes);
    if (!note.empty()) notes.push_back(note);
  }
  for (size_t bytes : sizes) {
    if (bytes < (size_t{1} << 20)) continue;
    const std::string note = ratio_note(result, "ring", "naive", bytes);
    if (!note.empty()) notes.push_back(note);
  }
  if (world == 2 && result.link.busbw > 0 && result.link_one_way.busbw > 0 && busy.empty()) {
    // Two ranks: the naive all-reduce sends the buffer one way, then back (two one-way
    // transfers); the ring sends half of it each way at once, twice (one full-duplex
    // transfer of the buffer). Were the naive version limited by the link alone, the ring
    // could be at most this much faster. Not a ceiling: nothing bounds how slow the naive
    // version may be (a large buffer costs it main memory and a reduction on one rank),
    // so a higher ratio says where the naive version's time goes, not that the run is
    // wrong.
    const double bound = 2 * result.link.busbw / result.link_one_way.busbw;
    std::string note =
        "two ranks: were the naive version limited by the link alone, ring / "
        "naive <= 2 x link / link-1way = 2 x " +
        format_fixed(result.link.busbw, 3) + " / " + format_fixed(result.link_one_way.busbw, 3) +
        " = " + format_fixed(bound, 2) + "x";
    const CollectiveTiming* ring = row_at(result, "ring", largest);
    const CollectiveTiming* naive = row_at(result, "naive", largest);
    if (ring && naive && naive->busbw > 0 && ring->busbw / naive->busbw > bound) {
      note += "; measured " + format_fixed(ring->busbw / naive->busbw, 2) + "x at " +
              format_bytes(largest) + ": there the naive version is limited by main memory " +
              "and its own reduction (or by other load on the machine), not by the link";
      const std::vector<CollectiveTiming>& rows = result.rows["naive"];
      if (rows.size() >= 2 && rows[rows.size() - 2].time_us > 0) {
        const CollectiveTiming& before = rows[rows.size() - 2];
        note += " (it took " + format_fixed(naive->time_us / before.time_us, 1) + "x its " +
                format_bytes(before.bytes) + " time for " +
                format_fixed(static_cast<double>(naive->bytes) / before.bytes, 1) + "x the bytes)";
      }
    }
    notes.push_back(note);
  }
  if (printer) {
    // Local to rank 0, so the others do not disturb it: they are waiting here.
    notes.push_back("main memory on rank 0: memcpy of " + format_bytes(largest) + " at " +
                    format_fixed(measure_memcpy(largest, 5), 2) +
                    " GB/s; every byte of a buffer this large is read and written there as "
                    "well as carried by the link");
  }
  notes.insert(notes.end(), busy.begin(), busy.end());
  notes.push_back("#wrong over every row: " + std::to_string(result.wrong));
  if (printer) out << "#\n";
  for (const std::string& note : notes) table.add_note(note, os);

  if (printer && !options.csv_path.empty()) {
    table.write_csv(options.csv_path);
    out << "# wrote " << options.csv_path << "\n";
    if (!options.svg_path.empty()) {
      // Plot every lesson05_np*.csv beside this one: after --np 2 and --np 4, one picture.
      std::vector<std::string> csvs;
      const std::filesystem::path dir =
          std::filesystem::path(options.csv_path).parent_path().empty()
              ? std::filesystem::path(".")
              : std::filesystem::path(options.csv_path).parent_path();
      for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        const std::string file = entry.path().filename().string();
        if (file.rfind("lesson05_np", 0) == 0 && entry.path().extension() == ".csv") {
          csvs.push_back(entry.path().string());
        }
      }
      std::sort(csvs.begin(), csvs.end());
      if (plot_busbw_svg(csvs, options.svg_path,
                         std::string("all_reduce bus bandwidth, float32 ") +
                             reduce_op_name(sweep.op) + ", loopback TCP on one machine",
                         {"link", "link-mem"})) {
        out << "# wrote " << options.svg_path << " (" << csvs.size() << " CSV file(s))\n";
      }
    }
  }
  return result;
}

}  // namespace course
