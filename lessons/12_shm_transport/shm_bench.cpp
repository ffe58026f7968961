// shm_bench.cpp: see shm_bench.h.
#include "shm_bench.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <vector>

#include "bench_table.h"
#include "process_group_factory.h"
#include "process_group_tcp.h"
#include "shm_transport.h"

namespace course {

long run_shm_bench(DriverContext& ctx, const ShmBenchOptions& options, std::ostream& out) {
  const std::vector<size_t> sizes = options.sweep.sizes();
  const BenchSweep& sweep = options.sweep;
  const int world = ctx.world();
  const bool printer = ctx.rank() == 0;
  std::ostream* os = printer ? &out : nullptr;

  std::vector<BenchContender> contenders;
  contenders.push_back({"ring-tcp", "ring-tcp: lesson 05's ring over sockets",
                        make_process_group("tcp", ctx.store(), ctx.rank(), world,
                                           shm_driver_recipe(ctx, "bench12/tcp", "tcp"))});
  contenders.push_back({"ring-shm", "ring-shm: the same ring over shared memory",
                        make_process_group("tcp", ctx.store(), ctx.rank(), world,
                                           shm_driver_recipe(ctx, "bench12/shm", "shm"))});
  const std::vector<std::string> backends = available_backends();
  if (std::find(backends.begin(), backends.end(), "gloo") != backends.end()) {
    contenders.push_back({"gloo", "gloo: gloo::allreduce (ring algorithm), gloo backend",
                          make_process_group("gloo", ctx.store(), ctx.rank(), world,
                                             shm_driver_recipe(ctx, "bench12/gloo", "tcp"))});
  } else if (printer) {
    out << "# gloo: not in this build (install libgloo-dev and reconfigure)\n";
  }
  const char* local = std::getenv("LOCAL_WORLD_SIZE");
  const int local_ranks = local != nullptr ? std::max(1, std::atoi(local)) : world;
  const ShmTuning tuning = choose_shm_tuning(local_ranks, available_cores());
  if (printer) {
    out << "# lesson12 all_reduce benchmark: " << world << " ranks on " << available_cores()
        << " core(s), float32, op " << reduce_op_name(sweep.op) << ", sizes "
        << format_bytes(sizes.front()) << " .. " << format_bytes(sizes.back()) << " (x"
        << sweep.factor << "), " << sweep.iterations << " timed iterations after " << sweep.warmup
        << " warm-up, best of " << sweep.rounds << " rounds\n"
        << "# tuning: slots " << tuning.slots << " x " << format_bytes(tuning.slot_bytes)
        << ", spin " << tuning.spin << ", ring chunk "
        << format_bytes(tuning.ring_chunk_elements * sizeof(float)) << ", sender thread "
        << (tuning.ring_sender_thread_bytes == static_cast<size_t>(-1)
                ? std::string("never")
                : "from " + format_bytes(tuning.ring_sender_thread_bytes))
        << "\n# busbw = algbw * 2(N-1)/N; GB/s = 1e9 B/s\n";
  }

  // The links at the largest size, both ways at once from one small buffer each.
  CollectiveTiming link_tcp;
  CollectiveTiming link_shm;
  if (world >= 2) {
    TcpComm& tcp = static_cast<TcpProcessGroup&>(*contenders[0].group).comm();
    TcpComm& shm = static_cast<TcpProcessGroup&>(*contenders[1].group).comm();
    for (int round = 0; round < sweep.rounds; ++round) {
      link_tcp = faster(link_tcp, measure_link(tcp, sizes.back(), sweep.iterations, sweep.warmup,
                                               LinkMode::full_duplex));
      link_shm = faster(link_shm, measure_link(shm, sizes.back(), sweep.iterations, sweep.warmup,
                                               LinkMode::full_duplex));
    }
  }
  monitored_barrier(ctx.store(), "lesson12/link", ctx.rank(), world,
                    ctx.rank() == 0 ? default_timeout() : Millis::max());

  long wrong = 0;
  std::map<std::string, std::vector<CollectiveTiming>> rows =
      sweep_all_reduce(contenders, sweep, os, wrong);

  CollectiveBenchTable table;
  if (world >= 2) {
    table.begin_block(
        "link: ranks 0 and 1 streaming to each other at once through their stream, from and "
        "into one 256 KiB buffer (the ceiling per direction): link-tcp over the socket, "
        "link-shm through the shared segment",
        os);
    table.add("link-tcp", world, link_tcp, "bytes", "none", os);
    table.add("link-shm", world, link_shm, "bytes", "none", os);
  }
  for (const BenchContender& c : contenders) {
    table.begin_block(c.title, os);
    for (const CollectiveTiming& t : rows[c.name]) {
      table.add(c.name, world, t, "float", reduce_op_name(sweep.op), os);
    }
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    const double tcp = rows["ring-tcp"][i].busbw;
    const double shm = rows["ring-shm"][i].busbw;
    std::string note = "at " + format_bytes(sizes[i]) + ": ring-shm / ring-tcp busbw " +
                       format_fixed(shm, 3) + " / " + format_fixed(tcp, 3) + " = " +
                       (tcp > 0 ? format_fixed(shm / tcp, 2) : std::string("-")) + "x";
    if (rows.count("gloo") != 0 && rows["gloo"][i].busbw > 0) {
      const double gloo = rows["gloo"][i].busbw;
      note += "; best ring / gloo " + format_fixed(std::max(tcp, shm), 3) + " / " +
              format_fixed(gloo, 3) + " = " + format_fixed(std::max(tcp, shm) / gloo, 2) + "x";
    }
    table.add_note(note, os);
  }
  if (printer && !options.csv_path.empty()) table.write_csv(options.csv_path);
  return wrong;
}

}  // namespace course
