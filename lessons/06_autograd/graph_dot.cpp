// graph_dot.cpp: lesson 06, graph pictures (given; see graph_dot.h).
#include "graph_dot.h"

#include <sstream>
#include <typeinfo>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "node.h"

namespace course {
namespace {

std::string label_of(const Node& node) {
  if (const auto* acc = dynamic_cast<const AccumulateGrad*>(&node)) {
    const Variable leaf = acc->variable();
    const std::string name = leaf.name().empty() ? "leaf" : leaf.name();
    return name + " " + shape_str(leaf.shape());
  }
  return node.name();
}

void print_tree(const Node& node, int depth, std::unordered_set<const Node*>& printed,
                std::ostringstream& out) {
  out << std::string(static_cast<size_t>(depth) * 2, ' ');
  if (!printed.insert(&node).second) {
    out << "(again) " << label_of(node) << "\n";
    return;
  }
  out << label_of(node) << "\n";
  for (const auto& next : node.next_functions()) {
    if (next) print_tree(*next, depth + 1, printed, out);
  }
}

}  // namespace

std::string graph_to_dot(const Variable& root) {
  std::ostringstream out;
  out << "digraph backward {\n"
      << "  node [shape=box, style=filled, fontname=\"Helvetica\", fillcolor=lightgrey];\n";
  if (!root.grad_fn() && !(root.is_leaf() && root.requires_grad())) return out.str() + "}\n";
  const std::shared_ptr<Node> start = gradient_edge(root);
  std::unordered_map<const Node*, int> ids;
  std::vector<const Node*> stack{start.get()};
  ids[start.get()] = 0;
  std::ostringstream edges;
  while (!stack.empty()) {
    const Node* node = stack.back();
    stack.pop_back();
    const Node& n = *node;
    const int id = ids[node];
    const bool leaf = typeid(n) == typeid(AccumulateGrad);  // a final class
    out << "  n" << id << " [label=\"" << label_of(n) << "\"";
    if (node == start.get()) {
      out << ", fillcolor=darkolivegreen1";
    } else if (leaf) {
      out << ", shape=ellipse, fillcolor=lightblue";
    }
    out << "];\n";
    for (const auto& next : node->next_functions()) {
      if (!next) continue;
      auto [it, fresh] = ids.emplace(next.get(), static_cast<int>(ids.size()));
      if (fresh) stack.push_back(next.get());
      edges << "  n" << id << " -> n" << it->second << ";\n";
    }
  }
  out << edges.str() << "}\n";
  return out.str();
}

std::string graph_to_text(const Variable& root) {
  if (!root.grad_fn() && !(root.is_leaf() && root.requires_grad())) {
    return "(no graph: the variable does not require grad)\n";
  }
  std::ostringstream out;
  std::unordered_set<const Node*> printed;
  print_tree(*gradient_edge(root), 0, printed, out);
  return out.str();
}

}  // namespace course
