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
    // TODO(lesson16): w warm-up Fs; M-w rounds of F(w+i), B(i); then the Bs left
    COURSE_TODO();
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
  [[maybe_unused]] const std::vector<int> sent = micro_batches_of(schedule[from], send);
  [[maybe_unused]] const std::vector<int> received = micro_batches_of(schedule[to], recv);
  [[maybe_unused]] const std::string what = send == ActionKind::send_f ? "activation" : "gradient";
  // TODO(lesson16): compare position by position; name both stages and the micro-batch
  COURSE_TODO();
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
  // TODO(lesson16): advance each stage while it can; then name every stuck stage
  COURSE_TODO();
}

}  // namespace course
