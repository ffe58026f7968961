// p2p_bench.h: lesson 02's benchmark: what a message costs next to the bare socket.
//
// Between ranks 0 and 1, over the very socket the messages use, for sizes 8 B .. 64 MiB
// (doubling), measured in the same run and interleaved so both see the same machine:
//
//   latency    ping-pong: 0 sends, 1 sends back; half the round trip. "raw" moves the
//              bytes with Socket::send_all/recv_all; "p2p" with p2p_send/p2p_recv, which
//              adds the 16-byte header, its checks and the channel.
//   bandwidth  streaming: 0 sends a window of messages back to back, 1 receives them and
//              answers with one small ack; bytes / time, GB/s = 1e9 bytes per second.
//
// Each number is the median of several short samples, raw and p2p interleaved, so both
// see the same machine. The cost model
// the table illustrates: time(n) = alpha + n
// * beta; the 8-byte latency is alpha, the bandwidth of the largest sizes is 1 / beta.
//
// Targets of the course: the 8-byte half round trip at most 1.5x the raw socket's, and at
// 1 MiB and above at least 90% of the raw socket's bandwidth (over those sizes together:
// one size alone swings by more than 10% from run to run on a busy machine).
//
// What this is not: a test. It prints numbers; the verdict does not depend on them.
#pragma once

#include <ostream>

#include "bench_table.h"
#include "tcp_comm.h"

namespace course {

struct P2pBenchOptions {
  size_t min_bytes = 8;
  size_t max_bytes = 64u << 20;
  int repetitions = 11;  ///< samples per size and column (the median is shown)
};

struct P2pBenchResult {
  BenchTable table{{}};
  double small_latency_p2p_us = 0;  ///< half round trip at min_bytes
  double small_latency_raw_us = 0;
  double latency_ratio = 0;  ///< p2p / raw at min_bytes (target <= 1.5)
  /// Over every size >= 1 MiB: (sum of bytes / sum of raw times) against the same for
  /// p2p, the times being each size's median; the target is >= 0.9.
  double bandwidth_fraction = 0;
  double worst_bandwidth_fraction = 0;  ///< the lowest p2p / raw of a single size >= 1 MiB
  size_t worst_bandwidth_bytes = 0;     ///< the size where that lowest is
};

/// Runs on ranks 0 and 1 of `comm` (other ranks return at once with an empty result).
/// Rank 0 prints the table to `out` as it goes. REQUIRES: comm.size() >= 2.
P2pBenchResult run_p2p_bench(TcpComm& comm, std::ostream& out, const P2pBenchOptions& options = {});

}  // namespace course
