// transport_self_check.cpp: lesson 12, given: the driver's check (see the header).
#include "transport_self_check.h"

#include <cstdint>
#include <iostream>
#include <vector>

#include "channel_self_check.h"
#include "collective_oracle.h"
#include "process_group_factory.h"
#include "process_group_tcp.h"
#include "result_checks.h"
#include "shm_transport.h"

namespace course {
namespace {

// The byte of message `index` at offset i from rank `from` to rank `to`.
uint8_t stream_byte(int from, int to, size_t index, size_t i) {
  return static_cast<uint8_t>(
      (i * 131 + index * 7 + static_cast<size_t>(from) * 31 + static_cast<size_t>(to) * 17) >> 1);
}

// Every pair streams messages of many sizes both ways at once over its stream.
void check_streams(TcpComm& comm, std::vector<std::string>& failures) {
  const std::vector<size_t> sizes = {
      0, 1, 7, 4096, (256u << 10) - 1, 256u << 10, (256u << 10) + 1, (3u << 20) + 5};
  const int me = comm.rank();
  for (int peer = 0; peer < comm.size(); ++peer) {
    if (peer == me) continue;
    ByteStream& stream = comm.stream(peer);
    // The lower rank sends first on its sender thread; both receive on this thread.
    WorkPtr sends = comm.send_channel(peer).submit(
        [&stream, &sizes, me, peer, timeout = comm.timeout()] {
          for (size_t index = 0; index < sizes.size(); ++index) {
            std::vector<uint8_t> out(sizes[index]);
            for (size_t i = 0; i < out.size(); ++i) out[i] = stream_byte(me, peer, index, i);
            stream.send_all(out.data(), out.size(), timeout);
          }
        },
        "stream check to rank " + std::to_string(peer));
    for (size_t index = 0; index < sizes.size(); ++index) {
      std::vector<uint8_t> in(sizes[index]);
      stream.recv_all(in.data(), in.size(), comm.timeout());
      for (size_t i = 0; i < in.size(); ++i) {
        if (in[i] != stream_byte(peer, me, index, i)) {
          failures.push_back("byte " + std::to_string(i) + " of message " + std::to_string(index) +
                             " (" + std::to_string(in.size()) + " bytes) from rank " +
                             std::to_string(peer) + " is wrong");
          break;
        }
      }
    }
    sends->wait(comm.timeout());
  }
}

}  // namespace

Verdict run_transport_check(DriverContext& ctx, const std::string& transport) {
  const int world = ctx.world();
  const int rank = ctx.rank();
  // First your channel alone, full and empty (channel_self_check.h).
  const std::string wrong = self_check_shm_channel();
  if (!wrong.empty()) return Verdict::fail("self-check: " + wrong);
  auto pg = make_process_group("tcp", ctx.store(), rank, world,
                               shm_driver_recipe(ctx, "lesson12", transport));
  auto& comm = static_cast<TcpProcessGroup&>(*pg).comm();
  if (rank == 0) {
    std::string kinds;
    if (world > 1) kinds = comm.stream(1).kind();
    std::cout << "transport " << transport << " (rank 0 to rank 1: " << kinds << "), " << world
              << " rank(s), " << available_cores() << " core(s)" << std::endl;
  }
  ResultHash hash;
  ResultChecker checker;
  std::vector<std::string>& failures = checker.failures;

  check_streams(comm, failures);
  if (rank == 0) std::cout << "streams: every byte of 8 message sizes, both ways" << std::endl;

  std::vector<size_t> counts = collective_counts(world);
  counts.push_back((size_t{1} << 20) + 3);
  for (size_t count : counts) {
    for (ReduceOp op : all_reduce_ops()) {
      std::vector<float> data = reduce_values(rank, count);
      pg->all_reduce(data, op);
      hash.add(data);
      checker.check(reduce_call_name("all_reduce", count, op), data,
                    expected_reduce(op, world, count), tolerance(op));
    }
    std::vector<float> data = data_values(rank, count);
    pg->broadcast(data, 0);
    checker.check("broadcast of " + std::to_string(count), data, expected_broadcast(0, count));
    std::vector<float> all(count * static_cast<size_t>(world));
    pg->all_gather(data_values(rank, count), all);
    checker.check("all_gather of " + std::to_string(count), all, expected_gather(world, count));
    hash.add(all);
  }
  pg->barrier();
  if (rank == 0) {
    std::cout << "all_reduce (5 ops), broadcast, all_gather of " << counts.size()
              << " counts checked" << std::endl;
  }

  ctx.store().set("lesson12/hash/" + std::to_string(rank), std::to_string(hash.value()));
  for (int r = 0; r < world; ++r) {
    if (ctx.store().get("lesson12/hash/" + std::to_string(r)) != std::to_string(hash.value())) {
      failures.push_back("results differ between rank " + std::to_string(r) + " and rank " +
                         std::to_string(rank));
    }
  }
  if (!failures.empty()) {
    return Verdict::fail(std::to_string(failures.size()) + " problem(s) on rank " +
                         std::to_string(rank) + ", first: " + failures.front());
  }
  return Verdict::pass("every byte in order over " + transport +
                       ", collectives match the oracle, identical on every rank");
}

}  // namespace course
