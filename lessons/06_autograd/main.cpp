// main.cpp: ./lesson06, a mini autograd checked against calculus.
//
//   make lesson06 && ./lesson06                 # your code
//   ./lesson06 --dot graph.dot && dot -Tsvg graph.dot > graph.svg
//
// Three parts, each on the learner's code (autograd_self_check.h):
//   1. every op's backward formula against central differences (gradcheck.h);
//   2. the engine: a diamond, one tensor feeding two losses, accumulation over two
//      backward calls, and hooks that fire once per parameter in reverse order of use;
//   3. the backward graph of a two-layer network, printed (and written as Graphviz).
// PASS when every check holds. The first unwritten stub stops the run with a TODO line.
#include <string>

#include "autograd_self_check.h"
#include "driver.h"
#include "flags.h"

int main(int argc, char** argv) {
  course::DriverConfig config;
  config.name = "lesson06";
  config.title = "autograd: a tensor that records its graph, and backward by the chain rule";
  config.distributed = false;
  std::string dot_path;
  return course::run_driver(
      argc, argv, config,
      [&](course::Flags& flags) {
        flags.option("--dot", dot_path, "write the two-layer network's backward graph (Graphviz)")
            .check(course::writable(course::OutputPath::kFile));
      },
      [&](course::DriverContext&) {
        const int op_failures = course::gradcheck_every_op();
        const int engine_failures = course::check_engine_cases();
        course::show_mlp_graph(dot_path);
        if (op_failures + engine_failures > 0) {
          return course::Verdict::fail(std::to_string(op_failures) + " op(s) and " +
                                       std::to_string(engine_failures) +
                                       " engine check(s) wrong (see above)");
        }
        return course::Verdict::pass(
            "19 backward formulas match central differences; diamond, two losses, "
            "accumulation and hook order are right");
      });
}
