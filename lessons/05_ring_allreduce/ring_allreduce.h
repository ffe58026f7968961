// ring_allreduce.h: lesson 05 in the tcp backend: install_lesson05.
//
// Every lesson that adds to the tcp backend has this file, named after the lesson
// (point_to_point.h, one_to_all.h, reductions.h): its install_lessonNN fills the table of
// algorithms that TcpProcessGroup runs (common/comm/process_group_tcp.h).
//
// What this is not: the algorithm; that is all_reduce_ring.h.
#pragma once

#include "process_group_tcp.h"

namespace course {

/// Puts lesson 05 into the tcp backend: everything of lessons 02-04 (install_lesson04),
/// with all_reduce replaced by all_reduce_ring. names["all_reduce"] says which runs;
/// lesson 04's all_reduce_naive stays callable by its name for comparison.
void install_lesson05(TcpAlgorithms& algorithms);

}  // namespace course
