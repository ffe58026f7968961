// pp_self_check.cpp: see pp_self_check.h.
#include "pp_self_check.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <sstream>
#include <vector>

#include "error.h"
#include "ops.h"
#include "pipeline_executor.h"
#include "pp_equivalence.h"
#include "rng.h"
#include "sequential.h"
#include "stage_module.h"
#include "tensor_ops.h"

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

// 1F1B's closed form (schedule.h) with its messages, built here, not by build_1f1b;
// `reversed`: the warm-up counted from the wrong end, min(s, M) forwards on stage s
// instead of min(P-1-s, M).
PipelineSchedule closed_form_1f1b(int stages, int micro_batches, bool reversed) {
  using K = ActionKind;
  PipelineSchedule schedule;
  for (int s = 0; s < stages; ++s) {
    const int warmup = std::min(reversed ? s : stages - 1 - s, micro_batches);
    std::vector<Action> computes;
    for (int m = 0; m < warmup; ++m) computes.push_back({K::forward, m});
    int b = 0;
    for (int m = warmup; m < micro_batches; ++m) {
      computes.push_back({K::forward, m});
      computes.push_back({K::backward, b++});
    }
    for (; b < micro_batches; ++b) computes.push_back({K::backward, b});
    schedule.push_back(with_messages(computes, s, stages));
  }
  return schedule;
}

}  // namespace

PipelineSchedule reversed_warmup_1f1b() {
  return closed_form_1f1b(4, 4, /*reversed=*/true);
}

std::string deadlock_demonstration() {
  try {
    check_schedule(reversed_warmup_1f1b(), 4);
  } catch (const ScheduleError& e) {
    return "check_schedule refuses a 1F1B (P = 4, M = 4) whose warm-up is min(s, M) forwards "
           "instead of min(P-1-s, M): " +
           e.detail();
  }
  return "check_schedule accepted a 1F1B (P = 4, M = 4) whose warm-up is min(s, M) forwards "
         "instead of min(P-1-s, M), which deadlocks (stage 0: F0 B0 ..., stage 1: F0 F1 B0 ...)";
}

namespace {

// What check_schedule says of `s`, or "" when it accepts it.
std::string verdict_of(const PipelineSchedule& s, int micro_batches) {
  try {
    check_schedule(s, micro_batches);
  } catch (const ScheduleError& e) {
    return e.detail();
  }
  return "";
}

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
        const std::string verdict = verdict_of(s, micro_batches);
        return where + "stage " + std::to_string(st) + " computes " + got + ", expected " + want +
               (verdict.empty()
                    ? std::string(" (check_schedule accepts it: it runs, but is not 1F1B)")
                    : " (check_schedule on it: " + verdict + ")");
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
  // GPipe (given) and 1F1B's closed form, whatever build_1f1b does.
  for (const std::string& name : schedule_names()) {
    const PipelineSchedule s =
        name == "1f1b" ? closed_form_1f1b(4, 6, /*reversed=*/false) : make_schedule(name, 4, 6);
    const std::string verdict = verdict_of(s, 6);
    if (!verdict.empty()) {
      return "check_schedule refused " + name + " with P = 4, M = 6, which can run: " + verdict;
    }
  }
  // The forms schedule.h's contract gives (the lesson's tests grade the same phrases).
  const std::string what = verdict_of(deadlocking_schedule(), 2);
  if (what.empty()) {
    return "check_schedule accepted a schedule that deadlocks (stage 0: F0 B0 F1 B1, stage 1: "
           "F0 F1 B0 B1)";
  }
  for (const char* phrase : {"deadlock: ",
                             "stage 1 waits in F1 for micro-batch 1's activation "
                             "from stage 0, which never sends SEND_F1",
                             "stage 0 waits in B0 for micro-batch 0's gradient from stage 1, "
                             "which never sends SEND_B0"}) {
    if (what.find(phrase) == std::string::npos) {
      return "check_schedule refused the deadlocking schedule (stage 0: F0 B0 F1 B1, stage 1: F0 "
             "F1 B0 B1) without \"" +
             std::string(phrase) + "\" (the form of schedule.h's contract): \"" + what + "\"";
    }
  }
  const std::string demo = deadlock_demonstration();
  if (demo.find("refuses") == std::string::npos ||
      demo.find("stage 0 waits in B0") == std::string::npos ||
      demo.find("stage 1 waits in F1") == std::string::npos) {
    return demo.find("refuses") == std::string::npos
               ? demo
               : "check_schedule did not name stage 0 waiting in B0 and stage 1 in F1: " + demo;
  }
  PipelineSchedule swapped = build_gpipe(2, 3);
  // Stage 1 receives micro-batch 1's activation before micro-batch 0's.
  std::swap(swapped[1][0], swapped[1][1]);
  try {
    check_schedule(swapped, 3);
    return "check_schedule accepted activations received in another order than sent";
  } catch (const ScheduleError& e) {
    for (const char* phrase : {"unmatched message: ", "stage 0", "RECV_F1"}) {
      if (std::string(e.detail()).find(phrase) == std::string::npos) {
        return "check_schedule refused mis-paired messages (stage 1 posts RECV_F1 first, stage 0 "
               "sends SEND_F0 first) without \"" +
               std::string(phrase) + "\" (the form of schedule.h's contract): \"" +
               std::string(e.detail()) + "\"";
      }
    }
  }
  return "";
}

}  // namespace

std::string check_one_stage_step(ProcessGroup& group, const std::vector<int>& world_ranks) {
  // One stage holding the whole MLP (P = 1: no messages, this rank alone), M = 3
  // micro-batches of 2 rows, against one process on the 6 rows.
  const std::vector<int64_t> sizes = {6, 5, 4};
  const int M = 3;
  const int64_t rows = 2;
  std::vector<float> x(static_cast<size_t>(M * rows * sizes[0]));
  std::vector<float> y(static_cast<size_t>(M * rows));
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 5) % 11) / 4.0f - 1.0f;
  for (size_t r = 0; r < y.size(); ++r) y[r] = static_cast<float>((r * 3 + 1) % 4);
  const Tensor inputs = Tensor::from_vector({M * rows, sizes[0]}, x);
  const Tensor targets = Tensor::from_vector({M * rows}, y);
  std::vector<Tensor> in, tg;
  for (int m = 0; m < M; ++m) {
    in.push_back(inputs.rows(m * rows, rows));
    tg.push_back(targets.rows(m * rows, rows));
  }
  Rng rng(11);
  const std::shared_ptr<Sequential> whole = make_mlp(sizes, rng);
  Variable want = cross_entropy(whole->forward(Variable(inputs)), targets);
  want.backward();
  const auto whole_params = whole->named_parameters();
  for (const std::string& name : schedule_names()) {
    const std::string where = "PipelineExecutor on one stage (" + name + ", M = 3): ";
    StageModule stage(sizes, 11, 0, 2);
    PipelineExecutor exec(stage, group,
                          {.stage = 0,
                           .stages = 1,
                           .prev_rank = -1,
                           .next_rank = -1,
                           .micro_batch_rows = rows,
                           .world_ranks = world_ranks});
    StepStats st;
    try {
      st = exec.run_step(make_schedule(name, 1, M)[0], in, tg);
    } catch (const NotImplementedError&) {
      throw;
    } catch (const Error& e) {
      return where + e.detail();
    }
    // <got, want> / <want, want> over every gradient: M (unscaled), 1/M (scaled twice), 1.
    double dot = 0, norm = 0, worst = 0;
    const auto mine = stage.named_parameters();
    for (size_t i = 0; i < mine.size() && i < whole_params.size(); ++i) {
      const Tensor g = mine[i].second.grad(), w = whole_params[i].second.grad();
      if (!g.defined()) return where + "the parameter " + mine[i].first + " has no gradient";
      worst = std::max(worst, static_cast<double>(max_abs_diff(g, w)));
      const std::vector<float> gv = g.to_vector(), wv = w.to_vector();
      for (size_t k = 0; k < gv.size(); ++k) {
        dot += static_cast<double>(gv[k]) * wv[k];
        norm += static_cast<double>(wv[k]) * wv[k];
      }
    }
    const double ratio = norm > 0 ? dot / norm : 1;
    std::ostringstream out;
    if (worst > kPipelineTolerance && std::fabs(ratio - M) < 1e-3 * M) {
      out << where << "the gradients are M = 3 times one process's: forward_action must scale "
          << "the last stage's loss of each micro-batch by 1/M (cross_entropy(logits, targets[m]) "
          << "/ M)";
    } else if (worst > kPipelineTolerance && std::fabs(ratio - 1.0 / M) < 1e-3) {
      out << where << "the gradients are 1/M = 1/3 of one process's: the loss is scaled by 1/M "
          << "twice; scale it once, in forward_action, and start backward_action from it as it is";
    } else if (worst > kPipelineTolerance) {
      out << where << "the gradients differ from one process's on the whole batch by " << worst
          << ": forward_action and backward_action must use micro-batch m's input, target and "
          << "output";
    } else if (!(std::fabs(st.loss - want.item()) <= 1e-5 * (1 + std::fabs(want.item())))) {
      out << where << "stats_.loss is " << st.loss << ", expected the batch's mean loss "
          << want.item() << ": add each micro-batch's scaled loss (cross_entropy / M)";
    }
    if (!out.str().empty()) return out.str();
  }
  return "";
}

std::vector<int64_t> self_check_sizes(int stages) {
  // EquivalenceCase's 24 -> 20 -> 18 -> 16 -> 14 -> 12 -> 10 (6 layers), with more layers of
  // 12 where the group has more than 6 stages: one layer at least per stage.
  std::vector<int64_t> sizes = {24};
  for (int i = 1; i < std::max(6, stages); ++i) sizes.push_back(std::max<int64_t>(12, 22 - 2 * i));
  sizes.push_back(10);
  return sizes;
}

std::string run_lesson16_self_check(const DeviceMesh& mesh) {
  std::string problem = check_checker();
  if (problem.empty()) problem = check_builders();
  if (problem.empty()) problem = check_one_stage_step(*mesh.group("pp"), mesh.group_ranks("pp"));
  if (!problem.empty()) return problem;
  const int stages = mesh.size("pp");
  const int replicas = mesh.size("dp");
  for (const std::string& name : schedule_names()) {
    EquivalenceCase c;
    c.sizes = self_check_sizes(stages);
    c.schedule = name;
    c.steps = 3;
    const double diff = compare_with_one_process(mesh, c);
    if (!(diff <= kPipelineTolerance)) {
      std::ostringstream out;
      out << "PipelineExecutor::forward_action / backward_action: " << name << " on " << stages
          << " stages";
      if (replicas > 1) out << " x " << replicas << " replicas";
      out << " differs from one process on the whole batch by " << diff << " after " << c.steps
          << " SGD steps (tolerance " << kPipelineTolerance
          << "): check the input, the loss scaled by 1/M, and the gradient received";
      return out.str();
    }
  }
  return "";
}

}  // namespace course
