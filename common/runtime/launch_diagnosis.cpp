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

namespace {
/// Every rank number `text` names: "rank 2", "ranks 1, 3".
std::set<int> ranks_named_in(const std::string& text) {
  std::set<int> named;
  for (size_t at = text.find("rank"); at != std::string::npos; at = text.find("rank", at + 1)) {
    if (at > 0 && std::isalpha(static_cast<unsigned char>(text[at - 1]))) continue;
    size_t k = at + 4;
    if (k < text.size() && text[k] == 's') ++k;  // "ranks 1, 3 are ..."
    while (k < text.size() && text[k] == ' ') {
      ++k;
      size_t end = k;
      int number = 0;
      while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end])) &&
             number < 1000000) {
        number = number * 10 + (text[end++] - '0');
      }
      if (end == k) break;
      named.insert(number);
      k = end;
      if (k + 1 < text.size() && text[k] == ',' && text[k + 1] == ' ') ++k;  // ", 3"
    }
  }
  return named;
}
}  // namespace

std::vector<int> ranks_named_by_report(const std::string& verdict) {
  const size_t begin = verdict.find("collective monitor:");
  if (begin == std::string::npos) return {};
  const std::set<int> named =
      ranks_named_in(verdict.substr(begin, verdict.find("The error here:", begin) - begin));
  return {named.begin(), named.end()};
}

namespace {
bool is_timeout(const std::string& verdict) {
  return verdict.find("timed out") != std::string::npos;
}

/// A failure of the rank's own: an error that is neither a consequence nor a report about
/// another rank, or a death by a signal.
bool is_own(const RankObservation& r) {
  return r.signal != 0 || (!is_collective_report(r.verdict) && !is_consequence(r.verdict));
}

/// The verdict with this rank's own number and process blanked: "FAIL rank 1 (pid 7 on a):
/// x" and "FAIL rank 0 (pid 6 on a): x" read alike.
std::string without_own_rank(const RankObservation& r) {
  const std::string mine = "rank " + std::to_string(r.rank);
  std::string out = r.verdict;
  for (size_t at = out.find("(pid "); at != std::string::npos; at = out.find("(pid ", at + 1)) {
    const size_t end = out.find(')', at);
    if (end == std::string::npos) break;
    out.erase(at, end + 1 - at);
  }
  for (size_t at = out.find(mine); at != std::string::npos; at = out.find(mine, at + 1)) {
    const size_t end = at + mine.size();
    if (end < out.size() && std::isdigit(static_cast<unsigned char>(out[end]))) continue;
    out.replace(at, mine.size(), "rank ?");
  }
  return out;
}

int earliest(const std::vector<RankObservation>& ranks, int a, int b) {
  return a < 0 || ranks[b].order < ranks[a].order ? b : a;
}

/// Among the ranks that failed alike with `cause` (itself when none did): the lowest; but
/// when they all printed the very same text (a problem agreed across ranks, "... element 0
/// on rank 2 ..." on every rank) and it names exactly one of them, that one, whose check
/// failed.
int lowest_alike(const std::vector<RankObservation>& ranks, int cause) {
  if (cause < 0 || ranks[cause].verdict.empty()) return cause;
  const std::string text = without_own_rank(ranks[cause]);
  int best = cause;
  bool verbatim = true;
  std::map<int, int> alike;  // rank -> index
  for (int i = 0; i < static_cast<int>(ranks.size()); ++i) {
    const bool same = ranks[i].verdict == ranks[cause].verdict;
    if (!ranks[i].failed || (!same && without_own_rank(ranks[i]) != text)) continue;
    verbatim = verbatim && same;
    alike[ranks[i].rank] = i;
    if (ranks[i].rank < ranks[best].rank) best = i;
  }
  if (verbatim && alike.size() > 1) {
    int named = -1;
    for (int r : ranks_named_in(ranks[cause].verdict)) {
      if (alike.count(r) == 0) continue;
      if (named >= 0) return best;  // two of them: no telling which
      named = alike[r];
    }
    if (named >= 0) return named;
  }
  return best;
}
}  // namespace

int pick_cause(const std::vector<RankObservation>& ranks) {
  int first = -1, blamed = -1, report = -1, own = -1;
  std::set<int> named;  // the ranks some report is about
  for (const RankObservation& r : ranks) {
    if (!r.failed || !is_collective_report(r.verdict)) continue;
    for (int n : ranks_named_by_report(r.verdict)) {
      if (n != r.rank) named.insert(n);
    }
  }
  for (int i = 0; i < static_cast<int>(ranks.size()); ++i) {
    const RankObservation& r = ranks[i];
    if (!r.failed) continue;
    first = earliest(ranks, first, i);
    if (is_collective_report(r.verdict)) {
      report = earliest(ranks, report, i);
    } else if (is_own(r)) {
      own = earliest(ranks, own, i);
      if (named.count(r.rank) != 0) blamed = earliest(ranks, blamed, i);
    }
  }
  if (first < 0) return -1;
  const RankObservation& f = ranks[first];
  int cause;
  if (!f.verdict.empty() && is_own(f) && !is_timeout(f.verdict)) {
    cause = first;  // 1.
  } else if (blamed >= 0) {
    cause = blamed;  // 2.
  } else if (report >= 0) {
    cause = report;  // 3.
  } else {
    cause = own >= 0 ? own : first;  // 4.
  }
  return lowest_alike(ranks, cause);  // 5.
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
