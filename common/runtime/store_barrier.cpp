// store_barrier.cpp: barriers through the store, plain and monitored (see store.h).
#include <algorithm>
#include <chrono>

#include "error.h"
#include "store.h"

namespace course {
// Each call to a barrier named N adds 1 to "barrier/N/count". The world-th arrival of a
// round sets "barrier/N/<round>", which everyone of that round waits for. Rounds make the
// same name reusable, as long as every rank calls it the same number of times.
void store_barrier(StoreClient& store, const std::string& name, int world, Millis timeout) {
  const std::string count_key = "barrier/" + name + "/count";
  const int64_t arrival = store.add(count_key, 1);  // 1, 2, ...
  const int64_t round = (arrival - 1) / world;
  const std::string done_key = "barrier/" + name + "/" + std::to_string(round);
  if (arrival % world == 0) store.set(done_key, "1");
  try {
    store.get(done_key, timeout);
  } catch (const TimeoutError&) {
    const int64_t arrived = store.add(count_key, 0) - round * world;
    throw TimeoutError("barrier '" + name + "' timed out: only " + std::to_string(arrived) +
                       " of " + std::to_string(world) +
                       " ranks arrived (is one stuck, dead, or skipping the barrier?)");
  }
}

// Round k of a monitored barrier named N: each rank counts its own calls in the store
// ("mbarrier/N/calls/<rank>", so threads playing ranks in one process work too), sets
// "mbarrier/N/k/<rank>"; rank 0 waits for them in rank order and, on a timeout, checks
// which are missing; then it sets "mbarrier/N/k/release".
void monitored_barrier(StoreClient& store, const std::string& name, int rank, int world,
                       Millis timeout, bool wait_for_release) {
  const int64_t round = store.add("mbarrier/" + name + "/calls/" + std::to_string(rank), 1) - 1;
  const std::string prefix = "mbarrier/" + name + "/" + std::to_string(round) + "/";
  if (rank != 0) {
    store.set(prefix + std::to_string(rank), "1");
    if (!wait_for_release) return;
    try {
      store.get(prefix + "release", timeout);
    } catch (const TimeoutError&) {
      throw TimeoutError("monitored barrier '" + name + "': rank 0 did not release rank " +
                         std::to_string(rank) + " in time (rank 0 names the ranks that had not " +
                         "arrived; is rank 0 itself stuck?)");
    }
    return;
  }
  using Clock = std::chrono::steady_clock;
  const bool forever =
      static_cast<uint64_t>(std::max<int64_t>(timeout.count(), 0)) >= kStoreForeverMs;
  const auto end = forever ? Clock::time_point::max() : Clock::now() + timeout;
  for (int r = 1; r < world; ++r) {
    const Millis left =
        forever ? timeout : std::max(Millis(0), std::chrono::ceil<Millis>(end - Clock::now()));
    try {
      store.get(prefix + std::to_string(r), left);
    } catch (const TimeoutError&) {
      std::string missing;
      int count = 0;
      for (int q = r; q < world; ++q) {
        if (store.check({prefix + std::to_string(q)})) continue;
        missing += (missing.empty() ? "" : ", ") + std::to_string(q);
        ++count;
      }
      throw TimeoutError(
          "monitored barrier '" + name + "' timed out after " + std::to_string(timeout.count()) +
          " ms: " + (count == 1 ? "rank " : "ranks ") + missing + (count == 1 ? " has" : " have") +
          " not arrived (stuck, dead, or not calling this barrier)");
    }
  }
  if (wait_for_release) store.set(prefix + "release", "1");
}

}  // namespace course
