// pipeline_executor_given.cpp: lesson 16, given: the executor's loop over a stage's list,
// the receives and sends, the shapes agreed at start-up, and the timings
// (pipeline_executor.h). The forward and backward actions are the exercise
// (pipeline_executor.cpp).
#include <chrono>
#include <thread>

#include "clock.h"
#include "error.h"
#include "pipeline_executor.h"

namespace course {

namespace {

// Start-up messages carry a tag no micro-batch uses (Gloo's tags end at 2^24 - 1).
constexpr int kShapeTag = (1 << 24) - 1;

}  // namespace

PipelineExecutor::PipelineExecutor(StageModule& stage, ProcessGroup& group,
                                   const StagePlacement& placement)
    : stage_(stage), group_(group), placement_(placement) {
  const StagePlacement& p = placement_;
  if ((p.stage > 0) != (p.prev_rank >= 0) || (p.stage < p.stages - 1) != (p.next_rank >= 0)) {
    throw ConfigError("stage " + std::to_string(p.stage) + " of " + std::to_string(p.stages) +
                      ": a previous rank exactly when it is not the first stage, a next rank " +
                      "exactly when it is not the last");
  }
  // Shapes agreed at start-up: [out_features, rows] to the next stage.
  if (p.next_rank >= 0) {
    const std::vector<float> mine = {static_cast<float>(stage_.out_features()),
                                     static_cast<float>(p.micro_batch_rows)};
    group_.send(mine, p.next_rank, kShapeTag);
  }
  if (p.prev_rank >= 0) {
    std::vector<float> theirs(2);
    group_.recv(theirs, p.prev_rank, kShapeTag);
    if (static_cast<int64_t>(theirs[0]) != stage_.in_features() ||
        static_cast<int64_t>(theirs[1]) != p.micro_batch_rows) {
      throw ConfigError(stage_name(p.stage, group_.rank()) + " expects activations [" +
                        std::to_string(p.micro_batch_rows) + ", " +
                        std::to_string(stage_.in_features()) + "] but " +
                        stage_name(p.stage - 1, p.prev_rank) + " sends [" +
                        std::to_string(static_cast<int64_t>(theirs[1])) + ", " +
                        std::to_string(static_cast<int64_t>(theirs[0])) +
                        "]: every rank must build the same model and micro-batch size");
    }
  }
}

std::string PipelineExecutor::stage_name(int stage, int group_rank) const {
  const std::vector<int>& world = placement_.world_ranks;
  const int rank = group_rank >= 0 && group_rank < static_cast<int>(world.size())
                       ? world[static_cast<size_t>(group_rank)]
                       : group_rank;
  return "stage " + std::to_string(stage) + " (rank " + std::to_string(rank) + ")";
}

std::string PipelineExecutor::where(const Action& a) const {
  return stage_name(placement_.stage, group_.rank()) + " in " + action_name(a);
}

StepStats PipelineExecutor::run_step(const StageSchedule& actions,
                                     const std::vector<Tensor>& inputs,
                                     const std::vector<Tensor>& targets, TraceRecorder* trace) {
  const auto t0 = std::chrono::steady_clock::now();
  int micro_batches = 0;
  for (const Action& a : actions) {
    if (a.kind == ActionKind::forward) ++micro_batches;
  }
  check_stage_actions(actions, placement_.stage, placement_.stages, micro_batches);
  const bool first = placement_.stage == 0;
  const bool last = placement_.stage == placement_.stages - 1;
  if ((first && static_cast<int>(inputs.size()) != micro_batches) ||
      (last && static_cast<int>(targets.size()) != micro_batches)) {
    throw ConfigError(where(actions.front()) + ": the schedule has " +
                      std::to_string(micro_batches) + " micro-batches but the step was given " +
                      std::to_string(first ? inputs.size() : targets.size()) + " " +
                      (first ? "inputs" : "targets"));
  }
  inputs_ = &inputs;
  targets_ = &targets;
  micro_batches_ = micro_batches;
  trace_ = trace;
  stats_ = StepStats{};
  in_flight_.clear();
  sends_.clear();
  saved_bytes_live_ = 0;
  live_ = 0;
  for (const Action& a : actions) {
    try {
      switch (a.kind) {
        case ActionKind::recv_f:
        case ActionKind::recv_b:
          post_receive(a);
          break;
        case ActionKind::send_f:
        case ActionKind::send_b:
          send_action(a);
          break;
        case ActionKind::forward:
        case ActionKind::backward:
          compute(a);
          break;
      }
    } catch (const NetworkError& e) {
      // A receive's wait names its action and peer already (wait_receive); any other call
      // that fails (a send, or a post after the group aborted on a neighbour's death) is
      // named here the same way: this stage, the action, its micro-batch and the peer.
      if (e.detail().rfind("stage ", 0) == 0) throw;
      const bool towards_next = a.kind == ActionKind::send_f || a.kind == ActionKind::recv_b ||
                                a.kind == ActionKind::backward;
      const bool sending = a.kind == ActionKind::send_f || a.kind == ActionKind::send_b;
      const std::string what =
          where(a) + " (micro-batch " + std::to_string(a.micro_batch) + ") " +
          (sending ? "to " : "from ") +
          stage_name(placement_.stage + (towards_next ? 1 : -1),
                     towards_next ? placement_.next_rank : placement_.prev_rank) +
          ": ";
      try {
        throw;
      } catch (const PeerClosedError&) {
        throw PeerClosedError(what + e.detail());
      } catch (const TimeoutError&) {
        throw TimeoutError(what + e.detail());
      } catch (const NetworkError&) {
        throw NetworkError(what + e.detail());
      }
    }
  }
  // The sends' buffers may go only once the bytes have left.
  const auto s0 = std::chrono::steady_clock::now();
  for (auto& [buffer, work] : sends_) work->wait(placement_.timeout);
  sends_.clear();
  stats_.send_s += seconds_since(s0);
  in_flight_.clear();
  stats_.step_s = seconds_since(t0);
  return stats_;
}

void PipelineExecutor::compute(const Action& a) {
  // Compute time is the action's time less what it spent waiting for its input; on the
  // timeline the compute starts when that wait ended.
  const double t0 = TraceRecorder::now_us();
  const double waited = stats_.wait_s;
  wait_end_us_ = t0;
  if (a.kind == ActionKind::forward) {
    forward_action(a.micro_batch);
  } else {
    backward_action(a.micro_batch);
  }
  check_kept(a);
  if (placement_.modelled_forward_ms > 0) {
    const double ms = placement_.modelled_forward_ms * (a.kind == ActionKind::forward ? 1 : 2);
    std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(ms * 1e3)));
  }
  const double t1 = TraceRecorder::now_us();
  stats_.compute_s += (t1 - t0) / 1e6 - (stats_.wait_s - waited);
  if (trace_) {
    trace_->span(
        TraceRecorder::kCompute,
        (a.kind == ActionKind::forward ? "forward " : "backward ") + std::to_string(a.micro_batch),
        wait_end_us_, t1);
  }
}

void PipelineExecutor::check_kept(const Action& a) const {
  // What the exercise must leave in in_flight_[m]: after F m its output (on the last stage
  // the scalar loss), after B m nothing. A mistake is named here, at the action that made
  // it, rather than later by an autograd or send error on another micro-batch.
  const int m = a.micro_batch;
  const auto it = in_flight_.find(m);
  const Variable kept = it == in_flight_.end() ? Variable() : it->second.output;
  const std::string mb = "micro-batch " + std::to_string(m);
  if (a.kind == ActionKind::forward) {
    if (!kept.defined()) {
      throw ConfigError(where(a) + ": forward_action(" + std::to_string(m) +
                        ") kept no output for " + mb + " (in_flight_[" + std::to_string(m) +
                        "].output)");
    }
    if (stage_.ends_model() && kept.numel() != 1) {
      throw ConfigError(where(a) + ": forward_action(" + std::to_string(m) + ") keeps " +
                        shape_str(kept.shape()) + " for " + mb +
                        "'s backward on the last stage, not its loss: keep cross_entropy(logits, "
                        "targets[m]) / M, a scalar, for every micro-batch m");
    }
  } else if (kept.defined()) {
    throw ConfigError(where(a) + ": backward_action(" + std::to_string(m) + ") left " + mb +
                      "'s output held after its backward: start from in_flight_[" +
                      std::to_string(m) + "], " + mb +
                      "'s own output and gradient (not another micro-batch's), and release it");
  }
}

void PipelineExecutor::post_receive(const Action& a) {
  InFlight& f = in_flight_[a.micro_batch];
  const int64_t rows = placement_.micro_batch_rows;
  if (a.kind == ActionKind::recv_f) {
    f.received_input = Tensor::empty({rows, stage_.in_features()});
    f.input_recv = group_.irecv(f.received_input.span(), placement_.prev_rank,
                                message_tag(a.kind, a.micro_batch));
  } else {
    f.received_grad = Tensor::empty({rows, stage_.out_features()});
    f.grad_recv = group_.irecv(f.received_grad.span(), placement_.next_rank,
                               message_tag(a.kind, a.micro_batch));
  }
}

void PipelineExecutor::send_action(const Action& a) {
  const auto t0 = std::chrono::steady_clock::now();
  InFlight& f = in_flight_[a.micro_batch];
  // SEND_F: the stage's output; SEND_B: the gradient of the stage's input.
  const Tensor buffer = a.kind == ActionKind::send_f ? f.output.data() : f.input.grad();
  if (!buffer.defined()) {
    throw ConfigError(where(a) + ": nothing to send (the " +
                      (a.kind == ActionKind::send_f ? std::string("forward's output")
                                                    : std::string("input's gradient")) +
                      " of micro-batch " + std::to_string(a.micro_batch) + " is undefined)");
  }
  const int peer = a.kind == ActionKind::send_f ? placement_.next_rank : placement_.prev_rank;
  sends_.emplace_back(buffer,
                      group_.isend(buffer.span(), peer, message_tag(a.kind, a.micro_batch)));
  if (a.kind == ActionKind::send_b) in_flight_.erase(a.micro_batch);  // its last use here
  stats_.send_s += seconds_since(t0);
}

void PipelineExecutor::wait_receive(const WorkPtr& work, const Action& compute) {
  const double t0 = TraceRecorder::now_us();
  const bool forward = compute.kind == ActionKind::forward;
  const int peer_stage = placement_.stage + (forward ? -1 : 1);
  const std::string what =
      where(compute) + ": the " + (forward ? "activation" : "gradient") + " of micro-batch " +
      std::to_string(compute.micro_batch) + " from " +
      stage_name(peer_stage, forward ? placement_.prev_rank : placement_.next_rank) + ": ";
  if (!work) throw ConfigError(what + "no receive was posted for it");
  try {
    work->wait(placement_.timeout);
  } catch (const PeerClosedError& e) {
    throw PeerClosedError(what + e.detail());
  } catch (const TimeoutError& e) {
    throw TimeoutError(what + e.detail());
  } catch (const NetworkError& e) {
    throw NetworkError(what + e.detail());
  }
  const double t1 = TraceRecorder::now_us();
  stats_.wait_s += (t1 - t0) / 1e6;
  wait_end_us_ = t1;
  if (trace_) {
    trace_->span(TraceRecorder::kComm,
                 std::string("wait ") + (forward ? "F" : "B") + std::to_string(compute.micro_batch),
                 t0, t1);
  }
}

}  // namespace course
