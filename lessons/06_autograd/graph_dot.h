// graph_dot.h: lesson 06, pictures of the backward graph (given).
//
//   std::cout << graph_to_text(loss);            // an indented tree, in the terminal
//   write_file("graph.dot", graph_to_dot(loss)); // then: dot -Tsvg graph.dot > graph.svg
//
// Both walk the graph from the root's grad_fn along next_functions(), the direction in
// which gradients flow. Leaves appear as their AccumulateGrad node, labelled with the
// leaf's name (Variable::set_name) and shape. The dot output follows torchviz's colours:
// the root green, leaves blue, other nodes grey.
//
// What this is not: a forward-graph picture. Inputs that need no gradient (the data x)
// do not appear: the backward graph has no edge to them.
#pragma once

#include <string>

#include "variable.h"

namespace course {

/// Graphviz source for the backward graph of `root`.
std::string graph_to_dot(const Variable& root);

/// One line per node, children indented under the node they feed; a node reached a second
/// time (a diamond) is printed as "(again) Name".
std::string graph_to_text(const Variable& root);

}  // namespace course
