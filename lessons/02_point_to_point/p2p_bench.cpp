// p2p_bench.cpp: lesson 02's latency and bandwidth sweep, next to the raw socket
// (see p2p_bench.h). Given code: it runs whatever point_to_point.cpp you wrote.
#include "p2p_bench.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include "bench_stats.h"
#include "clock.h"
#include "error.h"
#include "point_to_point.h"

namespace course {
namespace {

using Clock = std::chrono::steady_clock;

// Each sample is short (a few milliseconds, about a scheduler time slice), raw and p2p
// samples alternate, and each column reports the median of its samples: on a shared
// machine single samples are both slower (another process ran) and faster (both ranks
// happened to share a core and its cache) than the typical one.

/// Iterations of one ping-pong sample of `bytes`: many for small sizes (the clock's
/// resolution), few for large ones (about 4 MiB each way).
int pingpong_iterations(size_t bytes) {
  return static_cast<int>(std::clamp<size_t>((4u << 20) / bytes, 2, 2000));
}

/// Messages in one streaming sample of `bytes` each (about 8 MiB in all).
int window_messages(size_t bytes) {
  return static_cast<int>(std::clamp<size_t>((8u << 20) / bytes, 2, 2000));
}

/// The two ways of moving n bytes that the benchmark compares.
struct Mover {
  virtual ~Mover() = default;
  virtual void send(int peer, float* buffer, size_t bytes) = 0;
  virtual void recv(int peer, float* buffer, size_t bytes) = 0;
};

struct RawMover : Mover {
  TcpComm& comm;
  explicit RawMover(TcpComm& c) : comm(c) {}
  void send(int peer, float* buffer, size_t bytes) override {
    comm.stream(peer).send_all(buffer, bytes, comm.timeout());
  }
  void recv(int peer, float* buffer, size_t bytes) override {
    comm.stream(peer).recv_all(buffer, bytes, comm.timeout());
  }
};

struct P2pMover : Mover {
  TcpComm& comm;
  explicit P2pMover(TcpComm& c) : comm(c) {}
  void send(int peer, float* buffer, size_t bytes) override {
    p2p_send(comm, std::span<const float>(buffer, bytes / sizeof(float)), peer);
  }
  void recv(int peer, float* buffer, size_t bytes) override {
    p2p_recv(comm, std::span<float>(buffer, bytes / sizeof(float)), peer);
  }
};

/// Half round trip in microseconds (meaningful on rank 0; rank 1 returns 0).
double pingpong_us(Mover& mover, int rank, float* buffer, size_t bytes) {
  const int iterations = pingpong_iterations(bytes);
  const auto start = Clock::now();
  for (int i = 0; i < iterations; ++i) {
    if (rank == 0) {
      mover.send(1, buffer, bytes);
      mover.recv(1, buffer, bytes);
    } else {
      mover.recv(0, buffer, bytes);
      mover.send(0, buffer, bytes);
    }
  }
  return seconds_since(start) * 1e6 / (2.0 * iterations);
}

/// Streaming bandwidth in GB/s (meaningful on rank 0).
double stream_gbps(Mover& mover, int rank, float* buffer, float* ack, size_t bytes) {
  const int messages = window_messages(bytes);
  const auto start = Clock::now();
  if (rank == 0) {
    for (int i = 0; i < messages; ++i) mover.send(1, buffer, bytes);
    mover.recv(1, ack, sizeof(float));
  } else {
    for (int i = 0; i < messages; ++i) mover.recv(0, buffer, bytes);
    mover.send(0, ack, sizeof(float));
  }
  return static_cast<double>(bytes) * messages / seconds_since(start) / 1e9;
}

}  // namespace

P2pBenchResult run_p2p_bench(TcpComm& comm, std::ostream& out, const P2pBenchOptions& options) {
  P2pBenchResult result;
  result.table = BenchTable({{"size(B)", 10},
                             {"count", 10},
                             {"raw lat(us)", 12},
                             {"p2p lat(us)", 12},
                             {"lat x", 6},
                             {"raw GB/s", 9},
                             {"p2p GB/s", 9},
                             {"bw %", 6}});
  if (comm.size() < 2) throw ConfigError("the lesson 02 benchmark needs 2 ranks: --np 2");
  if (options.min_bytes < sizeof(float) || options.min_bytes > options.max_bytes) {
    throw ConfigError("the benchmark's sizes must satisfy 4 <= min_bytes <= max_bytes");
  }
  const int rank = comm.rank();
  if (rank > 1) return result;
  const bool print = rank == 0;
  std::vector<float> buffer(std::max<size_t>(options.max_bytes / sizeof(float), 1), 1.0f);
  float ack = 0;
  RawMover raw(comm);
  P2pMover p2p(comm);

  if (print) {
    out << "# lesson 02 benchmark: ranks 0 and 1, one TCP connection, both ways measured in "
           "this run\n# lat: half a ping-pong round trip; GB/s: one-way stream, 1e9 bytes/s\n"
           "# each number: the median of "
        << options.repetitions << " samples, raw and p2p interleaved\n";
    result.table.print_header(out);
  }
  // Warm up the connection (TCP's window, the pages of the buffer, the channels).
  const size_t warmup_bytes = std::min<size_t>(1u << 20, buffer.size() * sizeof(float));
  for (Mover* m : {static_cast<Mover*>(&raw), static_cast<Mover*>(&p2p)}) {
    pingpong_us(*m, rank, buffer.data(), warmup_bytes);
    stream_gbps(*m, rank, buffer.data(), &ack, warmup_bytes);
  }

  // For the bandwidth target: bytes moved and median seconds, summed over sizes >= 1 MiB.
  double big_bytes = 0, big_raw_seconds = 0, big_p2p_seconds = 0;
  result.worst_bandwidth_fraction = 1e9;
  for (size_t bytes = options.min_bytes; bytes <= options.max_bytes; bytes *= 2) {
    std::vector<double> raw_lats, p2p_lats, raw_bws, p2p_bws;
    for (int rep = 0; rep < options.repetitions; ++rep) {
      // Interleaved, and in alternating order, so both see the same machine.
      for (int turn = 0; turn < 2; ++turn) {
        if ((turn + rep) % 2 == 0) {
          raw_lats.push_back(pingpong_us(raw, rank, buffer.data(), bytes));
          raw_bws.push_back(stream_gbps(raw, rank, buffer.data(), &ack, bytes));
        } else {
          p2p_lats.push_back(pingpong_us(p2p, rank, buffer.data(), bytes));
          p2p_bws.push_back(stream_gbps(p2p, rank, buffer.data(), &ack, bytes));
        }
      }
    }
    const double raw_lat = median(raw_lats), p2p_lat = median(p2p_lats);
    const double raw_bw = median(raw_bws), p2p_bw = median(p2p_bws);
    const double lat_ratio = p2p_lat / raw_lat;
    const double bw_fraction = p2p_bw / raw_bw;
    if (bytes == options.min_bytes) {
      result.small_latency_p2p_us = p2p_lat;
      result.small_latency_raw_us = raw_lat;
      result.latency_ratio = lat_ratio;
    }
    if (bytes >= (1u << 20)) {
      big_bytes += static_cast<double>(bytes);
      big_raw_seconds += static_cast<double>(bytes) / (raw_bw * 1e9);
      big_p2p_seconds += static_cast<double>(bytes) / (p2p_bw * 1e9);
      if (bw_fraction < result.worst_bandwidth_fraction) {
        result.worst_bandwidth_fraction = bw_fraction;
        result.worst_bandwidth_bytes = bytes;
      }
    }
    result.table.add_row(
        {std::to_string(bytes), std::to_string(bytes / sizeof(float)), format_fixed(raw_lat, 2),
         format_fixed(p2p_lat, 2), format_fixed(lat_ratio, 2), format_fixed(raw_bw, 3),
         format_fixed(p2p_bw, 3), format_fixed(100 * bw_fraction, 1)},
        print ? &out : nullptr);
  }
  if (result.worst_bandwidth_bytes == 0) result.worst_bandwidth_fraction = 0;
  if (big_bytes > 0) result.bandwidth_fraction = big_raw_seconds / big_p2p_seconds;
  if (print) {
    result.table.add_note(format_bytes(options.min_bytes) + " half round trip: p2p " +
                              format_fixed(result.small_latency_p2p_us, 2) + " us, raw " +
                              format_fixed(result.small_latency_raw_us, 2) +
                              " us: " + format_fixed(result.latency_ratio, 2) +
                              "x the raw socket (target <= 1.5x: " +
                              (result.latency_ratio <= 1.5 ? "met)" : "missed)"),
                          &out);
    if (big_bytes > 0) {
      result.table.add_note(">= 1 MiB: p2p moves the same bytes at " +
                                format_fixed(100 * result.bandwidth_fraction, 1) +
                                "% of the raw socket's bandwidth (target >= 90%: " +
                                (result.bandwidth_fraction >= 0.9 ? "met" : "missed") +
                                "); lowest single size " +
                                format_fixed(100 * result.worst_bandwidth_fraction, 1) + "% at " +
                                format_bytes(result.worst_bandwidth_bytes),
                            &out);
    }
  }
  return result;
}

}  // namespace course
