// schedule_given.cpp: lesson 16, given: the actions' names, the messages added to an order
// of computes, GPipe (the worked example), and each stage's own checks (schedule.h).
#include <algorithm>
#include <set>

#include "schedule.h"

namespace course {

std::string action_name(const Action& action) {
  const char* kind = "";
  switch (action.kind) {
    case ActionKind::forward:
      kind = "F";
      break;
    case ActionKind::backward:
      kind = "B";
      break;
    case ActionKind::send_f:
      kind = "SEND_F";
      break;
    case ActionKind::recv_f:
      kind = "RECV_F";
      break;
    case ActionKind::send_b:
      kind = "SEND_B";
      break;
    case ActionKind::recv_b:
      kind = "RECV_B";
      break;
  }
  return kind + std::to_string(action.micro_batch);
}

std::ostream& operator<<(std::ostream& out, const Action& a) {
  return out << action_name(a);
}

std::string describe_stage(const StageSchedule& actions) {
  std::string text;
  for (const Action& a : actions) {
    if (!text.empty()) text += ' ';
    text += action_name(a);
  }
  return text;
}

std::vector<std::string> schedule_names() {
  return {"gpipe", "1f1b"};
}

int message_tag(ActionKind kind, int micro_batch) {
  const bool gradient = kind == ActionKind::send_b || kind == ActionKind::recv_b;
  return 2 * micro_batch + (gradient ? 1 : 0);
}

namespace {

// The receive a compute needs first, if any: RECV_F on every stage but the first, RECV_B
// on every stage but the last.
bool needs_receive(const Action& compute, int stage, int stages, Action& receive) {
  if (compute.kind == ActionKind::forward && stage > 0) {
    receive = {ActionKind::recv_f, compute.micro_batch};
    return true;
  }
  if (compute.kind == ActionKind::backward && stage < stages - 1) {
    receive = {ActionKind::recv_b, compute.micro_batch};
    return true;
  }
  return false;
}

}  // namespace

void check_schedule_sizes(int stages, int micro_batches) {
  if (stages < 1 || micro_batches < 1) {
    throw ConfigError("a pipeline schedule needs at least one stage and one micro-batch (got " +
                      std::to_string(stages) + " stage(s), " + std::to_string(micro_batches) +
                      " micro-batch(es))");
  }
}

StageSchedule with_messages(const std::vector<Action>& computes, int stage, int stages) {
  StageSchedule out;
  Action receive;
  if (!computes.empty() && needs_receive(computes[0], stage, stages, receive)) {
    out.push_back(receive);
  }
  for (size_t i = 0; i < computes.size(); ++i) {
    const Action& c = computes[i];
    if (i + 1 < computes.size() && needs_receive(computes[i + 1], stage, stages, receive)) {
      out.push_back(receive);  // posted early: it travels while c computes
    }
    out.push_back(c);
    if (c.kind == ActionKind::forward && stage < stages - 1) {
      out.push_back({ActionKind::send_f, c.micro_batch});
    }
    if (c.kind == ActionKind::backward && stage > 0) {
      out.push_back({ActionKind::send_b, c.micro_batch});
    }
  }
  return out;
}

PipelineSchedule build_gpipe(int stages, int micro_batches) {
  check_schedule_sizes(stages, micro_batches);
  PipelineSchedule schedule;
  for (int s = 0; s < stages; ++s) {
    std::vector<Action> computes;
    for (int m = 0; m < micro_batches; ++m) computes.push_back({ActionKind::forward, m});
    for (int m = 0; m < micro_batches; ++m) computes.push_back({ActionKind::backward, m});
    schedule.push_back(with_messages(computes, s, stages));
  }
  return schedule;
}

PipelineSchedule make_schedule(const std::string& name, int stages, int micro_batches) {
  if (name == "gpipe") return build_gpipe(stages, micro_batches);
  if (name == "1f1b") return build_1f1b(stages, micro_batches);
  throw ConfigError("unknown pipeline schedule '" + name + "': choose gpipe or 1f1b");
}

int max_in_flight(const StageSchedule& actions) {
  int live = 0;
  int peak = 0;
  for (const Action& a : actions) {
    if (a.kind == ActionKind::forward) peak = std::max(peak, ++live);
    if (a.kind == ActionKind::backward) --live;
  }
  return peak;
}

void check_stage_actions(const StageSchedule& actions, int stage, int stages, int micro_batches) {
  const std::string where = "stage " + std::to_string(stage) + ": ";
  std::set<std::pair<int, int>> seen;  // (kind, micro-batch) of every action so far
  const auto has = [&](ActionKind k, int m) { return seen.count({static_cast<int>(k), m}) > 0; };
  for (const Action& a : actions) {
    const std::string name = action_name(a);
    if (a.micro_batch < 0 || a.micro_batch >= micro_batches) {
      throw ScheduleError(where + name + " names a micro-batch outside 0.." +
                          std::to_string(micro_batches - 1));
    }
    if (has(a.kind, a.micro_batch)) throw ScheduleError(where + name + " appears twice");
    const int m = a.micro_batch;
    const bool first = stage == 0;
    const bool last = stage == stages - 1;
    switch (a.kind) {
      case ActionKind::forward:
        if (!first && !has(ActionKind::recv_f, m)) {
          throw ScheduleError(where + "F" + std::to_string(m) + " runs before RECV_F" +
                              std::to_string(m) + " posted the receive of its input");
        }
        break;
      case ActionKind::backward:
        if (!has(ActionKind::forward, m)) {
          throw ScheduleError(where + "B" + std::to_string(m) + " runs before F" +
                              std::to_string(m));
        }
        if (!last && !has(ActionKind::recv_b, m)) {
          throw ScheduleError(where + "B" + std::to_string(m) + " runs before RECV_B" +
                              std::to_string(m) + " posted the receive of its gradient");
        }
        break;
      case ActionKind::send_f:
        if (last) throw ScheduleError(where + "the last stage has no next stage to " + name);
        if (!has(ActionKind::forward, m))
          throw ScheduleError(where + name + " before F" + std::to_string(m));
        break;
      case ActionKind::send_b:
        if (first) throw ScheduleError(where + "the first stage has no previous stage to " + name);
        if (!has(ActionKind::backward, m))
          throw ScheduleError(where + name + " before B" + std::to_string(m));
        break;
      case ActionKind::recv_f:
        if (first) throw ScheduleError(where + "the first stage has no previous stage to " + name);
        break;
      case ActionKind::recv_b:
        if (last) throw ScheduleError(where + "the last stage has no next stage to " + name);
        break;
    }
    seen.insert({static_cast<int>(a.kind), m});
  }
  for (int m = 0; m < micro_batches; ++m) {
    for (ActionKind k : {ActionKind::forward, ActionKind::backward}) {
      if (!has(k, m)) {
        throw ScheduleError(where + "micro-batch " + std::to_string(m) + " has no " +
                            action_name({k, m}));
      }
    }
    if (stage < stages - 1 && !has(ActionKind::send_f, m)) {
      throw ScheduleError(where + "F" + std::to_string(m) + "'s output is never sent (SEND_F" +
                          std::to_string(m) + ")");
    }
    if (stage > 0 && !has(ActionKind::send_b, m)) {
      throw ScheduleError(where + "B" + std::to_string(m) +
                          "'s input gradient is never sent (SEND_B" + std::to_string(m) + ")");
    }
  }
}

}  // namespace course
