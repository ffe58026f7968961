// trainer.cpp: lesson 07, part 4: the training step (train_epoch and evaluate are given, in
// trainer_given.cpp).
#include "trainer.h"

#include "error.h"
#include "ops.h"

namespace course {

StepResult train_step(Module& model, Optimizer& optimizer, const Batch& batch) {
  StepResult result;
  // TODO(lesson07): zero_grad, forward, cross_entropy, backward, step; fill in loss and correct
  COURSE_TODO();
  return result;
}

}  // namespace course
