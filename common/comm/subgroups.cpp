// subgroups.cpp: see subgroups.h.
#include "subgroups.h"

#include <algorithm>
#include <map>
#include <utility>

#include "error.h"

namespace course {

std::string format_ranks(const std::vector<int>& ranks) {
  std::string out = "{";
  for (size_t i = 0; i < ranks.size(); ++i) out += (i ? "," : "") + std::to_string(ranks[i]);
  return out + "}";
}

Subgroups::Subgroups(StoreClient& store, int rank, int world, GroupMaker make, std::string prefix,
                     Millis timeout)
    : store_(store),
      rank_(rank),
      world_(world),
      make_(std::move(make)),
      prefix_(std::move(prefix)),
      timeout_(timeout) {
  if (world < 1 || rank < 0 || rank >= world) {
    throw ConfigError("Subgroups: rank " + std::to_string(rank) + " is not in a world of " +
                      std::to_string(world) + ": pass the world's rank and size");
  }
  if (!make_) {
    throw ConfigError(
        "Subgroups: no GroupMaker: pass group_maker(backend, recipe) "
        "(process_group_factory.h)");
  }
}

namespace {

// ConfigError unless `ranks` is a sorted list of distinct ranks of the world.
void check_members(const std::vector<int>& ranks, int world, const std::string& what) {
  std::string problem;
  if (ranks.empty()) problem = "it has no member";
  for (size_t i = 0; i < ranks.size() && problem.empty(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= world) {
      problem =
          "rank " + std::to_string(ranks[i]) + " is not in a world of " + std::to_string(world);
    } else if (i > 0 && ranks[i] <= ranks[i - 1]) {
      problem = ranks[i] == ranks[i - 1] ? "rank " + std::to_string(ranks[i]) + " is listed twice"
                                         : "the list is not sorted";
    }
  }
  if (!problem.empty()) {
    throw ConfigError(what + ": " + problem +
                      ": pass distinct world ranks in increasing order (group rank i is the "
                      "i-th smallest, as torch's new_group)");
  }
}

}  // namespace

std::shared_ptr<ProcessGroup> Subgroups::new_group(const std::vector<int>& ranks,
                                                   const std::string& name) {
  const int k = count_ + 1;
  const std::string label = name.empty() ? "group" + std::to_string(k) : name;
  const std::string what =
      "new_group #" + std::to_string(k) + " '" + label + "' " + format_ranks(ranks);
  check_members(ranks, world_, what);
  count_ = k;

  // The order check (subgroups.h): what this rank thinks group #k is, against every rank's.
  const std::string mine = "'" + label + "' ranks " + format_ranks(ranks);
  const std::string key = prefix_ + "/check/" + std::to_string(k) + "/";
  store_.set(key + std::to_string(rank_), mine);
  std::map<std::string, std::vector<int>> others;  // another description -> its ranks
  for (int r = 0; r < world_; ++r) {
    if (r == rank_) continue;
    std::string theirs;
    try {
      theirs = store_.get(key + std::to_string(r), timeout_);
    } catch (const TimeoutError& e) {
      throw TimeoutError(what + ": rank " + std::to_string(r) + " did not create group #" +
                         std::to_string(k) + " (" + e.detail() +
                         "): every rank of the world calls new_group for every group, members "
                         "or not, in the same order");
    }
    if (theirs != mine) others[theirs].push_back(r);
  }
  if (!others.empty()) {
    std::string differ;
    for (const auto& [desc, who_made] : others) {
      differ += "; " +
                (who_made.size() == 1 ? "rank " + std::to_string(who_made[0])
                                      : "ranks " + format_ranks(who_made)) +
                " made it as " + desc;
    }
    throw ConfigError(what + ": the ranks disagree on group #" + std::to_string(k) +
                      ": this rank made it as " + mine + differ +
                      ". Every rank of the world must call new_group for the same groups (same "
                      "ranks, same names) in the same order, members or not");
  }

  const auto it = std::ranges::find(ranks, rank_);
  if (it == ranks.end()) return nullptr;
  const int group_rank = static_cast<int>(it - ranks.begin());
  std::shared_ptr<ProcessGroup> group =
      make_(store_, group_rank, static_cast<int>(ranks.size()),
            prefix_ + "/" + std::to_string(k) + "-" + label, RankNames(ranks, label));
  return group;
}

}  // namespace course
