// autograd_self_check.h: lesson 06, given: the three parts ./lesson06 runs on your
// autograd, each printing to standard output.
//
//   1. gradcheck_every_op: every op's backward formula against central differences
//      (gradcheck.h), on index-dependent inputs kept away from kinks and poles;
//   2. check_engine_cases: a diamond (one tensor used twice), one tensor feeding two
//      losses, accumulation over two backward calls, and hooks that fire once per
//      parameter in reverse order of use;
//   3. show_mlp_graph: the backward graph of a two-layer network, printed (graph_dot.h)
//      and written as Graphviz when asked.
//
// The first unwritten stub stops a part with a TODO (error.h). What this is not: the
// lesson's tests (make grade-lesson06), which check more shapes and cases.
#pragma once

#include <string>

namespace course {

/// Part 1: the number of ops whose backward is wrong (0: all match).
int gradcheck_every_op();

/// Part 2: the number of engine cases that went wrong (0: all right).
int check_engine_cases();

/// Part 3: prints the graph; with a non-empty `dot_path`, also writes it there as Graphviz.
void show_mlp_graph(const std::string& dot_path);

}  // namespace course
