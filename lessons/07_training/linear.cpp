// linear.cpp: lesson 07, parts 1 and 5: the Linear layer (see linear.h for the initialisation).
#include "linear.h"

#include <cmath>

#include "error.h"
#include "ops.h"

namespace course {

void Linear::reset_parameters(Rng& rng) {
  // TODO(lesson07): bound = 1/sqrt(in_features); weight then bias, each uniform in [-bound, bound)
  COURSE_TODO();
}

Variable Linear::forward(const Variable& x) {
  // TODO(lesson07): one call to the linear op of lesson 06 (ops.h)
  COURSE_TODO();
}

}  // namespace course
