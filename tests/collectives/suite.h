// suite.h: what the collective suites share: their parameters, the counts every
// collective is tried with, and the checks.
//
// A suite is a header of TEST_Ps (suite_point_to_point.h, suite_one_to_all.h,
// suite_reductions.h) that a test binary includes once and instantiates with the backends
// it links:
//
//   #include "../collectives/suite_reductions.h"
//   INSTANTIATE_TEST_SUITE_P(Tcp, Reductions,
//                            testing::ValuesIn(course::test::world_params({"tcp"})),
//                            course::test::world_param_name);
//
// Each test of a world-parameterised suite runs every count, root, op and in/out of place
// variant on one group, so one group (one mesh) serves a few hundred calls.
//
// What this is not: the serial answers; those are in common/check/collective_oracle.h, shared
// with the drivers and the benchmarks.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "collective_oracle.h"
#include "group_factory.h"
#include "harness.h"
#include "result_checks.h"

namespace course::test {

/// A backend and a world size.
struct WorldParam {
  std::string backend;
  int world = 1;
};

/// Every backend with every world size in [min_world, max_world].
inline std::vector<WorldParam> world_params(const std::vector<std::string>& backends,
                                            int min_world = 1, int max_world = 8) {
  std::vector<WorldParam> params;
  for (const std::string& b : backends) {
    for (int w = min_world; w <= max_world; ++w) params.push_back({b, w});
  }
  return params;
}

/// How GoogleTest (and so CTest) prints a parameter: "tcp, world 5".
inline void PrintTo(const WorldParam& param, std::ostream* os) {
  *os << param.backend << ", world " << param.world;
}

/// "tcp_world5": the test's name suffix.
inline std::string world_param_name(const testing::TestParamInfo<WorldParam>& info) {
  return info.param.backend + "_world" + std::to_string(info.param.world);
}

/// "tcp"
inline std::string backend_param_name(const testing::TestParamInfo<std::string>& info) {
  return info.param;
}

class WorldSuite : public testing::TestWithParam<WorldParam> {
 protected:
  const std::string& backend() const { return GetParam().backend; }
  int world() const { return GetParam().world; }
};

class BackendSuite : public testing::TestWithParam<std::string> {
 protected:
  const std::string& backend() const { return GetParam(); }
};

/// The counts every collective is tried with on N ranks (result_checks.h).
inline std::vector<size_t> suite_counts(int world) {
  return collective_counts(world);
}

/// What an output holds before a call: values no correct result contains.
inline std::vector<float> stale(int rank, size_t count) {
  return data_values(rank + 100, count);
}

/// EXPECTs that actual matches expected (collective_oracle.h's count_wrong) and says
/// which call it was. Returns false on a mismatch, so a test can stop at its first one.
inline bool check_values(std::span<const float> actual, std::span<const float> expected,
                         const std::string& call, float tol = 0.0f) {
  const std::string wrong = describe_wrong(actual, expected, tol);
  EXPECT_TRUE(wrong.empty()) << call << ": " << wrong;
  return wrong.empty();
}

/// EXPECTs that every rank reached the same hash (through the store, not the group under
/// test). Every rank must call it with the same key.
inline void expect_same_on_every_rank(RankContext& ctx, const std::string& key, uint64_t hash) {
  ctx.store().set("same/" + key + "/" + std::to_string(ctx.rank), std::to_string(hash));
  for (int r = 0; r < ctx.world; ++r) {
    const std::string theirs = ctx.store().get("same/" + key + "/" + std::to_string(r));
    EXPECT_EQ(theirs, std::to_string(hash))
        << key << ": rank " << r << " holds different results than rank " << ctx.rank;
  }
}

/// Whether a backend turns counts that differ across ranks into errors on the ranks
/// whose data depends on them (the tcp backend does: every message carries its count,
/// over sockets or shared memory). Backends without this guarantee skip the Mismatched*
/// tests.
inline bool detects_mismatched_counts(const std::string& backend) {
  return backend == "tcp" || backend == "shm" || backend == "auto";
}

/// Runs `call` on a fresh group named "mismatch-<name>" and says whether it threw a
/// course::Error: the Mismatched* tests expect the ranks that see a count mismatch to.
/// A stub's NotImplementedError is rethrown: it is not a detected mismatch.
inline bool throws_on_mismatch(const std::string& backend, RankContext& ctx,
                               const std::string& name,
                               const std::function<void(ProcessGroup&)>& call) {
  auto pg = make_group(backend, ctx, "mismatch-" + name);
  try {
    call(*pg);
    return false;
  } catch (const NotImplementedError&) {
    throw;
  } catch (const Error&) {
    return true;
  }
}

/// The timeout of a test that should end in well under a second per call. Under the
/// grader (COURSE_TEST_TIMEOUT_S set) never longer than the grader's limit, so that a hang
/// is reported by the harness, naming where each rank was, before the grader kills it.
inline RanksOptions suite_options(int seconds = 60) {
  RanksOptions options;
  options.timeout = std::chrono::seconds(seconds);
  if (std::getenv("COURSE_TEST_TIMEOUT_S") != nullptr) {
    options.timeout = std::min(options.timeout, default_ranks_timeout());
  }
  return options;
}

// ---- the large-message cases ----------------------------------------------------------
// A loopback socket buffers a few MiB each way. Below that, a rank that sends a whole
// message before it receives gets away with it: the kernel takes the bytes. Above it, two
// ranks that both do so wait for each other forever. Every lesson with a protocol has a
// case with messages of kLargeMessageElements floats between each pair of ranks, run with
// the comm's timeout cut to kLargeMessageTimeout, so that such code fails in seconds with
// "deadlock" and the call's name instead of passing, or hanging until the grader stops it.

/// Elements in each message of a large case: 8 Mi floats, 32 MiB.
inline constexpr size_t kLargeMessageElements = size_t{8} << 20;

/// The socket timeout of a large case: a healthy transfer of 32 MiB takes well under a
/// second on loopback, even on a busy machine.
inline constexpr Millis kLargeMessageTimeout{10'000};

/// The harness's limit for a large case: after the socket timeout has had its turn, and
/// before the grader's own per-test limit (tests/NN_topic/points.json, 30 s and up).
inline RanksOptions large_options() {
  return suite_options(25);
}

/// Cuts the socket timeout of a tcp group to kLargeMessageTimeout (other backends keep
/// theirs; their transports do not deadlock on large messages).
inline void use_large_message_timeout(ProcessGroup& pg) {
  if (auto* tcp = dynamic_cast<TcpProcessGroup*>(&pg))
    tcp->comm().set_timeout(kLargeMessageTimeout);
}

/// Runs `body`, one large call named `call`. A TimeoutError becomes a failure that says
/// deadlock and names the call and the rank; any other error escapes as usual. Returns
/// false when it failed.
inline bool run_large(const RankContext& ctx, const std::string& call,
                      const std::function<void()>& body) {
  try {
    body();
    return true;
  } catch (const TimeoutError& e) {
    const std::string& what = e.detail();
    if (what.find("deadlock") != std::string::npos) {  // the transport said it already
      ADD_FAILURE() << "deadlock in " << call << " (rank " << ctx.rank << " of " << ctx.world
                    << "): " << what;
    } else {
      ADD_FAILURE() << "deadlock in " << call << " (rank " << ctx.rank << " of " << ctx.world
                    << "): nothing moved for " << kLargeMessageTimeout.count() / 1000
                    << " s with messages larger than a socket holds. Ranks that all send "
                       "before they receive wait for each other forever: receive while "
                       "sending (isend, or post the receive first). The error: "
                    << what;
    }
    return false;
  }
}

}  // namespace course::test
