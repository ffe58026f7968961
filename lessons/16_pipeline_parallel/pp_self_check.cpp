// pp_self_check.cpp: see pp_self_check.h.
#include "pp_self_check.h"

#include <algorithm>
#include <sstream>

#include "error.h"
#include "pp_training.h"

namespace course {

const char* const kLesson16SelfCheckPassed =
    "self-check passed: build_1f1b, check_schedule (deadlock and pairing refused), forward and "
    "backward actions equal one process";

PipelineSchedule deadlocking_schedule() {
  using K = ActionKind;
  return {
      with_messages({{K::forward, 0}, {K::backward, 0}, {K::forward, 1}, {K::backward, 1}}, 0, 2),
      with_messages({{K::forward, 0}, {K::forward, 1}, {K::backward, 0}, {K::backward, 1}}, 1, 2)};
}

namespace {

// Only the computes of a stage's list, by name.
std::string computes_of(const StageSchedule& actions) {
  StageSchedule computes;
  for (const Action& a : actions) {
    if (a.kind == ActionKind::forward || a.kind == ActionKind::backward) computes.push_back(a);
  }
  return describe_stage(computes);
}

// The closed form of 1F1B's computes on stage s.
std::string expected_1f1b(int stages, int micro_batches, int s) {
  std::ostringstream out;
  const int warmup = std::min(stages - 1 - s, micro_batches);
  int b = 0;
  for (int m = 0; m < warmup; ++m) out << (m ? " " : "") << "F" << m;
  for (int m = warmup; m < micro_batches; ++m) out << (m ? " " : "") << "F" << m << " B" << b++;
  for (; b < micro_batches; ++b) out << " B" << b;
  return out.str();
}

std::string check_builders() {
  for (const auto& [stages, micro_batches] : {std::pair{2, 3}, std::pair{4, 8}, std::pair{4, 2}}) {
    const PipelineSchedule s = build_1f1b(stages, micro_batches);
    const std::string where =
        "build_1f1b(" + std::to_string(stages) + ", " + std::to_string(micro_batches) + "): ";
    if (static_cast<int>(s.size()) != stages) {
      return where + std::to_string(s.size()) + " stage lists, expected " + std::to_string(stages);
    }
    for (int st = 0; st < stages; ++st) {
      const std::string got = computes_of(s[st]);
      const std::string want = expected_1f1b(stages, micro_batches, st);
      if (got != want) {
        return where + "stage " + std::to_string(st) + " computes " + got + ", expected " + want;
      }
      if (max_in_flight(s[st]) > stages - st) {
        return where + "stage " + std::to_string(st) + " holds " +
               std::to_string(max_in_flight(s[st])) + " micro-batches at once, at most " +
               std::to_string(stages - st) + " expected";
      }
    }
  }
  return "";
}

std::string check_checker() {
  for (const std::string& name : schedule_names()) {
    try {
      check_schedule(make_schedule(name, 4, 6), 6);
    } catch (const ScheduleError& e) {
      return "check_schedule refused " + name + " with P = 4, M = 6, which can run: " + e.detail();
    }
  }
  try {
    check_schedule(deadlocking_schedule(), 2);
    return "check_schedule accepted a schedule that deadlocks (stage 0: F0 B0 F1 B1, stage 1: "
           "F0 F1 B0 B1)";
  } catch (const ScheduleError& e) {
    const std::string& what = e.detail();
    if (what.find("deadlock") == std::string::npos || what.find("stage 1") == std::string::npos ||
        what.find("F1") == std::string::npos) {
      return "check_schedule refused the deadlocking schedule without naming the deadlock, "
             "stage 1 and its F1: \"" +
             what + "\"";
    }
  }
  PipelineSchedule swapped = build_gpipe(2, 3);
  // Stage 1 receives micro-batch 1's activation before micro-batch 0's.
  std::swap(swapped[1][0], swapped[1][1]);
  try {
    check_schedule(swapped, 3);
    return "check_schedule accepted activations received in another order than sent";
  } catch (const ScheduleError& e) {
    if (std::string(e.detail()).find("unmatched") == std::string::npos) {
      return "check_schedule refused mis-paired messages without saying \"unmatched\": \"" +
             std::string(e.detail()) + "\"";
    }
  }
  return "";
}

}  // namespace

std::string run_lesson16_self_check(ProcessGroup& group) {
  std::string problem = check_builders();
  if (problem.empty()) problem = check_checker();
  if (!problem.empty()) return problem;
  for (const std::string& name : schedule_names()) {
    EquivalenceCase c;
    c.schedule = name;
    c.steps = 3;
    const double diff = compare_with_one_process(group, c);
    if (!(diff <= kPipelineTolerance)) {
      std::ostringstream out;
      out << "PipelineExecutor::forward_action / backward_action: " << name << " on "
          << group.size() << " stages differs from one process on the whole batch by " << diff
          << " after " << c.steps << " SGD steps (tolerance " << kPipelineTolerance
          << "): check the input, the loss scaled by 1/M, and the gradient received";
      return out.str();
    }
  }
  return "";
}

}  // namespace course
