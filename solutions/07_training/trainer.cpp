// trainer.cpp: lesson 07, part 4: the training step (train_epoch and evaluate are given, in
// trainer_given.cpp).
#include "trainer.h"

#include "error.h"
#include "ops.h"

namespace course {

StepResult train_step(Module& model, Optimizer& optimizer, const Batch& batch) {
  StepResult result;
  // BEGIN SOLUTION: zero_grad, forward, cross_entropy, backward, step; fill in loss and correct
  optimizer.zero_grad();
  const Variable logits = model.forward(Variable(batch.inputs));
  const Variable loss = cross_entropy(logits, batch.targets);
  loss.backward();
  optimizer.step();
  result.loss = loss.item();
  result.correct = count_correct(logits.data(), batch.targets);
  // END SOLUTION
  return result;
}

}  // namespace course
