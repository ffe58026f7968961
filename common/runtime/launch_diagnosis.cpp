// launch_diagnosis.cpp: the cause among the failures, and the frozen rank (see
// launch_diagnosis.h).
#include "launch_diagnosis.h"

#include <cctype>
#include <map>
#include <set>

namespace course {

bool is_consequence(const std::string& verdict) {
  for (const char* mark : {"connection closed by", "closed the connection", "was reset",
                           "reset by peer", "Broken pipe", "stopped every rank"}) {
    if (verdict.find(mark) != std::string::npos) return true;
  }
  return false;
}

bool is_collective_report(const std::string& verdict) {
  return verdict.find("collective monitor:") != std::string::npos;
}

int pick_cause(const std::vector<RankObservation>& ranks) {
  int report = -1, own = -1, any = -1;
  for (int i = 0; i < static_cast<int>(ranks.size()); ++i) {
    const RankObservation& r = ranks[i];
    if (!r.failed) continue;
    if (any < 0 || r.order < ranks[any].order) any = i;
    if (is_collective_report(r.verdict) && (report < 0 || r.order < ranks[report].order)) {
      report = i;
    } else if (!is_consequence(r.verdict) && (own < 0 || r.order < ranks[own].order)) {
      own = i;
    }
  }
  return report >= 0 ? report : own >= 0 ? own : any;
}

namespace {
/// The peer a timeout message names ("timed out ... from rank 2" -> 2), or -1.
int waited_on_peer(const std::string& verdict) {
  const size_t t = verdict.find("timed out");
  if (t == std::string::npos) return -1;
  size_t best = std::string::npos, length = 0;
  for (const std::string word : {" from rank ", " to rank ", " for rank "}) {
    const size_t at = verdict.find(word, t);
    if (at < best) best = at, length = word.size();
  }
  if (best == std::string::npos) return -1;
  size_t end = best + length;
  int peer = 0;
  while (end < verdict.size() && std::isdigit(static_cast<unsigned char>(verdict[end])) &&
         peer < 1000000) {
    peer = peer * 10 + (verdict[end++] - '0');
  }
  return end > best + length ? peer : -1;
}

std::string join_ranks(const std::set<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return (ranks.size() == 1 ? "rank " : "ranks ") + out;
}
}  // namespace

std::string describe_frozen(const std::vector<RankObservation>& ranks) {
  std::set<int> stopped;
  for (const RankObservation& r : ranks) {
    if (r.stopped) stopped.insert(r.rank);
  }
  if (!stopped.empty()) {
    return "; " + join_ranks(stopped) + (stopped.size() == 1 ? " was" : " were") +
           " frozen (stopped by SIGSTOP or a debugger) and never answered";
  }
  // Timeout messages name the peer: "... from rank 2", "... to rank 2", "... for rank 2".
  std::map<int, std::set<int>> waiters;  // silent rank -> the ranks that timed out on it
  std::set<int> ended;
  for (const RankObservation& r : ranks) {
    if (r.ended_on_its_own) ended.insert(r.rank);
  }
  for (const RankObservation& r : ranks) {
    const int peer = r.failed ? waited_on_peer(r.verdict) : -1;
    if (peer >= 0 && peer != r.rank && ended.count(peer) == 0) waiters[peer].insert(r.rank);
  }
  std::string out;
  for (const auto& [peer, who] : waiters) {
    out += "; rank " + std::to_string(peer) + " never answered: " + join_ranks(who) +
           " timed out waiting for it";
  }
  return out;
}

}  // namespace course
