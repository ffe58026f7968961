// pipeline_executor.cpp: lesson 16: a stage's forward and backward of one micro-batch
// (pipeline_executor.h).
#include "pipeline_executor.h"

#include <algorithm>

#include "ops.h"
#include "trainer.h"

namespace course {

void PipelineExecutor::forward_action(int m) {
  const bool first = placement_.stage == 0;
  // The input: micro-batch m's rows on stage 0, else the activation RECV_F m received
  // (wait_receive). It requires grad on stages > 0: its gradient is what SEND_B sends.
  // Run the stage; on the last stage (stage_.ends_model()) the output kept for backward is
  // the loss cross_entropy(logits, targets[m]) scaled by 1/M; add its value to
  // stats_.loss and count_correct(logits, targets[m]) to stats_.correct.
  // Count the activations kept: saved_bytes_live_ += stage_.saved_bytes(), ++live_, and
  // the peaks in stats_.
  // What micro-batch m keeps between its forward and backward is in_flight_[m].
  // BEGIN SOLUTION: take the input, run the stage, the loss / M on the last stage, count
  InFlight& f = in_flight_[m];
  const Action action = {ActionKind::forward, m};
  Tensor x;
  if (first) {
    x = (*inputs_)[static_cast<size_t>(m)];
  } else {
    wait_receive(f.input_recv, action);
    x = f.received_input;
  }
  f.input = Variable(x, /*requires_grad=*/!first);
  Variable out = stage_.forward(f.input);
  if (stage_.ends_model()) {
    const Tensor& target = (*targets_)[static_cast<size_t>(m)];
    stats_.correct += count_correct(out.data(), target);
    out = scale(cross_entropy(out, target), 1.0f / static_cast<float>(micro_batches_));
    stats_.loss += out.item();
  }
  f.output = out;
  f.saved_bytes = stage_.saved_bytes();
  saved_bytes_live_ += f.saved_bytes;
  ++live_;
  stats_.peak_saved_bytes = std::max(stats_.peak_saved_bytes, saved_bytes_live_);
  stats_.peak_in_flight = std::max(stats_.peak_in_flight, live_);
  // END SOLUTION
}

void PipelineExecutor::backward_action(int m) {
  // The last stage starts from its loss (backward() with no argument); the others wait
  // for RECV_B m and start from the received gradient of their output. The parameters'
  // gradients accumulate; the input's gradient (stages > 0) stays in f.input.grad() for
  // SEND_B. Then the activations are no longer needed: release f.output and count them
  // out (saved_bytes_live_, live_).
  // BEGIN SOLUTION: wait for the gradient (not on the last stage), backward, release
  InFlight& f = in_flight_[m];
  const Action action = {ActionKind::backward, m};
  if (stage_.ends_model()) {
    f.output.backward();
  } else {
    wait_receive(f.grad_recv, action);
    f.output.backward(f.received_grad);
  }
  f.output = Variable();
  f.received_grad = Tensor();
  f.received_input = Tensor();
  saved_bytes_live_ -= f.saved_bytes;
  --live_;
  // END SOLUTION
}

}  // namespace course
