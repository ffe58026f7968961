// main.cpp: ./lesson04, reductions on the course's own tcp backend.
//
//   make lesson04 && ./lesson04 --np 4        (any N from 1 to 64)
//
// Every rank connects the full mesh (lesson 01), and runs your lesson 04 functions on
// inputs that depend on rank and index (collective_oracle.h: powers of two, so every
// result is exact), for counts 0, 1, N+1 and 100003 and every op (sum, prod, min, max,
// avg): reduce_binomial_tree to every root, all_reduce_naive, all_gather_naive,
// reduce_scatter_naive and all_to_all_direct, each checked against a serial oracle. Then
// the same calls go through the tcp ProcessGroup that your lessons 02-04 make up. The
// verdict is PASS only if every rank got every result right.
#include <iostream>
#include <vector>

#include "collective_oracle.h"
#include "driver.h"
#include "full_mesh.h"
#include "handshake.h"
#include "process_group_tcp.h"
#include "reductions.h"

namespace {

using course::ReduceOp;
using course::TcpComm;

const ReduceOp kOps[] = {ReduceOp::SUM, ReduceOp::PRODUCT, ReduceOp::MIN, ReduceOp::MAX,
                         ReduceOp::AVG};

struct Checker {
  std::vector<std::string> failures;
  void check(const std::string& call, std::span<const float> got, std::span<const float> want,
             float tol = 0.0f) {
    const std::string wrong = course::describe_wrong(got, want, tol);
    if (wrong.empty()) return;
    if (failures.size() < 5) std::cout << call << ": " << wrong << std::endl;
    failures.push_back(call);
  }
};

std::string describe(const char* name, size_t count, ReduceOp op) {
  return std::string(name) + " of " + std::to_string(count) + " (" + course::reduce_op_name(op) +
         ")";
}

void run_lesson_functions(TcpComm& comm, const std::vector<size_t>& counts, Checker& checker) {
  const int n = comm.size(), r = comm.rank();
  for (size_t count : counts) {
    for (ReduceOp op : kOps) {
      const float tol = course::tolerance(op);
      for (int root = 0; root < n; ++root) {
        std::vector<float> data = course::reduce_values(r, count);
        course::reduce_binomial_tree(comm, data, op, root);
        const std::vector<float> want =
            r == root ? course::expected_reduce(op, n, count) : course::reduce_values(r, count);
        checker.check(describe("reduce_binomial_tree", count, op) + " to root " +
                          std::to_string(root) + (r == root ? "" : " (left unchanged here)"),
                      data, want, tol);
      }
      std::vector<float> data = course::reduce_values(r, count);
      course::all_reduce_naive(comm, data, op);
      checker.check(describe("all_reduce_naive", count, op), data,
                    course::expected_reduce(op, n, count), tol);

      const std::vector<float> input = course::reduce_values(r, n * count);
      std::vector<float> block(count, -1.0f);
      course::reduce_scatter_naive(comm, input, block, op);
      checker.check(describe("reduce_scatter_naive", count, op) + " per rank", block,
                    course::expected_reduce_scatter(op, n, r, count), tol);
    }
    std::vector<float> gathered(n * count, -1.0f);
    course::all_gather_naive(comm, course::data_values(r, count), gathered);
    checker.check("all_gather_naive of " + std::to_string(count) + " per rank", gathered,
                  course::expected_gather(n, count));

    std::vector<float> exchanged(n * count, -1.0f);
    course::all_to_all_direct(comm, course::data_values(r, n * count), exchanged);
    checker.check("all_to_all_direct of " + std::to_string(count) + " per block", exchanged,
                  course::expected_all_to_all(n, r, count));
  }
}

// The same through the ProcessGroup interface: what lessons 09-11 will call.
void run_process_group(course::ProcessGroup& pg, Checker& checker) {
  const int n = pg.size(), r = pg.rank();
  const size_t count = 1000 + n;
  for (ReduceOp op : kOps) {
    std::vector<float> data = course::reduce_values(r, count);
    pg.all_reduce(data, op);
    checker.check(describe("ProcessGroup::all_reduce", count, op), data,
                  course::expected_reduce(op, n, count), course::tolerance(op));
  }
  std::vector<float> async = course::reduce_values(r, count);
  course::WorkPtr work = pg.all_reduce_async(async, ReduceOp::SUM);
  work->wait();
  checker.check(describe("ProcessGroup::all_reduce_async", count, ReduceOp::SUM), async,
                course::expected_reduce(ReduceOp::SUM, n, count));
}

course::Verdict run_rank(course::DriverContext& ctx) {
  const size_t n = static_cast<size_t>(ctx.world());
  const std::vector<size_t> counts{0, 1, n + 1, 100003};
  Checker checker;
  {
    TcpComm comm(course::connect_full_mesh(ctx.store(), ctx.rank(), ctx.world(),
                                           course::job_token(), ctx.advertise_host(), "mesh"));
    run_lesson_functions(comm, counts, checker);
  }
  course::TcpAlgorithms algorithms;
  course::install_lesson04(algorithms);
  if (ctx.rank() == 0) {
    std::cout << "tcp backend: all_reduce = " << algorithms.names["all_reduce"]
              << "; reduce = " << algorithms.names["reduce"] << std::endl;
  }
  course::TcpProcessGroup pg(
      course::connect_full_mesh(ctx.store(), ctx.rank(), ctx.world(), course::job_token(),
                                ctx.advertise_host(), "pg"),
      algorithms);
  run_process_group(pg, checker);
  if (!checker.failures.empty()) {
    return course::Verdict::fail(std::to_string(checker.failures.size()) +
                                 " wrong result(s) on rank " + std::to_string(ctx.rank()) +
                                 ", first: " + checker.failures.front());
  }
  return course::Verdict::pass(
      "reduce, all_reduce, all_gather, reduce_scatter, all_to_all match the oracle for every "
      "op, root and counts 0, 1, N+1, 100003");
}

}  // namespace

int main(int argc, char** argv) {
  course::DriverConfig config;
  config.name = "lesson04";
  config.title = "reductions: reduce, all_reduce (naive), all_gather, reduce_scatter, all_to_all";
  config.default_np = 4;
  return course::run_driver(argc, argv, config, nullptr, run_rank);
}
