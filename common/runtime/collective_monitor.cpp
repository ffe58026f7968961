// collective_monitor.cpp: see collective_monitor.h.
#include "collective_monitor.h"

#include <chrono>
#include <cstdlib>
#include <map>
#include <sstream>
#include <thread>
#include <vector>

#include "activity.h"
#include "error.h"

namespace course {
namespace {

/// The monitor's store requests wait at most this long for a reply: a frozen store host
/// (rank 0) is then named as soon as a frozen other rank is, one grace after the error.
constexpr Millis kMonitorStoreIo = kCollectiveMonitorGrace;

// ---- the agent: one thread per (store, rank), answering alarms ---------------------------
//
// Alarm g: "monitor/alarm/<g>" (g from the counter "monitor/alarms"); answer of rank r:
// "monitor/state/<g>/<r>", one state_line() per monitor of that rank.

struct Agent {
  int rank = -1;
  std::unique_ptr<StoreClient> store;
  std::vector<const CollectiveMonitor*> monitors;  // guarded by g_agents_mu
};

// Never destroyed: an agent's thread may outlive main() (it ends when the store goes).
std::mutex g_agents_mu;
std::map<std::string, Agent*>* g_agents = new std::map<std::string, Agent*>;

void agent_loop(Agent* agent) {
  activity_ignore_this_thread();  // its wait is by design, not what the rank is stuck in
  for (uint64_t g = 1;; ++g) {
    try {
      agent->store->get("monitor/alarm/" + std::to_string(g), Millis::max());
      std::string state;
      {
        std::lock_guard<std::mutex> lock(g_agents_mu);
        for (const CollectiveMonitor* m : agent->monitors) state += m->state_line() + "\n";
      }
      agent->store->set("monitor/state/" + std::to_string(g) + "/" + std::to_string(agent->rank),
                        state);
    } catch (...) {
      return;  // the store is gone: the job is ending
    }
  }
}

void agent_attach(const CollectiveMonitor* monitor, StoreClient& store, int rank) {
  std::lock_guard<std::mutex> lock(g_agents_mu);
  Agent*& agent = (*g_agents)[store.endpoint()];
  if (agent == nullptr) {
    agent = new Agent;
    agent->rank = rank;
    agent->store = store.connect_another();
    std::thread(agent_loop, agent).detach();
  }
  agent->monitors.push_back(monitor);
}

void agent_detach(const CollectiveMonitor* monitor) {
  std::lock_guard<std::mutex> lock(g_agents_mu);
  for (auto& [endpoint, agent] : *g_agents) {
    std::erase(agent->monitors, monitor);
  }
}

// ---- reading the answers ----------------------------------------------------------------

struct GroupPosition {
  uint64_t entered = 0, left = 0;
  std::string op;
};

std::map<std::string, GroupPosition> parse_state(const std::string& state) {
  std::map<std::string, GroupPosition> out;
  std::istringstream lines(state);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string group;
    GroupPosition p;
    if (std::getline(fields, group, '\t') && fields >> p.entered >> p.left) {
      fields >> std::ws;
      std::getline(fields, p.op);
      out[group] = p;
    }
  }
  return out;
}

std::string join_ranks(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return (ranks.size() == 1 ? "rank " : "ranks ") + out;
}

std::string collective_name(uint64_t seq, const std::string& op) {
  return "collective " + std::to_string(seq) + " (" + op + ")";
}

/// "stuck in collective 12 (all_reduce) of group tcp/pg", or "outside the collectives".
std::string where_is(const std::map<std::string, GroupPosition>& groups) {
  for (const auto& [group, p] : groups) {
    if (p.entered > p.left) return "in " + collective_name(p.entered, p.op) + " of group " + group;
  }
  return "outside the collectives";
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
  if (!store_) return;
  store_->set_io_timeout(kMonitorStoreIo);
  if (world_ > 1) agent_attach(this, *store_, rank_);
}

CollectiveMonitor::~CollectiveMonitor() {
  agent_detach(this);
}

std::unique_ptr<CollectiveMonitor> CollectiveMonitor::for_group(StoreClient& store,
                                                                const std::string& group, int rank,
                                                                int world) {
  return std::make_unique<CollectiveMonitor>(store.connect_another(), group, rank, world,
                                             kCollectiveMonitorGrace, debug_desync_enabled());
}

std::string CollectiveMonitor::key(const char* kind, int rank) const {
  return "monitor/" + group_ + "/" + kind + "/" + std::to_string(rank);
}

uint64_t CollectiveMonitor::enter(const std::string& op) {
  uint64_t seq;
  {
    std::lock_guard<std::mutex> lock(op_mu_);
    seq = entered_.load(std::memory_order_relaxed) + 1;
    entered_.store(seq, std::memory_order_relaxed);
    last_op_ = op;
  }
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

void CollectiveMonitor::leave(uint64_t seq) {
  uint64_t left = left_.load(std::memory_order_relaxed);
  while (left < seq && !left_.compare_exchange_weak(left, seq)) {
  }
}

std::string CollectiveMonitor::state_line() const {
  std::lock_guard<std::mutex> lock(op_mu_);
  return group_ + "\t" + std::to_string(entered_.load()) + "\t" + std::to_string(left_.load()) +
         "\t" + last_op_;
}

std::string CollectiveMonitor::report_failure(uint64_t seq, const std::string& op,
                                              const std::string& error) {
  if (!store_ || world_ <= 1) return "";
  using Clock = std::chrono::steady_clock;
  const std::string here = collective_name(seq, op) + " of group " + group_;
  std::lock_guard<std::mutex> lock(store_mu_);
  std::map<int, std::map<std::string, GroupPosition>> answers;
  std::vector<int> silent;
  try {
    const std::string g = std::to_string(store_->add("monitor/alarms", 1));
    store_->set("monitor/alarm/" + g, std::to_string(rank_));
    const auto end = Clock::now() + grace_;
    for (int r = 0; r < world_; ++r) {
      if (r == rank_) continue;
      const Millis left = std::max(Millis(0), std::chrono::ceil<Millis>(end - Clock::now()));
      try {
        answers[r] = parse_state(store_->get("monitor/state/" + g + "/" + std::to_string(r), left));
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

  std::string named, notes;
  for (const auto& [r, groups] : answers) {
    const std::string who = "rank " + std::to_string(r);
    const auto it = groups.find(group_);
    if (it == groups.end()) {
      named += "; " + who + " had not reached it: it has no such group (not made yet, or gone)";
      continue;
    }
    const GroupPosition& p = it->second;
    if (p.entered < seq) {
      named += "; " + who + " had not reached it: its last collective of this group is " +
               collective_name(p.entered, p.op) + (p.left < p.entered ? ", unfinished" : "") +
               ", and it is " + where_is(groups);
    } else if (p.entered == seq && p.op != op) {
      named += "; " + who + " called " + p.op + " as its collective " + std::to_string(seq) +
               ": the ranks called different collectives (every rank must call the same "
               "collectives in the same order)";
    } else if (p.left >= seq) {
      notes += "; " + who + " had passed it and is " + where_is(groups);
    }
  }
  if (silent.empty() && named.empty()) return "";

  std::string out = "collective monitor: " + here + " failed here";
  if (!silent.empty()) {
    out += "; " + join_ranks(silent) + (silent.size() == 1 ? " is" : " are") +
           " frozen or dead: no answer within " + std::to_string(grace_.count()) +
           " ms (stopped by SIGSTOP or a debugger, or its process is gone)";
    if (record_entries_) {
      for (int r : silent) {
        try {
          const std::string entered = store_->get(key("entered", r), Millis(0));
          const size_t space = entered.find(' ');
          out += "; rank " + std::to_string(r) + " had entered collective " +
                 entered.substr(0, space) + " (" +
                 (space == std::string::npos ? "" : entered.substr(space + 1)) + ")";
        } catch (const Error&) {
          out += "; rank " + std::to_string(r) + " had entered no collective of this group";
        }
      }
    }
  }
  return out + named + notes + ". The error here: " + error;
}

void CollectiveMonitor::rethrow_with_report(uint64_t seq, const std::string& op) {
  std::string error;
  try {
    throw;
  } catch (const NotImplementedError&) {
    throw;  // a TODO: the driver reports it its own way
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
