// saved_tensors.cpp: lesson 17, given: the saved-tensor ledger (saved_tensors.h).
#include "saved_tensors.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <utility>

#include "node.h"

namespace course {

int64_t SavedTensorLedger::bytes_of(const std::string& node) const {
  for (const SavedTensorRow& row : by_node) {
    if (row.node == node) return row.bytes;
  }
  return 0;
}

std::string SavedTensorLedger::describe() const {
  std::ostringstream out;
  char line[160];
  std::snprintf(line, sizeof(line), "%-28s %6s %8s %14s %10s\n", "node", "count", "tensors",
                "bytes", "MiB");
  out << line;
  for (const SavedTensorRow& row : by_node) {
    std::snprintf(line, sizeof(line), "%-28s %6lld %8lld %14lld %10.3f\n", row.node.c_str(),
                  static_cast<long long>(row.count), static_cast<long long>(row.tensors),
                  static_cast<long long>(row.bytes), static_cast<double>(row.bytes) / (1 << 20));
    out << line;
  }
  std::snprintf(line, sizeof(line), "%-28s %6lld %8s %14lld %10.3f\n", "total",
                static_cast<long long>(nodes), "", static_cast<long long>(total_bytes),
                static_cast<double>(total_bytes) / (1 << 20));
  out << line;
  return out.str();
}

SavedTensorLedger saved_tensor_ledger(const Variable& root, const std::vector<Tensor>& exclude,
                                      int64_t element_bytes) {
  SavedTensorLedger ledger;
  if (!root.defined() || !root.grad_fn()) return ledger;
  std::map<std::string, SavedTensorRow> rows;
  std::set<const Node*> visited;
  std::set<std::pair<const float*, int64_t>> counted;  // (first element, numel) of each range
  for (const Tensor& t : exclude) {
    if (t.defined()) counted.insert({t.raw(), t.numel()});
  }
  std::vector<const Node*> stack = {root.grad_fn().get()};
  visited.insert(stack.back());
  while (!stack.empty()) {
    const Node* node = stack.back();
    stack.pop_back();
    ++ledger.nodes;
    SavedTensorRow& row = rows[node->name()];
    row.node = node->name();
    ++row.count;
    for (const Tensor& t : node->saved_tensors()) {
      if (!t.defined()) continue;
      if (!counted.insert({t.raw(), t.numel()}).second) continue;
      ++row.tensors;
      row.bytes += t.numel() * element_bytes;
    }
    for (const std::shared_ptr<Node>& next : node->next_functions()) {
      if (next && visited.insert(next.get()).second) stack.push_back(next.get());
    }
  }
  for (auto& [name, row] : rows) {
    ledger.total_bytes += row.bytes;
    ledger.by_node.push_back(std::move(row));
  }
  std::stable_sort(
      ledger.by_node.begin(), ledger.by_node.end(),
      [](const SavedTensorRow& a, const SavedTensorRow& b) { return a.bytes > b.bytes; });
  return ledger;
}

}  // namespace course
