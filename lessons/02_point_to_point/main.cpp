// main.cpp: ./lesson02, messages between ranks.
//
//   make lesson02 && ./lesson02               (2 ranks; --np N for more)
//   ./lesson02 --bench                        latency and bandwidth next to the raw socket
//   ./lesson02 --bench --csv bench-results/lesson02.csv
//   ./lesson02 --bench --min-bytes 4096 --max-bytes 131072 --reps 9
//
// Every rank connects the full mesh (lesson 01) and runs your point_to_point.cpp:
//   1. the seed's ping-pong between ranks 0 and 1: a tensor starts at 0, rank 0 adds 1
//      and sends it, rank 1 adds 2 and sends it back; rank 0 must end with 3;
//   2. tagged messages of several sizes (0 and 1 included) arriving in order;
//   3. every rank isends 16 MiB to the next rank while receiving 16 MiB from the previous
//      one (with blocking sends on both sides this would deadlock: see the README);
//   4. a receive into a buffer smaller than the message: it must fail, naming both sizes.
// The verdict is PASS only if every rank saw exactly what it should.
#include <CLI/CLI.hpp>
#include <iostream>
#include <vector>

#include "collective_oracle.h"
#include "driver.h"
#include "full_mesh.h"
#include "handshake.h"
#include "p2p_bench.h"
#include "point_to_point.h"

namespace {

using course::TcpComm;

std::string g_csv;                // --csv
course::P2pBenchOptions g_bench;  // --min-bytes, --max-bytes, --reps

// 1. The ping-pong of seed 001, on ranks 0 and 1.
bool ping_pong(TcpComm& comm) {
  std::vector<float> tensor{0.0f};
  if (comm.rank() == 0) {
    tensor[0] += 1;
    course::p2p_send(comm, tensor, 1);
    course::p2p_recv(comm, tensor, 1);
    std::cout << "ping-pong: sent 1, got back " << tensor[0] << " (expected 3)" << std::endl;
    return tensor[0] == 3.0f;
  }
  if (comm.rank() == 1) {
    course::p2p_recv(comm, tensor, 0);
    const bool ok = tensor[0] == 1.0f;
    tensor[0] += 2;
    course::p2p_send(comm, tensor, 0);
    return ok;
  }
  return true;
}

// 2. Messages with different tags and sizes, matched in order, from rank 0 to rank 1.
bool tagged_messages(TcpComm& comm) {
  const std::vector<std::pair<int, size_t>> messages{{7, 5}, {8, 0}, {7, 1}, {42, 1000}};
  bool ok = true;
  for (size_t m = 0; m < messages.size(); ++m) {
    const auto [tag, count] = messages[m];
    if (comm.rank() == 0) {
      course::p2p_send(comm, course::data_values(0, count, m), 1, tag);
    } else if (comm.rank() == 1) {
      std::vector<float> got(count, -1.0f);
      course::p2p_recv(comm, got, 0, tag);
      const std::string wrong = course::describe_wrong(got, course::data_values(0, count, m));
      if (!wrong.empty()) {
        std::cout << "message " << m << " (tag " << tag << "): " << wrong << std::endl;
        ok = false;
      }
    }
  }
  return ok;
}

// 3. Everyone sends 16 MiB to the right while receiving from the left, at the same time.
bool ring_exchange(TcpComm& comm) {
  const int n = comm.size(), r = comm.rank();
  const int right = (r + 1) % n, left = (r + n - 1) % n;
  const size_t count = (16u << 20) / sizeof(float);
  const std::vector<float> mine = course::data_values(r, count);
  std::vector<float> theirs(count, -1.0f);
  course::WorkPtr recv = course::p2p_irecv(comm, theirs, left, 1);
  course::WorkPtr send = course::p2p_isend(comm, mine, right, 1);
  course::wait_all({recv, send}, comm.timeout());
  const std::string wrong = course::describe_wrong(theirs, course::data_values(left, count));
  if (!wrong.empty()) std::cout << "16 MiB from rank " << left << ": " << wrong << std::endl;
  if (r == 0) {
    std::cout << "isend/irecv: every rank sent 16 MiB right and received 16 MiB from the left"
              << std::endl;
  }
  return wrong.empty();
}

// 4. Rank 1 receives 8 elements into a buffer of 4: it must fail, naming both sizes. The
// error aborts rank 1's comm, so this comes last.
bool too_small_buffer(TcpComm& comm) {
  if (comm.rank() == 0) {
    course::p2p_send(comm, course::data_values(0, 8), 1, 9);
    return true;
  }
  if (comm.rank() != 1) return true;
  std::vector<float> small(4);
  try {
    course::p2p_recv(comm, small, 0, 9);
  } catch (const course::ProtocolError& e) {
    const std::string what = e.detail();
    const bool names_sizes = what.find("8 elements") != std::string::npos &&
                             what.find("4 elements") != std::string::npos;
    std::cout << "too small a buffer: " << what << std::endl;
    if (!names_sizes) std::cout << "the error should name both sizes (8 and 4 elements)\n";
    return names_sizes;
  }
  std::cout << "a receive of 4 elements accepted a message of 8: it must throw ProtocolError"
            << std::endl;
  return false;
}

course::Verdict run_rank(course::DriverContext& ctx) {
  if (ctx.world() < 2) return course::Verdict::fail("lesson 02 needs two ranks: --np 2");
  TcpComm comm(course::connect_full_mesh(ctx.store(), ctx.rank(), ctx.world(), course::job_token(),
                                         ctx.advertise_host()));
  if (ctx.args().bench) {
    const course::P2pBenchResult result = course::run_p2p_bench(comm, std::cout, g_bench);
    if (ctx.rank() == 0 && !g_csv.empty()) {
      result.table.write_csv(g_csv);
      std::cout << "wrote " << g_csv << std::endl;
    }
    if (ctx.rank() != 0) return course::Verdict::pass();
    return course::Verdict::pass(
        "benchmark: 8 B half round trip " + course::format_fixed(result.latency_ratio, 2) +
        "x raw; >= 1 MiB bandwidth " + course::format_fixed(100 * result.bandwidth_fraction, 1) +
        "% of raw");
  }
  std::vector<std::string> failed;
  if (!ping_pong(comm)) failed.push_back("ping-pong");
  if (!tagged_messages(comm)) failed.push_back("tagged messages");
  if (!ring_exchange(comm)) failed.push_back("isend/irecv exchange");
  if (!too_small_buffer(comm)) failed.push_back("too-small receive buffer");
  if (!failed.empty()) {
    std::string what;
    for (const std::string& f : failed) what += (what.empty() ? "" : ", ") + f;
    return course::Verdict::fail("wrong: " + what);
  }
  return course::Verdict::pass(
      "ping-pong 0 -> 1 -> 0 ends with 3; tags in order; 16 MiB "
      "isend/irecv ring; size mismatch named");
}

}  // namespace

int main(int argc, char** argv) {
  course::DriverConfig config;
  config.name = "lesson02";
  config.title = "point to point: send/recv with tags, isend/irecv and Work, the ping-pong";
  config.default_np = 2;
  config.has_bench = true;
  return course::run_driver(
      argc, argv, config,
      [](CLI::App& app) {
        app.add_option("--csv", g_csv, "with --bench: also write the table as CSV to this file");
        app.add_option("--min-bytes", g_bench.min_bytes, "with --bench: the smallest size (8)")
            ->check(CLI::Range(size_t(4), size_t(1) << 30));
        app.add_option("--max-bytes", g_bench.max_bytes, "with --bench: the largest size (64 MiB)")
            ->check(CLI::Range(size_t(4), size_t(1) << 30));
        app.add_option("--reps", g_bench.repetitions,
                       "with --bench: samples per size, median shown (11)")
            ->check(CLI::Range(1, 100));
      },
      run_rank);
}
