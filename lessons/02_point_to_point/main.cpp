// main.cpp: ./lesson02, messages between ranks.
//
//   make lesson02 && ./lesson02               (2 ranks; --np N for more)
//   ./lesson02 --bench                        latency and bandwidth next to the raw socket
//   ./lesson02 --bench --csv bench-results/lesson02.csv
//   ./lesson02 --bench --min-bytes 4096 --max-bytes 131072 --reps 9
//
// With --backend tcp (the default) every rank connects the full mesh (lesson 01) and runs
// your point_to_point.cpp; with --backend gloo the same checks call send/recv/isend/irecv
// of a GlooProcessGroup instead, so you can compare (--bench is tcp only):
//   1. the seed's ping-pong between ranks 0 and 1: a tensor starts at 0, rank 0 adds 1
//      and sends it, rank 1 adds 2 and sends it back; rank 0 must end with 3;
//   2. tagged messages of several sizes (0 and 1 included) arriving in order;
//   3. every rank isends 32 MiB to the next rank, then irecvs 32 MiB from the previous
//      one (with blocking sends, or an isend that blocks, this deadlocks: see the README;
//      the socket timeout is 10 s here, so it fails in seconds, saying deadlock);
//   4. a receive into a buffer smaller than the message: it must fail, naming both sizes.
// The verdict is PASS only if every rank saw exactly what it should.
#include <CLI/CLI.hpp>
#include <functional>
#include <iostream>
#include <vector>

#include "collective_oracle.h"
#include "driver.h"
#include "full_mesh.h"
#include "handshake.h"
#include "p2p_bench.h"
#include "point_to_point.h"
#include "process_group_factory.h"

namespace {

using course::TcpComm;
using course::WorkPtr;

std::string g_csv;                // --csv
course::P2pBenchOptions g_bench;  // --min-bytes, --max-bytes, --reps

// The four calls under test: your lesson functions on a TcpComm, or a ProcessGroup's.
struct P2p {
  int rank = 0, size = 0;
  course::Millis timeout = course::default_timeout();
  std::function<void(std::span<const float>, int dst, int tag)> send;
  std::function<void(std::span<float>, int src, int tag)> recv;
  std::function<WorkPtr(std::span<const float>, int dst, int tag)> isend;
  std::function<WorkPtr(std::span<float>, int src, int tag)> irecv;
};

P2p lesson_p2p(TcpComm& comm) {
  return {comm.rank(),
          comm.size(),
          comm.timeout(),
          [&comm](auto data, int dst, int tag) { course::p2p_send(comm, data, dst, tag); },
          [&comm](auto data, int src, int tag) { course::p2p_recv(comm, data, src, tag); },
          [&comm](auto data, int dst, int tag) { return course::p2p_isend(comm, data, dst, tag); },
          [&comm](auto data, int src, int tag) { return course::p2p_irecv(comm, data, src, tag); }};
}

P2p group_p2p(course::ProcessGroup& pg) {
  return {pg.rank(),
          pg.size(),
          course::default_timeout(),
          [&pg](auto data, int dst, int tag) { pg.send(data, dst, tag); },
          [&pg](auto data, int src, int tag) { pg.recv(data, src, tag); },
          [&pg](auto data, int dst, int tag) { return pg.isend(data, dst, tag); },
          [&pg](auto data, int src, int tag) { return pg.irecv(data, src, tag); }};
}

// 1. The ping-pong, on ranks 0 and 1.
bool ping_pong(const P2p& p2p) {
  std::vector<float> tensor{0.0f};
  if (p2p.rank == 0) {
    tensor[0] += 1;
    p2p.send(tensor, 1, 0);
    p2p.recv(tensor, 1, 0);
    std::cout << "ping-pong: sent 1, got back " << tensor[0] << " (expected 3)" << std::endl;
    return tensor[0] == 3.0f;
  }
  if (p2p.rank == 1) {
    p2p.recv(tensor, 0, 0);
    const bool ok = tensor[0] == 1.0f;
    tensor[0] += 2;
    p2p.send(tensor, 0, 0);
    return ok;
  }
  return true;
}

// 2. Messages with different tags and sizes, matched in order, from rank 0 to rank 1.
bool tagged_messages(const P2p& p2p) {
  const std::vector<std::pair<int, size_t>> messages{{7, 5}, {8, 0}, {7, 1}, {42, 1000}};
  bool ok = true;
  for (size_t m = 0; m < messages.size(); ++m) {
    const auto [tag, count] = messages[m];
    if (p2p.rank == 0) {
      p2p.send(course::data_values(0, count, m), 1, tag);
    } else if (p2p.rank == 1) {
      std::vector<float> got(count, -1.0f);
      p2p.recv(got, 0, tag);
      const std::string wrong = course::describe_wrong(got, course::data_values(0, count, m));
      if (!wrong.empty()) {
        std::cout << "message " << m << " (tag " << tag << "): " << wrong << std::endl;
        ok = false;
      }
    }
  }
  return ok;
}

// 3. Everyone isends 32 MiB to the right, then irecvs 32 MiB from the left. 32 MiB is
// more than a socket buffers: an isend that sends on the calling thread before it returns
// never gets to the receive, and neither does its neighbour. The socket timeout (10 s
// here) turns that deadlock into an error that says so.
bool ring_exchange(const P2p& p2p) {
  const int n = p2p.size, r = p2p.rank;
  const int right = (r + 1) % n, left = (r + n - 1) % n;
  const size_t count = (32u << 20) / sizeof(float);
  const std::vector<float> mine = course::data_values(r, count);
  std::vector<float> theirs(count, -1.0f);
  try {
    course::WorkPtr send = p2p.isend(mine, right, 1);
    course::WorkPtr recv = p2p.irecv(theirs, left, 1);
    course::wait_all({send, recv}, p2p.timeout);
  } catch (const course::TimeoutError& e) {
    throw course::TimeoutError(
        "deadlock in the 32 MiB exchange on rank " + std::to_string(r) + " (isend to rank " +
        std::to_string(right) + ", then irecv from rank " + std::to_string(left) +
        "): 32 MiB do not fit in a socket's buffers, so an isend that sends before it "
        "returns waits for a receive its peer never reaches. p2p_isend must queue the send "
        "on the channel's thread and return at once. The error: " +
        e.detail());
  }
  const std::string wrong = course::describe_wrong(theirs, course::data_values(left, count));
  if (!wrong.empty()) std::cout << "32 MiB from rank " << left << ": " << wrong << std::endl;
  if (r == 0) {
    std::cout << "isend/irecv: every rank sent 32 MiB right and received 32 MiB from the left"
              << std::endl;
  }
  return wrong.empty();
}

// 4. Rank 1 receives 8 elements into a buffer of 4: it must fail, naming both sizes. The
// error aborts rank 1's comm, so this comes last.
bool too_small_buffer(const P2p& p2p) {
  if (p2p.rank == 0) {
    p2p.send(course::data_values(0, 8), 1, 9);
    return true;
  }
  if (p2p.rank != 1) return true;
  std::vector<float> small(4);
  try {
    p2p.recv(small, 0, 9);
  } catch (const course::ProtocolError& e) {
    const std::string& what = e.detail();
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

// `on` is "" for your lesson functions, " on gloo" for the Gloo group.
course::Verdict run_checks(const P2p& p2p, const std::string& on) {
  std::vector<std::string> failed;
  if (!ping_pong(p2p)) failed.push_back("ping-pong");
  if (!tagged_messages(p2p)) failed.push_back("tagged messages");
  if (!ring_exchange(p2p)) failed.push_back("isend/irecv exchange");
  if (!too_small_buffer(p2p)) failed.push_back("too-small receive buffer");
  if (!failed.empty()) {
    std::string what;
    for (const std::string& f : failed) what += (what.empty() ? "" : ", ") + f;
    return course::Verdict::fail("wrong" + on + ": " + what);
  }
  return course::Verdict::pass(
      "ping-pong 0 -> 1 -> 0 ends with 3; tags in order; 32 MiB isend/irecv ring; size "
      "mismatch named" +
      on);
}

course::Verdict run_bench(TcpComm& comm, course::DriverContext& ctx) {
  const course::P2pBenchResult result = course::run_p2p_bench(comm, std::cout, g_bench);
  if (ctx.rank() == 0 && !g_csv.empty()) {
    result.table.write_csv(g_csv);
    std::cout << "wrote " << g_csv << std::endl;
  }
  if (ctx.rank() != 0) return course::Verdict::pass();
  const std::string bandwidth = result.bandwidth_fraction > 0
                                    ? ">= 1 MiB bandwidth " +
                                          course::format_fixed(100 * result.bandwidth_fraction, 1) +
                                          "% of raw"
                                    : "no size >= 1 MiB measured (raise --max-bytes)";
  return course::Verdict::pass("benchmark: 8 B half round trip " +
                               course::format_fixed(result.latency_ratio, 2) + "x raw; " +
                               bandwidth);
}

course::Verdict run_rank(course::DriverContext& ctx) {
  if (ctx.world() < 2) return course::Verdict::fail("lesson 02 needs two ranks: --np 2");
  const std::string backend = ctx.args().backend;
  if (backend != "tcp") {
    if (ctx.args().bench) return course::Verdict::fail("--bench runs on the tcp backend only");
    course::GroupRecipe recipe;
    recipe.name = "lesson02";
    recipe.host = ctx.advertise_host();
    recipe.token = course::job_token();
    auto pg = course::make_process_group(backend, ctx.store(), ctx.rank(), ctx.world(), recipe);
    return run_checks(group_p2p(*pg), " on " + backend);
  }
  TcpComm comm(course::connect_full_mesh(ctx.store(), ctx.rank(), ctx.world(), course::job_token(),
                                         ctx.advertise_host()));
  if (ctx.args().bench) return run_bench(comm, ctx);
  // Every check moves 32 MiB at most: 10 s without progress is a deadlock, not slowness.
  comm.set_timeout(course::Millis(10'000));
  return run_checks(lesson_p2p(comm), "");
}

}  // namespace

int main(int argc, char** argv) {
  course::DriverConfig config;
  config.name = "lesson02";
  config.title = "point to point: send/recv with tags, isend/irecv and Work, the ping-pong";
  config.default_np = 2;
  config.backends = course::available_backends();
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
