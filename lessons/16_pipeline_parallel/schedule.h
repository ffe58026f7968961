// schedule.h: lesson 16, a pipeline schedule as data: the list of actions each stage runs
// in one training step, the builders of GPipe and 1F1B, and the check that refuses a
// schedule that would deadlock.
//
//   PipelineSchedule s = build_1f1b(/*stages=*/4, /*micro_batches=*/8);
//   check_schedule(s);                 // throws ScheduleError naming stage and micro-batch
//   describe_stage(s[1])  // "RECV_F0 RECV_F1 F0 SEND_F0 RECV_F2 F1 SEND_F1 RECV_B0 ..."
//
// The action names are torch.distributed.pipelining's (_ComputationType): F and B compute a
// micro-batch's forward and backward on this stage; SEND_F/RECV_F move the activation from
// stage s to stage s+1, SEND_B/RECV_B move its gradient from stage s+1 back to stage s.
//
// THE TWO SCHEDULES (P = 4 stages, M = 8 micro-batches; each cell one forward or backward)
//
//   GPipe: every forward, then every backward. Stage s holds M micro-batches' activations.
//     stage 0  F0 F1 F2 F3 F4 F5 F6 F7 .. .. .. .. .. .. B7 B6 ...
//     stage 3  .. .. .. F0 F1 F2 ...                  (the last stage starts 3 cells late)
//   (the backwards run in any order the data allows; ours runs them as the forwards ran,
//    B0 first, as torch's ScheduleGPipe does)
//
//   1F1B (PipeDream-Flush): stage s runs min(P-1-s, M) warm-up forwards, then alternates
//   one forward and one backward, then runs the remaining backwards (cool-down). Stage s
//   never holds more than P - s micro-batches' activations.
//     stage 0  F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7
//     stage 3           F0 B0 F1 B1 F2 B2 ...
//
// MESSAGES. Each compute action's input arrives by a RECV posted earlier in the list (the
// executor posts it without waiting, and waits only when the compute needs it), and its
// output leaves by a SEND right after it. with_messages() adds them to an order of
// computes: the receive of compute i+1 is posted before compute i runs, so the bytes can
// arrive while this stage computes. Messages between two ranks are matched in the order
// they were sent (lesson 02), so the k-th SEND_F of stage s must be the k-th RECV_F of stage
// s+1, for the same micro-batch.
//
// DEADLOCK. A compute waits for its input; the input is sent by the neighbour only after the
// neighbour's own compute, which may wait in turn. check_schedule plays the schedule out
// (sends and receive posts never block, a compute waits until its input has been sent) and
// refuses a list in which some stage can never go on, naming the stage, the micro-batch it
// waits for, and the neighbour that never sends it.
//
// What this is not: interleaved 1F1B (several virtual stages per rank, README's extension)
// or zero-bubble schedules that split the backward in two.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "error.h"

namespace course {

enum class ActionKind { forward, backward, send_f, recv_f, send_b, recv_b };

/// One step of a stage's list: what to do, for which micro-batch.
struct Action {
  ActionKind kind = ActionKind::forward;
  int micro_batch = 0;
  bool operator==(const Action&) const = default;
};

/// Writes action_name(a) ("F3", "SEND_B2"): how gtest and streams print an Action.
std::ostream& operator<<(std::ostream& out, const Action& a);

/// One stage's actions for one training step, in the order it runs them.
using StageSchedule = std::vector<Action>;
/// Every stage's list: stage s is element s.
using PipelineSchedule = std::vector<StageSchedule>;

/// A schedule the executor cannot run (unpaired message, compute out of order, deadlock).
class ScheduleError : public ConfigError {
 public:
  using ConfigError::ConfigError;
};

/// "F3", "B3", "SEND_F3", "RECV_F3", "SEND_B3", "RECV_B3".
std::string action_name(const Action& action);
/// The names of a stage's actions, separated by spaces.
std::string describe_stage(const StageSchedule& actions);
/// The schedule's names from make_schedule ("gpipe", "1f1b").
std::vector<std::string> schedule_names();

/// The message tag of an activation (send_f/recv_f) or gradient (send_b/recv_b) of
/// micro-batch m: 2m for the activation, 2m+1 for its gradient (user tags, >= 0; tags.h).
int message_tag(ActionKind kind, int micro_batch);

/// Adds the messages to an order of computes (forward and backward actions only) of stage
/// `stage` of `stages`: before compute i, the receive of compute i+1's input (and, for the
/// first, its own); after each compute, the send of its output. Stage 0 receives no
/// activation, the last stage receives no gradient (its backward starts from the loss).
StageSchedule with_messages(const std::vector<Action>& computes, int stage, int stages);

/// Throws ConfigError unless stages >= 1 and micro_batches >= 1 (what every builder
/// checks first).
void check_schedule_sizes(int stages, int micro_batches);

/// GPipe: F0 .. F(M-1), then B0 .. B(M-1) on every stage, with their messages.
/// REQUIRES: stages >= 1, micro_batches >= 1 (ConfigError otherwise).
PipelineSchedule build_gpipe(int stages, int micro_batches);

/// 1F1B (PipeDream-Flush): on stage s, w = min(stages-1-s, M) warm-up forwards F0..F(w-1);
/// then M - w rounds of one forward F(w+i) and one backward B(i); then the backwards that
/// remain, in order. With its messages (with_messages).
/// REQUIRES: stages >= 1, micro_batches >= 1 (ConfigError otherwise).
PipelineSchedule build_1f1b(int stages, int micro_batches);

/// build_gpipe or build_1f1b by name; ConfigError naming the choices otherwise.
PipelineSchedule make_schedule(const std::string& name, int stages, int micro_batches);

/// The most micro-batches whose forward has run on this stage and whose backward has not,
/// at any point of the list: the activations the stage must keep alive at once.
int max_in_flight(const StageSchedule& actions);

/// Throws ScheduleError unless the schedule can run. In this order:
///  1. each stage's own list (check_stage_actions): every micro-batch 0..M-1 has one F and
///     one B, F before B, each input received before its compute, each output sent after;
///  2. pairing: for every pair of neighbours, the k-th SEND_F of stage s and the k-th
///     RECV_F of stage s+1 name the same micro-batch, and as many of each (the same for
///     SEND_B of s+1 and RECV_B of s). The message starts "unmatched message: " and names
///     both stages and the two actions at the first position that differs, e.g. "unmatched
///     message: stage 0 sends SEND_F0 where stage 1 expects RECV_F1" (anything may follow);
///  3. deadlock: played out as described above. The message is "deadlock: " and then, for
///     every stuck stage in order, joined by "; ":
///       "stage S waits in A for micro-batch M's activation from stage S-1, which never
///        sends SEND_FM"     (A = FM, a forward), or
///       "stage S waits in A for micro-batch M's gradient from stage S+1, which never
///        sends SEND_BM"     (A = BM, a backward).
///     E.g. deadlocking_schedule() (pp_self_check.h): "deadlock: stage 0 waits in B0 for
///     micro-batch 0's gradient from stage 1, which never sends SEND_B0; stage 1 waits in
///     F1 for micro-batch 1's activation from stage 0, which never sends SEND_F1". The
///     driver's self-check and the lesson's tests look for these phrases.
/// REQUIRES: schedule.size() >= 1.
void check_schedule(const PipelineSchedule& schedule, int micro_batches);

/// Step 1 of check_schedule for stage `stage` of `stages` (given).
void check_stage_actions(const StageSchedule& actions, int stage, int stages, int micro_batches);

}  // namespace course
