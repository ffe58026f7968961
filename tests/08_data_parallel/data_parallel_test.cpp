// data_parallel_test.cpp: lesson 08, DataParallel equals the unwrapped model, its replicas
// really run at the same time, and a replica's failure reaches the caller.
//
// The oracle is the master model run serially on the whole batch, in the same process:
// DataParallel must give the same output and the same gradients, up to the order of
// float additions (the replicas' gradients are summed per chunk, then across chunks).
//
//   ./build/solutions/test_08 --gtest_filter='DataParallel*'
#include "data_parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "error.h"
#include "linear.h"
#include "node.h"
#include "ops.h"
#include "optimizer.h"
#include "parallel_apply.h"
#include "sequential.h"
#include "tensor_ops.h"

namespace course {
namespace {

const std::vector<int64_t> kSizes = {6, 9, 7, 4};
constexpr float kTolerance = 2e-5f;  // relative to the largest magnitude compared

ModuleFactory mlp_factory() {
  return [] {
    Rng rng(777);  // any values: replicate overwrites them
    return std::static_pointer_cast<Module>(make_mlp(kSizes, rng));
  };
}

// Row r, column c: different everywhere, both signs; `step` shifts the whole batch.
Tensor batch_inputs(int64_t rows, int step = 0) {
  Tensor t = Tensor::empty({rows, kSizes.front()});
  for (int64_t i = 0; i < t.numel(); ++i) {
    t.data()[i] = static_cast<float>(std::sin(0.37 * i + 1.1 * step + 0.2) * 1.5);
  }
  return t;
}

Tensor batch_targets(int64_t rows, int step = 0) {
  Tensor t = Tensor::empty({rows});
  for (int64_t i = 0; i < rows; ++i)
    t.data()[i] = static_cast<float>((5 * i + step + 1) % kSizes.back());
  return t;
}

float scale_of(const Tensor& t) {
  float m = 1.0f;
  for (float v : t.to_vector()) m = std::max(m, std::fabs(v));
  return m;
}

void expect_close(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_TRUE(got.defined()) << what << " is undefined";
  ASSERT_EQ(got.shape(), want.shape()) << what;
  EXPECT_LE(max_abs_diff(got, want), kTolerance * scale_of(want)) << what;
}

// DataParallel over k devices against the same model run on the whole batch.
void check_forward_and_gradients(int k, int64_t rows) {
  SCOPED_TRACE("K=" + std::to_string(k) + " B=" + std::to_string(rows));
  Rng rng(11);
  const auto master = make_mlp(kSizes, rng);
  Rng same(11);
  const auto serial = make_mlp(kSizes, same);
  DataParallel dp(master, mlp_factory(), k);

  const Tensor x = batch_inputs(rows), t = batch_targets(rows);
  const Variable want = serial->forward(Variable(x));
  cross_entropy(want, t).backward();
  const Variable got = dp.forward(Variable(x));
  expect_close(got.data(), want.data(), "the output");
  cross_entropy(got, t).backward();

  const auto a = dp.named_parameters(), b = serial->named_parameters();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].first, "module." + b[i].first);
    expect_close(a[i].second.grad(), b[i].second.grad(), "the gradient of " + a[i].first);
  }
}

TEST(DataParallel, OutputAndGradientsEqualTheUnwrappedModel) {
  for (int k : {1, 2, 3, 4}) {
    for (int64_t rows : {12, 13, 7}) check_forward_and_gradients(k, rows);
  }
}

TEST(DataParallel, ABatchSmallerThanTheDevicesUsesFewerReplicas) {
  check_forward_and_gradients(4, 2);
  check_forward_and_gradients(3, 1);
  check_forward_and_gradients(4, 6);  // chunks of 2: three devices, the fourth skipped
}

template <typename Opt, typename Options>
void check_steps(int k, const Options& options) {
  SCOPED_TRACE("K=" + std::to_string(k));
  Rng rng(21);
  const auto master = make_mlp(kSizes, rng);
  Rng same(21);
  const auto serial = make_mlp(kSizes, same);
  DataParallel dp(master, mlp_factory(), k);
  Opt dp_opt(dp.parameters(), options);
  Opt serial_opt(serial->parameters(), options);
  for (int step = 0; step < k; ++step) {
    const Tensor x = batch_inputs(10 + step, step), t = batch_targets(10 + step, step);
    dp_opt.zero_grad();
    cross_entropy(dp.forward(Variable(x)), t).backward();
    dp_opt.step();
    serial_opt.zero_grad();
    cross_entropy(serial->forward(Variable(x)), t).backward();
    serial_opt.step();
  }
  const auto a = master->named_parameters(), b = serial->named_parameters();
  for (size_t i = 0; i < a.size(); ++i) {
    expect_close(a[i].second.data(), b[i].second.data(), "parameter " + a[i].first);
  }
}

TEST(DataParallel, StepsOfSgdAndAdamEndWhereOneProcessEnds) {
  for (int k : {2, 3, 4}) {
    check_steps<Sgd>(k, SgdOptions{.lr = 0.1f, .momentum = 0.9f});
    check_steps<Adam>(k, AdamOptions{.lr = 0.01f});
  }
}

// Two forwards in one graph: each gather must deliver only its own replicas' gradients.
TEST(DataParallel, TwoForwardsInOneLossEachDeliverTheirOwnGradients) {
  Rng rng(31);
  const auto master = make_mlp(kSizes, rng);
  Rng same(31);
  const auto serial = make_mlp(kSizes, same);
  DataParallel dp(master, mlp_factory(), 3);
  const Tensor x1 = batch_inputs(9, 1), x2 = batch_inputs(5, 2);
  const Tensor t1 = batch_targets(9, 1), t2 = batch_targets(5, 2);
  (cross_entropy(dp.forward(Variable(x1)), t1) + cross_entropy(dp.forward(Variable(x2)), t2))
      .backward();
  (cross_entropy(serial->forward(Variable(x1)), t1) +
   cross_entropy(serial->forward(Variable(x2)), t2))
      .backward();
  const auto a = master->named_parameters(), b = serial->named_parameters();
  for (size_t i = 0; i < a.size(); ++i) {
    expect_close(a[i].second.grad(), b[i].second.grad(), "the gradient of " + a[i].first);
  }
}

TEST(DataParallel, TheMastersHooksFireOncePerBackward) {
  Rng rng(51);
  const auto master = make_mlp(kSizes, rng);
  DataParallel dp(master, mlp_factory(), 3);
  std::atomic<int> fired{0};
  for (const Variable& p : master->parameters()) {
    p.register_post_accumulate_grad_hook([&](const Variable&) { fired += 1; });
  }
  cross_entropy(dp.forward(Variable(batch_inputs(11))), batch_targets(11)).backward();
  EXPECT_EQ(fired.load(), static_cast<int>(master->parameters().size()));
}

TEST(DataParallel, BadInputsAreConfigErrors) {
  Rng rng(61);
  const auto master = make_mlp(kSizes, rng);
  EXPECT_THROW(DataParallel(master, mlp_factory(), 0), ConfigError);
  EXPECT_THROW(DataParallel(nullptr, mlp_factory(), 2), ConfigError);
  EXPECT_THROW(DataParallel(
                   master,
                   [] {
                     Rng r(0);
                     return std::static_pointer_cast<Module>(make_mlp({6, 8, 4}, r));
                   },
                   2),
               ConfigError);
  DataParallel dp(master, mlp_factory(), 2);
  EXPECT_THROW(dp.forward(Variable(Tensor::empty({0, 6}))), ConfigError);
  EXPECT_THROW(dp.forward(Variable(batch_inputs(4), /*requires_grad=*/true)), ConfigError);
}

// ---- Concurrency, without timing: replicas that cannot finish unless all run at once ----

// `expected` threads meet here; each waits until all have arrived. Run one after another,
// the first would wait forever: it gives up after 10 s and throws.
class Rendezvous {
 public:
  explicit Rendezvous(int expected) : expected_(expected) {}
  void arrive(const char* where) {
    std::unique_lock<std::mutex> lock(mutex_);
    arrived_ += 1;
    cv_.notify_all();
    if (!cv_.wait_for(lock, std::chrono::seconds(10), [&] { return arrived_ >= expected_; })) {
      throw std::runtime_error(std::string(where) + ": only " + std::to_string(arrived_) + " of " +
                               std::to_string(expected_) +
                               " replicas arrived in 10 s: they do not run concurrently");
    }
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int arrived_ = 0;
  int expected_;
};

// y = g(x) with g's backward meeting the other replicas' backward at a rendezvous.
struct MeetInBackward final : Node {
  std::shared_ptr<Rendezvous> meet;
  std::shared_ptr<std::atomic<int>> fail_device;
  int device = 0;
  std::vector<Tensor> apply(const Tensor& g) override {
    if (fail_device && *fail_device == device)
      throw std::runtime_error("backward broke on purpose");
    if (meet) meet->arrive("backward");
    return {g};
  }
  std::string name() const override { return "MeetInBackward"; }
};

// A Linear layer whose forward and backward wait for every other replica, or throw on the
// device named in fail_forward / fail_backward.
struct Probe {
  std::shared_ptr<Rendezvous> forward_meet, backward_meet;
  std::shared_ptr<std::atomic<int>> fail_forward = std::make_shared<std::atomic<int>>(-1);
  std::shared_ptr<std::atomic<int>> fail_backward = std::make_shared<std::atomic<int>>(-1);
  std::set<std::thread::id> forward_threads;
  std::atomic<int> recording_forwards{0};  // forwards that ran with grad mode on
  std::mutex mutex;
};

class ProbeModel : public Module {
 public:
  ProbeModel(Probe& probe, int device) : probe_(probe), device_(device) {
    Rng rng(5);
    fc_ = register_module("fc", std::make_shared<Linear>(6, 4, rng));
  }
  Variable forward(const Variable& x) override {
    {
      std::lock_guard<std::mutex> lock(probe_.mutex);
      probe_.forward_threads.insert(std::this_thread::get_id());
    }
    if (grad_mode_enabled()) probe_.recording_forwards += 1;
    if (*probe_.fail_forward == device_) throw std::runtime_error("forward broke on purpose");
    if (probe_.forward_meet) probe_.forward_meet->arrive("forward");
    const Variable y = fc_->forward(x);
    Variable out(y.data());
    if (auto node = record<MeetInBackward>(out, {y})) {
      node->meet = probe_.backward_meet;
      node->fail_device = probe_.fail_backward;
      node->device = device_;
    }
    return out;
  }
  std::string describe() const override { return "ProbeModel"; }

 private:
  Probe& probe_;
  int device_;
  std::shared_ptr<Linear> fc_;
};

std::shared_ptr<DataParallel> probe_data_parallel(Probe& probe, int k) {
  auto master = std::make_shared<ProbeModel>(probe, -1);
  auto next = std::make_shared<int>(0);
  return std::make_shared<DataParallel>(
      master, [&probe, next] { return std::make_shared<ProbeModel>(probe, (*next)++); }, k);
}

TEST(DataParallel, ReplicasRunForwardAndBackwardConcurrently) {
  for (int k : {2, 3, 4}) {
    Probe probe;
    probe.forward_meet = std::make_shared<Rendezvous>(k);
    probe.backward_meet = std::make_shared<Rendezvous>(k);
    auto dp = probe_data_parallel(probe, k);
    const Variable y = dp->forward(Variable(batch_inputs(2 * k)));
    EXPECT_EQ(static_cast<int>(probe.forward_threads.size()), k) << "one thread per device";
    EXPECT_EQ(probe.forward_threads.count(std::this_thread::get_id()), 1u)
        << "device 0's replica runs on the caller's thread";
    cross_entropy(y, batch_targets(2 * k)).backward();
    for (const Variable& p : dp->parameters()) EXPECT_TRUE(p.grad().defined());
  }
}

// The workers run in the caller's grad mode: under NoGradGuard no replica records a graph.
TEST(DataParallel, UnderNoGradNothingIsRecordedOnAnyReplica) {
  Probe probe;
  auto dp = probe_data_parallel(probe, 3);
  {
    NoGradGuard no_grad;
    const Variable y = dp->forward(Variable(batch_inputs(9)));
    EXPECT_FALSE(y.requires_grad());
    EXPECT_EQ(probe.recording_forwards.load(), 0) << "replicas recorded graphs under NoGradGuard";
  }
  const Variable y = dp->forward(Variable(batch_inputs(9)));
  EXPECT_TRUE(y.requires_grad());
  EXPECT_EQ(probe.recording_forwards.load(), 3);
}

TEST(DataParallel, TheDeviceThreadsLiveAcrossSteps) {
  Probe probe;
  auto dp = probe_data_parallel(probe, 3);
  for (int step = 0; step < 4; ++step) dp->forward(Variable(batch_inputs(9, step)));
  EXPECT_EQ(probe.forward_threads.size(), 3u) << "a pool, not new threads every step";
}

void expect_replica_error(const std::function<void()>& f, int device, const std::string& phase) {
  try {
    f();
    FAIL() << "expected a ReplicaError from device " << device;
  } catch (const ReplicaError& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.device(), device) << what;
    EXPECT_NE(what.find("device " + std::to_string(device)), std::string::npos) << what;
    EXPECT_NE(what.find(phase), std::string::npos) << what;
    EXPECT_NE(what.find("broke on purpose"), std::string::npos) << what;
  }
}

TEST(DataParallel, AFailingReplicaReachesTheCallerAndThePoolRecovers) {
  Probe probe;
  auto dp = probe_data_parallel(probe, 3);
  *probe.fail_forward = 2;
  expect_replica_error([&] { dp->forward(Variable(batch_inputs(9))); }, 2, "forward");
  *probe.fail_forward = -1;
  *probe.fail_backward = 1;
  const Variable y = dp->forward(Variable(batch_inputs(9)));
  const Variable loss = cross_entropy(y, batch_targets(9));
  expect_replica_error([&] { loss.backward(); }, 1, "backward");
  // The same pool, working again.
  *probe.fail_backward = -1;
  dp->module().zero_grad();
  cross_entropy(dp->forward(Variable(batch_inputs(9))), batch_targets(9)).backward();
  for (const Variable& p : dp->parameters()) EXPECT_TRUE(p.grad().defined());
}

TEST(DataParallel, AFailureOnSeveralDevicesReportsTheLowest) {
  DevicePool pool(3);
  std::vector<std::function<void()>> tasks = {
      [] {}, [] { throw std::runtime_error("broke on purpose (1)"); },
      [] { throw std::runtime_error("broke on purpose (2)"); }};
  expect_replica_error([&] { run_on_devices(pool, tasks, "forward"); }, 1, "forward");
  int ran = 0;
  std::mutex m;
  std::vector<std::function<void()>> fine(3, [&] {
    std::lock_guard<std::mutex> lock(m);
    ran += 1;
  });
  EXPECT_EQ(run_on_devices(pool, fine, "forward").size(), 3u);
  EXPECT_EQ(ran, 3);
}

// A stub reached on a worker (an unfinished lesson 07 module, say) must still read as a
// TODO to the driver, not as a replica failure.
TEST(DataParallel, AStubOnAWorkerPassesThroughAsNotImplemented) {
  DevicePool pool(2);
  std::vector<std::function<void()>> tasks = {
      [] {}, [] { throw NotImplementedError("lessons/07_training/linear.cpp", 31); }};
  try {
    run_on_devices(pool, tasks, "forward");
    FAIL() << "expected the NotImplementedError";
  } catch (const NotImplementedError& e) {
    if (e.file() != "lessons/07_training/linear.cpp") throw;  // a stub of lesson 08: its TODO
    EXPECT_EQ(e.line(), 31);
  }
}

TEST(DevicePool, RunsEveryTaskOnItsOwnThreadAndRejectsTooMany) {
  DevicePool pool(3);
  std::vector<std::thread::id> ids(3);
  std::vector<std::function<void()>> tasks;
  for (int k = 0; k < 3; ++k) tasks.push_back([&ids, k] { ids[k] = std::this_thread::get_id(); });
  for (int round = 0; round < 2; ++round) {
    const auto errors = pool.run(tasks);
    for (const auto& e : errors) EXPECT_EQ(e, nullptr);
  }
  EXPECT_EQ(std::set<std::thread::id>(ids.begin(), ids.end()).size(), 3u);
  EXPECT_EQ(ids[0], std::this_thread::get_id()) << "device 0 is the caller";
  EXPECT_EQ(pool.run({}).size(), 0u);
  EXPECT_THROW(pool.run(std::vector<std::function<void()>>(4, [] {})), ConfigError);
  EXPECT_THROW(DevicePool(0), ConfigError);
}

}  // namespace
}  // namespace course
