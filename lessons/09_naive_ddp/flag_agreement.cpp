// flag_agreement.cpp: see flag_agreement.h.
#include "flag_agreement.h"

#include <set>
#include <sstream>
#include <vector>

#include "error.h"

namespace course {
namespace {

// "flag\tvalue\n" per flag; strings travel as one float per byte (exact: 0..255).
std::string encode(const std::map<std::string, std::string>& flags) {
  std::string text;
  for (const auto& [flag, value] : flags) text += flag + "\t" + value + "\n";
  return text;
}

std::map<std::string, std::string> decode(const std::string& text) {
  std::map<std::string, std::string> flags;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t tab = line.find('\t');
    if (tab != std::string::npos) flags[line.substr(0, tab)] = line.substr(tab + 1);
  }
  return flags;
}

std::string join_ranks(const std::set<int>& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  bool first = true;
  for (int r : ranks) out += (first ? "" : ", ") + std::to_string(r), first = false;
  return out;
}

}  // namespace

void check_same_flags(const std::map<std::string, std::string>& flags, ProcessGroup& pg) {
  const int world = pg.size();
  if (world == 1) return;
  std::vector<std::map<std::string, std::string>> all(static_cast<size_t>(world));
  const std::string mine = encode(flags);
  for (int root = 0; root < world; ++root) {
    std::vector<float> length{root == pg.rank() ? static_cast<float>(mine.size()) : 0.0f};
    pg.broadcast(length, root);
    std::vector<float> text(static_cast<size_t>(length[0]));
    if (root == pg.rank()) text.assign(mine.begin(), mine.end());
    pg.broadcast(text, root);
    std::string s(text.size(), '\0');
    for (size_t i = 0; i < text.size(); ++i) {
      s[i] = static_cast<char>(static_cast<unsigned char>(text[i]));
    }
    all[static_cast<size_t>(root)] = decode(s);
  }
  std::set<std::string> names;
  for (const auto& f : all) {
    for (const auto& [flag, value] : f) names.insert(flag);
  }
  std::string differs;
  for (const std::string& flag : names) {
    std::map<std::string, std::set<int>> by_value;  // value -> its ranks
    for (int r = 0; r < world; ++r) {
      const auto it = all[static_cast<size_t>(r)].find(flag);
      by_value[it == all[static_cast<size_t>(r)].end() ? "(absent)" : it->second].insert(r);
    }
    if (by_value.size() == 1) continue;
    differs += (differs.empty() ? "" : "; ") + flag + " differs across ranks:";
    std::string sep = " ";
    for (const auto& [value, ranks] : by_value) {
      differs += sep + value + " on " + join_ranks(ranks);
      sep = " vs ";
    }
  }
  if (!differs.empty()) {
    throw ConfigError(differs + ". Start every rank with the same flags");
  }
}

}  // namespace course
