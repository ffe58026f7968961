// pipeline_executor.h: lesson 16, running one stage's list of actions (schedule.h) for one
// training step: receive the input, run the stage, send the output, over lesson 02's
// isend/irecv.
//
//   PipelineExecutor exec(module, pp_group, {.stage = s, .stages = P, .prev_rank = s - 1,
//                                            .next_rank = s + 1, .micro_batch_rows = 16});
//   StepStats st = exec.run_step(build_1f1b(P, M)[s], inputs, targets);   // grads accumulated
//   optimizer.step();
//
// PROTOCOL (stage s, micro-batch m, b = micro_batch_rows; tags message_tag(): 2m, 2m+1)
//
//   stage s-1                       stage s                          stage s+1
//   SEND_F m: [b, in] ----------->  RECV_F m (posted early)
//                                   F m: wait RECV_F m, forward
//                                   SEND_F m: [b, out] ----------->  RECV_F m
//                                   RECV_B m (posted early) <------  SEND_B m: [b, out]
//                                   B m: wait RECV_B m, backward
//   RECV_B m  <------------------   SEND_B m: [b, in] (input's gradient)
//
// Receives are posted (irecv) when the list reaches them and waited for only by the
// compute that needs them; sends are isends, waited for at the end of the step (their
// buffers live until then). The last stage computes the loss of micro-batch m,
// cross_entropy(logits, targets[m]) / M, and starts its backward from it: the gradients of
// the M micro-batches add up in the parameters to the gradient of the whole batch's mean
// loss (when the micro-batches are equal), as one process on the whole batch computes it.
//
// WHY IT CANNOT DEADLOCK: run_step runs only schedules check_schedule accepted (the
// caller checks the whole schedule once; run_step checks this stage's list), and the
// messages between two ranks are matched in order (lesson 02), which check_schedule
// paired. Shapes are agreed at construction: each stage sends its output width and
// micro-batch rows to the next, which compares them with its own input (ConfigError
// naming both stages otherwise).
//
// ERRORS: a receive that fails (a peer that died: PeerClosedError; one that froze:
// TimeoutError after `timeout`) is rethrown with the stage, the rank, the action and the
// micro-batch in flight in front ("stage 2 (rank 2) in F5: the activation of micro-batch
// 5 from stage 1 (rank 1): ..."). The ranks named are world ranks (StagePlacement::
// world_ranks): the messages go over the pipeline's group, the launcher names world ranks.
//
// COLLECTIVE: construction and run_step are point-to-point with the neighbours only.
// Thread safety: one thread.
#pragma once

#include <map>
#include <vector>

#include "process_group.h"
#include "schedule.h"
#include "socket.h"
#include "stage_module.h"
#include "trace_recorder.h"
#include "work.h"

namespace course {

/// Where a stage sits: its index, its neighbours' ranks in `group` (-1: none). On the
/// device mesh's "pp" group (stage_runner.h) group rank = stage, so the neighbours are
/// stage - 1 and stage + 1.
struct StagePlacement {
  int stage = 0;                       ///< s: this stage's index
  int stages = 1;                      ///< P: the pipeline's stages
  int prev_rank = -1;                  ///< stage-1's rank in the group; -1 on stage 0
  int next_rank = -1;                  ///< stage+1's rank in the group; -1 on the last stage
  int64_t micro_batch_rows = 1;        ///< b: every micro-batch has this many rows
  Millis timeout = default_timeout();  ///< how long a receive may wait
  /// Modelled compute (the bench): after each forward the stage sleeps this long, after
  /// each backward twice as long, so that a forward costs f and a backward 2f however
  /// many stages share the machine's cores (sleeping stages do not compete). 0: none.
  double modelled_forward_ms = 0;
  /// The world rank of each group rank (DeviceMesh::group_ranks("pp")), for errors; empty:
  /// the group's ranks are world ranks.
  std::vector<int> world_ranks;
};

/// What one stage did in one step.
struct StepStats {
  double compute_s = 0;          ///< forwards and backwards (the loss included)
  double wait_s = 0;             ///< blocked on receives: this stage's bubble
  double send_s = 0;             ///< posting sends and waiting for them at the end
  double step_s = 0;             ///< the whole run_step
  int peak_in_flight = 0;        ///< micro-batches forwarded and not yet backwarded, at most
  int64_t peak_saved_bytes = 0;  ///< their saved activations (StageModule::saved_bytes), at most
  double loss = 0;               ///< last stage: the batch's mean loss (sum of the scaled losses)
  int64_t correct = 0;           ///< last stage: correct predictions over the batch
};

class PipelineExecutor {
 public:
  /// Agrees the activation shapes with the neighbours (see above).
  PipelineExecutor(StageModule& stage, ProcessGroup& group, const StagePlacement& placement);

  /// Runs `actions` (this stage's list of a schedule check_schedule accepted) once.
  /// inputs[m]: micro-batch m's input rows (stage 0 only); targets[m]: its labels (last
  /// stage only). Accumulates the parameters' gradients (it does not zero them or step).
  /// With `trace`, records each compute on the compute lane ("forward m", "backward m")
  /// and each wait on the communication lane ("wait F m", "wait B m").
  StepStats run_step(const StageSchedule& actions, const std::vector<Tensor>& inputs,
                     const std::vector<Tensor>& targets, TraceRecorder* trace = nullptr);

  const StagePlacement& placement() const { return placement_; }
  /// Sets StagePlacement::modelled_forward_ms.
  void set_modelled_forward_ms(double ms) { placement_.modelled_forward_ms = ms; }
  /// Sets StagePlacement::timeout: how long a receive may wait before the stage that
  /// never sends is named (a frozen neighbour).
  void set_receive_timeout(Millis timeout) { placement_.timeout = timeout; }

 private:
  // What one micro-batch holds on this stage between its forward and its backward.
  struct InFlight {
    Tensor received_input;  ///< RECV_F's buffer, [b, in]
    WorkPtr input_recv;
    Tensor received_grad;  ///< RECV_B's buffer, [b, out]
    WorkPtr grad_recv;
    Variable input;   ///< the forward's input (requires grad on stages > 0)
    Variable output;  ///< the stage's output; on the last stage, the scaled loss
    int64_t saved_bytes = 0;
  };

  /// Runs F or B (forward_action, backward_action: the exercise), timed, traced.
  void compute(const Action& a);
  /// After F m: micro-batch m's output is kept (on the last stage, the scalar loss); after
  /// B m: it is released. ConfigError naming the action otherwise (given).
  void check_kept(const Action& a) const;
  void post_receive(const Action& a);
  void forward_action(int m);
  void backward_action(int m);
  void send_action(const Action& a);
  /// Waits for `work`, timed as waiting, its errors named (stage, rank, action, peer).
  void wait_receive(const WorkPtr& work, const Action& compute);
  std::string where(const Action& a) const;
  /// "stage 2 (rank 6)": stage `stage`, at group rank `group_rank`, named by its world rank.
  std::string stage_name(int stage, int group_rank) const;

  StageModule& stage_;
  ProcessGroup& group_;
  StagePlacement placement_;
  // The step in progress (run_step):
  const std::vector<Tensor>* inputs_ = nullptr;
  const std::vector<Tensor>* targets_ = nullptr;
  int micro_batches_ = 0;
  TraceRecorder* trace_ = nullptr;
  StepStats stats_;
  std::map<int, InFlight> in_flight_;
  std::vector<std::pair<Tensor, WorkPtr>> sends_;  // buffers live until their wait
  int64_t saved_bytes_live_ = 0;
  int live_ = 0;
  double wait_end_us_ = 0;  // when the last wait_receive returned
};

}  // namespace course
