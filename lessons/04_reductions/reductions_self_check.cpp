// reductions_self_check.cpp: lesson 04, given: the driver's checks (see the header).
#include "reductions_self_check.h"

#include <iostream>
#include <vector>

#include "collective_oracle.h"
#include "full_mesh.h"
#include "handshake.h"
#include "reductions.h"

namespace course {

Reductions lesson_reductions(TcpComm& comm) {
  return {comm.rank(),
          comm.size(),
          "",
          "reduce_binomial_tree",
          "all_reduce_naive",
          "reduce_scatter_naive",
          "all_gather_naive",
          "all_to_all_direct",
          [&comm](auto data, ReduceOp op, int root) { reduce_binomial_tree(comm, data, op, root); },
          true,
          [&comm](auto data, ReduceOp op) { all_reduce_naive(comm, data, op); },
          [&comm](auto in, auto out, ReduceOp op) { reduce_scatter_naive(comm, in, out, op); },
          [&comm](auto in, auto out) { all_gather_naive(comm, in, out); },
          [&comm](auto in, auto out) { all_to_all_direct(comm, in, out); }};
}

Reductions group_reductions(ProcessGroup& pg) {
  return {pg.rank(),
          pg.size(),
          "ProcessGroup::",
          "reduce",
          "all_reduce",
          "reduce_scatter",
          "all_gather",
          "all_to_all",
          [&pg](auto data, ReduceOp op, int root) { pg.reduce(data, op, root); },
          false,  // the contract leaves non-roots' data unspecified
          [&pg](auto data, ReduceOp op) { pg.all_reduce(data, op); },
          [&pg](auto in, auto out, ReduceOp op) { pg.reduce_scatter(in, out, op); },
          [&pg](auto in, auto out) { pg.all_gather(in, out); },
          [&pg](auto in, auto out) { pg.all_to_all(in, out); }};
}

void check_reductions(const Reductions& ops, const std::vector<size_t>& counts,
                      ResultChecker& checker) {
  const int n = ops.size, r = ops.rank;
  const std::string& p = ops.prefix;
  for (size_t count : counts) {
    for (ReduceOp op : all_reduce_ops()) {
      const float tol = tolerance(op);
      for (int root = 0; root < n; ++root) {
        std::vector<float> data = reduce_values(r, count);
        ops.reduce(data, op, root);
        if (r != root && !ops.reduce_keeps_non_root) continue;
        const std::vector<float> want =
            r == root ? expected_reduce(op, n, count) : reduce_values(r, count);
        checker.check(reduce_call_name(p + ops.reduce_name, count, op) + " to root " +
                          std::to_string(root) + (r == root ? "" : " (left unchanged here)"),
                      data, want, tol);
      }
      std::vector<float> data = reduce_values(r, count);
      ops.all_reduce(data, op);
      checker.check(reduce_call_name(p + ops.all_reduce_name, count, op), data,
                    expected_reduce(op, n, count), tol);

      const std::vector<float> input = reduce_values(r, n * count);
      std::vector<float> block(count, -1.0f);
      ops.reduce_scatter(input, block, op);
      checker.check(reduce_call_name(p + ops.reduce_scatter_name, count, op) + " per rank", block,
                    expected_reduce_scatter(op, n, r, count), tol);
    }
    std::vector<float> gathered(n * count, -1.0f);
    ops.all_gather(data_values(r, count), gathered);
    checker.check(p + ops.all_gather_name + " of " + std::to_string(count) + " per rank", gathered,
                  expected_gather(n, count));

    std::vector<float> exchanged(n * count, -1.0f);
    ops.all_to_all(data_values(r, n * count), exchanged);
    checker.check(p + ops.all_to_all_name + " of " + std::to_string(count) + " per block",
                  exchanged, expected_all_to_all(n, r, count));
  }
}

// The same through the ProcessGroup interface: what lessons 09-11 will call.
void check_process_group(ProcessGroup& pg, ResultChecker& checker) {
  const int n = pg.size(), r = pg.rank();
  const size_t count = 1000 + n;
  for (ReduceOp op : all_reduce_ops()) {
    std::vector<float> data = reduce_values(r, count);
    pg.all_reduce(data, op);
    checker.check(reduce_call_name("ProcessGroup::all_reduce", count, op), data,
                  expected_reduce(op, n, count), tolerance(op));
  }
  std::vector<float> async = reduce_values(r, count);
  WorkPtr work = pg.all_reduce_async(async, ReduceOp::SUM);
  work->wait();
  checker.check(reduce_call_name("ProcessGroup::all_reduce_async", count, ReduceOp::SUM), async,
                expected_reduce(ReduceOp::SUM, n, count));
}

// Messages larger than a socket buffers, on a mesh of their own (fresh sockets start with
// small buffers) with a 10 s socket timeout: an all-reduce of 32 MiB and an all-to-all of
// 16 MiB per block. Ranks that all send before they receive deadlock here and fail in
// seconds, saying so, instead of passing because every small message fit in the kernel.
// 2 to 8 ranks. Returns the deadlock's description, or "" when the calls returned.
std::string check_large_messages(DriverContext& ctx, ResultChecker& checker) {
  const int n = ctx.world(), r = ctx.rank();
  if (n < 2 || n > 8) return "";
  TcpComm comm(connect_full_mesh(ctx.store(), r, n, job_token(), ctx.advertise_host(), "large"),
               Millis(10'000));
  const Reductions ops = lesson_reductions(comm);
  std::string call;
  try {
    const size_t count = size_t{8} << 20;
    call = ops.all_reduce_name + " of 32 MiB (sum)";
    std::vector<float> data = reduce_values(r, count);
    ops.all_reduce(data, ReduceOp::SUM);
    checker.check(call, data, expected_reduce(ReduceOp::SUM, n, count));
    const size_t k = size_t{4} << 20;
    call = ops.all_to_all_name + " of 16 MiB per block";
    std::vector<float> output(n * k, -1.0f);
    ops.all_to_all(data_values(r, n * k), output);
    checker.check(call, output, expected_all_to_all(n, r, k));
  } catch (const TimeoutError& e) {
    return "deadlock in " + call + " on rank " + std::to_string(r) +
           ": nothing moved for 10 s with messages larger than a socket buffers; ranks that "
           "all send before they receive wait for each other forever (post the receives "
           "first, or isend). The error: " +
           e.detail();
  }
  if (r == 0) {
    std::cout << "all_reduce_naive of 32 MiB and all_to_all_direct of 16 MiB per block "
              << "(more than a socket buffers) checked" << std::endl;
  }
  return "";
}

}  // namespace course
