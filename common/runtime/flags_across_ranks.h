// flags_across_ranks.h: every rank of a job must be started with the same flags.
//
//   const std::string problem = flag_disagreement(store, rank, world, flags.values());
//   if (!problem.empty()) ...      // the same text on every rank: a usage error
//
// Ranks started by hand (RANK=1 ./lesson14 --hook fp16 ...) can disagree on a flag that no
// shape shows: a different --hook or --bucket-cap-mb fails later on a consequence ("got
// tag 14", "rank 1 all-reduces 1044 elements, rank 0 2088"), a different --no-warm-start
// or --lr trains on silently. So at start-up every rank publishes the values of all its
// declared flags (Flags::values(), flags.h) in the store and reads every other rank's, and
// each difference is named with each value and its ranks:
//   "--hook differs across ranks: fp16 on rank 1 vs powersgd on rank 0. Start every rank
//    with the same flags"
// The driver does this for every distributed lesson (driver.h); no lesson registers its
// flags. Values are compared, not how they were given: a flag left at its default and one
// given the same value read alike.
//
// What this is not: a check of the environment (MASTER_ADDR, ...: the handshake's job) or
// of flags declared with may_differ_across_ranks() (--np, --data).
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "store.h"

namespace course {

/// One rank's flags: name -> the text of its value.
using FlagValues = std::map<std::string, std::string>;

/// "" when every rank's flags (by_rank[r] is rank r's) are the same; else each differing
/// flag with its values and their ranks, "--lr differs across ranks: 0.05 on ranks 0, 2 vs
/// 0.1 on rank 1", joined by "; ", then ". Start every rank with the same flags".
std::string flag_differences(const std::vector<FlagValues>& by_rank);

/// Collective over the store (every one of `world` ranks calls it once, with its own
/// `flags`): publishes this rank's flags as "driver/flags/<rank>", reads every rank's
/// (waiting up to `timeout` for each) and returns flag_differences() of them, the same text
/// on every rank. Throws TimeoutError naming a rank that never published its flags.
std::string flag_disagreement(StoreClient& store, int rank, int world,
                              const std::vector<std::pair<std::string, std::string>>& flags,
                              Millis timeout = default_timeout());

}  // namespace course
