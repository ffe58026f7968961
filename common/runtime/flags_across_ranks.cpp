// flags_across_ranks.cpp: see flags_across_ranks.h.
#include "flags_across_ranks.h"

#include <set>

#include "error.h"

namespace course {
namespace {

// "<length>:<text>" per name and per value, so a value may hold any byte.
std::string encode(const std::vector<std::pair<std::string, std::string>>& flags) {
  std::string out;
  for (const auto& [name, value] : flags) {
    out += std::to_string(name.size()) + ":" + name + std::to_string(value.size()) + ":" + value;
  }
  return out;
}

FlagValues decode(const std::string& text, int rank) {
  FlagValues flags;
  size_t at = 0;
  const auto next = [&]() {
    const size_t colon = text.find(':', at);
    if (colon == std::string::npos) {
      throw ProtocolError("the flags rank " + std::to_string(rank) + " published do not parse");
    }
    const size_t n = std::stoul(text.substr(at, colon - at));
    if (colon + 1 + n > text.size()) {
      throw ProtocolError("the flags rank " + std::to_string(rank) + " published are cut short");
    }
    at = colon + 1 + n;
    return text.substr(colon + 1, n);
  };
  while (at < text.size()) {
    std::string name = next();
    flags[name] = next();
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

std::string flag_differences(const std::vector<FlagValues>& by_rank) {
  std::set<std::string> names;
  for (const FlagValues& flags : by_rank) {
    for (const auto& [name, value] : flags) names.insert(name);
  }
  std::string differs;
  for (const std::string& name : names) {
    std::map<std::string, std::set<int>> by_value;  // value -> its ranks
    for (size_t r = 0; r < by_rank.size(); ++r) {
      const auto it = by_rank[r].find(name);
      by_value[it == by_rank[r].end() ? "(absent)" : it->second].insert(static_cast<int>(r));
    }
    if (by_value.size() == 1) continue;
    differs += (differs.empty() ? "" : "; ") + name + " differs across ranks:";
    std::string sep = " ";
    for (const auto& [value, ranks] : by_value) {
      differs += sep + (value.empty() ? "\"\"" : value) + " on " + join_ranks(ranks);
      sep = " vs ";
    }
  }
  return differs.empty() ? "" : differs + ". Start every rank with the same flags";
}

std::string flag_disagreement(StoreClient& store, int rank, int world,
                              const std::vector<std::pair<std::string, std::string>>& flags,
                              Millis timeout) {
  if (world <= 1) return "";
  store.set("driver/flags/" + std::to_string(rank), encode(flags));
  std::vector<FlagValues> by_rank(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) {
    std::string text;
    try {
      text = store.get("driver/flags/" + std::to_string(r), timeout);
    } catch (const TimeoutError&) {
      throw TimeoutError("rank " + std::to_string(r) + " did not publish its flags within " +
                         std::to_string(timeout.count() / 1000) +
                         " s: it is not started, stopped, or stuck before the flag check");
    }
    by_rank[static_cast<size_t>(r)] = decode(text, r);
  }
  return flag_differences(by_rank);
}

}  // namespace course
