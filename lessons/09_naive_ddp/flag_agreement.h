// flag_agreement.h: lesson 09, every rank must be started with the same flags (given).
//
//   check_same_flags({{"--lr", "0.05"}, {"--seed", "0"}, ...}, pg);   // on every rank
//
// Ranks started by hand (RANK=1 ./lesson09 --lr 0.1 ...) can disagree on a hyper-parameter
// without any shape showing it: the run goes on, and only a later check finds that the
// parameters drifted, blaming the gradients. So each rank broadcasts its flags in turn at
// start-up, and every rank compares them all: a difference is a ConfigError on every rank,
// with the same text, naming the flag and each value with its ranks:
//   "--lr differs across ranks: 0.05 on ranks 0, 2 vs 0.1 on rank 1. Start every rank
//    with the same flags"
// The drivers compare every declared flag at start-up, through the store (common/'s
// flags_across_ranks.h, which words the differences for both); this check covers the
// training loop when it runs without a driver, as in the tests.
// What this is not: a check of the environment (MASTER_ADDR, ...: the handshake's job) or
// of paths that may rightly differ between machines (--data).
#pragma once

#include <map>
#include <string>

#include "process_group.h"

namespace course {

/// Collective: throws ConfigError on every rank when `flags` (flag -> value) differ
/// between ranks, naming each differing flag.
void check_same_flags(const std::map<std::string, std::string>& flags, ProcessGroup& pg);

}  // namespace course
