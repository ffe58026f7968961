// memory_self_check.h: lesson 18, given: ./lesson18's check of your exercise before it
// trains.
//
//   const std::string problem = memory_self_check(std::cout);   // "" when all is well
//
//   checkpoint    on a 2-block GPT (naive attention, so the S² term exists), each policy
//                 against none: the loss and every parameter's gradient bit for bit, fn run
//                 again in backward (the forward counted), and the graph keeping what
//                 activation_ledger.h's formula says (a checkpoint that records fn's graph
//                 keeps as much as none); then a small region's corners: a backward run
//                 under a caller's NoGradGuard, an input fn does not use (zeros), the
//                 captured parameters' gradients when no input requires grad
//   GradScaler    the loss's gradient multiplied by the scale; unscale_ dividing; an inf
//                 found, the step skipped and the optimizer untouched, the scale halved;
//                 the scale doubled after growth_interval clean steps and not before; a
//                 NaN skipped as an inf is; ScaleCollapse below min_scale, naming the step
//                 and the skipped steps in a row
// The problem names the function at fault and what differed. Under 50 ms. A stub's
// NotImplementedError is not caught: the driver reports the TODO.
#pragma once

#include <ostream>
#include <string>

namespace course {

/// "" when every check passed, else the first problem. Prints one line per check passed.
std::string memory_self_check(std::ostream& out);

/// What ./lesson18 prints when memory_self_check passed.
extern const char* const kLesson18SelfCheckPassed;

}  // namespace course
