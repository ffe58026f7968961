// barrier_dissemination.cpp: lesson 03: the dissemination barrier
// (see barrier_dissemination.h).
#include "barrier_dissemination.h"

#include "point_to_point.h"

namespace course {

void barrier_dissemination(TcpComm& comm) {
  // TODO(lesson03): distance 1, 2, 4.. < N: send {} to r + distance, recv {} from r - distance
  COURSE_TODO();
}

}  // namespace course
