// schedule.cpp: lesson 16: the 1F1B builder and the check that refuses a schedule whose
// messages do not pair up or that would deadlock (schedule.h).
#include "schedule.h"

#include <algorithm>
#include <set>

namespace course {

PipelineSchedule build_1f1b(int stages, int micro_batches) {
  check_schedule_sizes(stages, micro_batches);
  PipelineSchedule schedule;
  for (int s = 0; s < stages; ++s) {
    std::vector<Action> computes;
    // Warm-up: enough forwards to fill the pipe below this stage; steady state: one
    // forward, one backward; cool-down: the backwards that remain.
    // BEGIN SOLUTION: w warm-up Fs; M-w rounds of F(w+i), B(i); then the Bs left
    const int warmup = std::min(stages - 1 - s, micro_batches);
    for (int m = 0; m < warmup; ++m) computes.push_back({ActionKind::forward, m});
    int next_backward = 0;
    for (int m = warmup; m < micro_batches; ++m) {
      computes.push_back({ActionKind::forward, m});
      computes.push_back({ActionKind::backward, next_backward++});
    }
    while (next_backward < micro_batches) {
      computes.push_back({ActionKind::backward, next_backward++});
    }
    // END SOLUTION
    schedule.push_back(with_messages(computes, s, stages));
  }
  return schedule;
}

namespace {

// The micro-batches of a stage's actions of one kind, in list order.
std::vector<int> micro_batches_of(const StageSchedule& actions, ActionKind kind) {
  std::vector<int> out;
  for (const Action& a : actions) {
    if (a.kind == kind) out.push_back(a.micro_batch);
  }
  return out;
}

// Step 2: the k-th send from `from` is the k-th receive of `to`, for the same micro-batch.
void check_pairs(const PipelineSchedule& schedule, int from, int to, ActionKind send,
                 ActionKind recv) {
  const std::vector<int> sent = micro_batches_of(schedule[from], send);
  const std::vector<int> received = micro_batches_of(schedule[to], recv);
  const std::string what = send == ActionKind::send_f ? "activation" : "gradient";
  // BEGIN SOLUTION: compare position by position; name both stages and the micro-batch
  for (size_t k = 0; k < std::max(sent.size(), received.size()); ++k) {
    if (k >= sent.size()) {
      throw ScheduleError("unmatched message: stage " + std::to_string(to) + " posts " +
                          action_name({recv, received[k]}) + " but stage " + std::to_string(from) +
                          " sends only " + std::to_string(sent.size()) + " " + what + "(s)");
    }
    if (k >= received.size()) {
      throw ScheduleError("unmatched message: stage " + std::to_string(from) + " sends " +
                          action_name({send, sent[k]}) + " but stage " + std::to_string(to) +
                          " posts only " + std::to_string(received.size()) + " receive(s)");
    }
    if (sent[k] != received[k]) {
      const auto list = [](const std::vector<int>& v) {
        std::string text;
        for (int m : v) text += (text.empty() ? "" : ", ") + std::to_string(m);
        return text;
      };
      throw ScheduleError("unmatched message: stage " + std::to_string(from) + " sends " +
                          action_name({send, sent[k]}) + " where stage " + std::to_string(to) +
                          " expects " + action_name({recv, received[k]}) + ": it sends its " +
                          what + "s in the order " + list(sent) + ", stage " + std::to_string(to) +
                          " receives " + list(received) +
                          " (messages between two ranks arrive in the order they were sent)");
    }
  }
  // END SOLUTION
}

}  // namespace

void check_schedule(const PipelineSchedule& schedule, int micro_batches) {
  const int stages = static_cast<int>(schedule.size());
  if (stages < 1) throw ScheduleError("a pipeline schedule needs at least one stage");
  for (int s = 0; s < stages; ++s) check_stage_actions(schedule[s], s, stages, micro_batches);
  for (int s = 0; s + 1 < stages; ++s) {
    check_pairs(schedule, s, s + 1, ActionKind::send_f, ActionKind::recv_f);
    check_pairs(schedule, s + 1, s, ActionKind::send_b, ActionKind::recv_b);
  }
  // Step 3, played out: sends and receive posts never block; F(m) on stage s > 0 waits until
  // stage s-1 has run SEND_F(m); B(m) on stage s < last waits until stage s+1 has run
  // SEND_B(m). Each round, every stage runs as far as it can; no progress and some stage
  // not finished is a deadlock.
  std::vector<size_t> next(stages, 0);
  std::vector<std::set<int>> sent_f(stages), sent_b(stages);
  // BEGIN SOLUTION: advance each stage while it can; then name every stuck stage
  const auto can_run = [&](int s, const Action& a) {
    if (a.kind == ActionKind::forward && s > 0) return sent_f[s - 1].count(a.micro_batch) > 0;
    if (a.kind == ActionKind::backward && s < stages - 1) {
      return sent_b[s + 1].count(a.micro_batch) > 0;
    }
    return true;
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (int s = 0; s < stages; ++s) {
      while (next[s] < schedule[s].size() && can_run(s, schedule[s][next[s]])) {
        const Action& a = schedule[s][next[s]++];
        if (a.kind == ActionKind::send_f) sent_f[s].insert(a.micro_batch);
        if (a.kind == ActionKind::send_b) sent_b[s].insert(a.micro_batch);
        progress = true;
      }
    }
  }
  std::string stuck;
  for (int s = 0; s < stages; ++s) {
    if (next[s] == schedule[s].size()) continue;
    const Action& a = schedule[s][next[s]];
    const bool forward = a.kind == ActionKind::forward;
    const int peer = forward ? s - 1 : s + 1;
    stuck += (stuck.empty() ? "" : "; ") + std::string("stage ") + std::to_string(s) +
             " waits in " + action_name(a) + " for micro-batch " + std::to_string(a.micro_batch) +
             "'s " + (forward ? "activation" : "gradient") + " from stage " + std::to_string(peer) +
             ", which never sends " +
             action_name({forward ? ActionKind::send_f : ActionKind::send_b, a.micro_batch});
  }
  if (!stuck.empty()) throw ScheduleError("deadlock: " + stuck);
  // END SOLUTION
}

}  // namespace course
