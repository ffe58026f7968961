// collective_monitor.cpp: see collective_monitor.h.
#include "collective_monitor.h"

#include <chrono>
#include <cstdlib>
#include <map>
#include <vector>

#include "error.h"

namespace course {
namespace {

/// The monitor's store requests wait at most this long for a reply: a frozen store host
/// must not stall the diagnosis much past its grace.
constexpr Millis kMonitorStoreIo{3000};

std::string join_ranks(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return (ranks.size() == 1 ? "rank " : "ranks ") + out;
}

/// "57 all_reduce" -> {57, "all_reduce"}; {0, ""} when malformed.
std::pair<uint64_t, std::string> parse_report(const std::string& value) {
  const size_t space = value.find(' ');
  if (space == std::string::npos) return {0, ""};
  try {
    return {std::stoull(value.substr(0, space)), value.substr(space + 1)};
  } catch (const std::exception&) {
    return {0, ""};
  }
}

std::string collective_name(uint64_t seq, const std::string& op) {
  return "collective " + std::to_string(seq) + " (" + op + ")";
}

/// Throws an error of the in-flight exception's course type with `message`.
[[noreturn]] void rethrow_as_same_type(const std::string& message) {
  try {
    throw;
  } catch (const TimeoutError&) {
    throw TimeoutError(message);
  } catch (const PeerClosedError&) {
    throw PeerClosedError(message);
  } catch (const NetworkError&) {
    throw NetworkError(message);
  } catch (const ProtocolError&) {
    throw ProtocolError(message);
  } catch (const ConfigError&) {
    throw ConfigError(message);
  } catch (const SystemError&) {
    throw SystemError(message);
  } catch (const std::exception&) {
    throw SystemError(message);
  }
}

}  // namespace

bool debug_desync_enabled() {
  const char* value = std::getenv("COURSE_DEBUG_DESYNC");
  return value != nullptr && std::string(value) == "1";
}

CollectiveMonitor::CollectiveMonitor(std::unique_ptr<StoreClient> store, std::string group,
                                     int rank, int world, Millis grace, bool record_entries)
    : store_(std::move(store)),
      group_(std::move(group)),
      rank_(rank),
      world_(world),
      grace_(grace),
      record_entries_(record_entries) {
  if (store_) store_->set_io_timeout(kMonitorStoreIo);
}

std::unique_ptr<CollectiveMonitor> CollectiveMonitor::for_group(StoreClient& store,
                                                                const std::string& group,
                                                                int rank, int world) {
  return std::make_unique<CollectiveMonitor>(store.connect_another(), group, rank, world,
                                             kCollectiveMonitorGrace, debug_desync_enabled());
}

std::string CollectiveMonitor::key(const char* kind, int rank) const {
  return "monitor/" + group_ + "/" + kind + "/" + std::to_string(rank);
}

uint64_t CollectiveMonitor::enter(const std::string& op) {
  const uint64_t seq = entered_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (record_entries_ && store_) {
    std::lock_guard<std::mutex> lock(store_mu_);
    try {
      store_->set(key("entered", rank_), std::to_string(seq) + " " + op);
    } catch (const Error&) {
      // The store is gone: the collective itself will fail and say why.
    }
  }
  return seq;
}

std::string CollectiveMonitor::report_failure(uint64_t seq, const std::string& op,
                                              const std::string& error) {
  if (!store_ || world_ <= 1) return "";
  using Clock = std::chrono::steady_clock;
  const std::string here = collective_name(seq, op);
  std::lock_guard<std::mutex> lock(store_mu_);
  std::map<int, std::pair<uint64_t, std::string>> reports;  // rank -> its failed collective
  std::vector<int> silent;
  try {
    store_->set(key("failed", rank_), std::to_string(seq) + " " + op);
    const auto end = Clock::now() + grace_;
    for (int r = 0; r < world_; ++r) {
      if (r == rank_) continue;
      const Millis left = std::max(Millis(0), std::chrono::ceil<Millis>(end - Clock::now()));
      try {
        reports[r] = parse_report(store_->get(key("failed", r), left));
      } catch (const TimeoutError&) {
        silent.push_back(r);
      }
    }
  } catch (const Error& e) {
    // No answer from the store, which rank 0 hosts: it is the likely frozen one.
    return "collective monitor: " + here + " failed here, and the store did not answer (" +
           e.detail() + "): rank 0, which hosts it, is likely stopped, stuck or dead. The error " +
           "here: " + error;
  }

  std::vector<int> behind, desync, same;
  for (const auto& [r, report] : reports) {
    if (report.first < seq) {
      behind.push_back(r);
    } else if (report.first == seq && report.second != op) {
      desync.push_back(r);
    } else {
      same.push_back(r);
    }
  }
  if (silent.empty() && behind.empty() && desync.empty()) return "";

  std::string out = "collective monitor: " + here + " failed here";
  if (!silent.empty()) {
    out += "; " + join_ranks(silent) + (silent.size() == 1 ? " has" : " have") +
           " not reached it or " + (silent.size() == 1 ? "is" : "are") +
           " stuck in it: no report within " + std::to_string(grace_.count()) +
           " ms (stopped, busy outside the collectives, or dead)";
    if (record_entries_) {
      for (int r : silent) {
        try {
          const Millis none(0);
          const auto [k, what] = parse_report(store_->get(key("entered", r), none));
          out += k == seq ? "; rank " + std::to_string(r) + " entered " +
                                collective_name(k, what) + " and never came back"
                          : "; rank " + std::to_string(r) + "'s last collective was " +
                                collective_name(k, what);
        } catch (const Error&) {
          out += "; rank " + std::to_string(r) + " entered no collective";
        }
      }
    }
  }
  for (int r : behind) {
    out += "; rank " + std::to_string(r) + " had not reached it: it failed at " +
           collective_name(reports[r].first, reports[r].second);
  }
  for (int r : desync) {
    out += "; rank " + std::to_string(r) + " called " + reports[r].second +
           " as its collective " + std::to_string(seq) +
           ": the ranks called different collectives (every rank must call the same "
           "collectives in the same order)";
  }
  if (!same.empty()) out += "; " + join_ranks(same) + " failed at the same collective";
  return out + ". The error here: " + error;
}

void CollectiveMonitor::rethrow_with_report(uint64_t seq, const std::string& op) {
  std::string error;
  try {
    throw;
  } catch (const NotImplementedError&) {
    // A TODO: report at once so that the others need not wait for this rank, no diagnosis.
    if (!diagnosed_.exchange(true) && store_) {
      std::lock_guard<std::mutex> lock(store_mu_);
      try {
        store_->set(key("failed", rank_), std::to_string(seq) + " " + op);
      } catch (const Error&) {
      }
    }
    throw;
  } catch (const Error& e) {
    error = e.detail();
  } catch (const std::exception& e) {
    error = e.what();
  } catch (...) {
    throw;
  }
  if (diagnosed_.exchange(true)) throw;
  const std::string diagnosis = report_failure(seq, op, error);
  if (diagnosis.empty()) throw;
  rethrow_as_same_type(diagnosis);
}

}  // namespace course
