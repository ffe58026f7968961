// sharding.h: lesson 13 in the tcp backend: install_lesson13.
//
// What this is not: the algorithms; those are ring_halves.h (the collectives) and
// fsdp.h (the sharded model).
#pragma once

#include "process_group_tcp.h"

namespace course {

/// Puts lesson 13 into the tcp backend: everything of lesson 05 (install_lesson05), with
/// reduce_scatter and all_gather replaced by the ring's halves (ring_halves.h).
/// names["reduce_scatter"] and names["all_gather"] say which runs.
void install_lesson13(TcpAlgorithms& algorithms);

}  // namespace course
