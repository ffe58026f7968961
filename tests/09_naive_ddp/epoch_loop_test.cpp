// epoch_loop_test.cpp: lesson 09, the shared epoch loop (epoch_loop.h) that lessons 09, 13,
// 15 and 16 fill with their steps: every batch of this rank's share visited once per epoch
// in the sampler's order for that epoch, the step's position, the epoch's mean loss and
// accuracy against a serial oracle, the best accuracy counted within the scored epochs
// only, and an epoch without a batch refused naming the sizes.
//
//   ./build/solutions/test_09 --gtest_filter='EpochLoop*'
#include "epoch_loop.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "error.h"

namespace course {
namespace {

// Example i has the single input i and the target i % 3.
Dataset numbered_examples(int64_t n) {
  std::vector<float> inputs, targets;
  for (int64_t i = 0; i < n; ++i) {
    inputs.push_back(static_cast<float>(i));
    targets.push_back(static_cast<float>(i % 3));
  }
  return Dataset{Tensor::from_vector({n, 1}, inputs), Tensor::from_vector({n}, targets), 3};
}

TEST(EpochLoop, VisitsThisRanksShareInTheSamplersOrderAndAveragesByExample) {
  constexpr int64_t kExamples = 11, kBatch = 2;
  constexpr int kEpochs = 4, kWorld = 3, kRank = 2;
  const Dataset data = numbered_examples(kExamples);
  auto sampler = std::make_shared<DistributedSampler>(kExamples, kWorld, kRank, true, 7);
  DataLoader loader(data, kBatch, sampler);
  // Each step "loses" the sum of its inputs and counts the even ones as correct.
  std::vector<std::vector<int64_t>> seen(kEpochs);
  std::vector<StepPosition> positions;
  EpochLoopSeams seams;
  seams.step = [&](const Batch& b, const StepPosition& at) {
    EXPECT_EQ(sampler->epoch(), at.epoch) << "set_epoch before the epoch's batches";
    positions.push_back(at);
    StepResult r;
    for (int64_t i = 0; i < b.targets.numel(); ++i) {
      const auto x = static_cast<int64_t>(b.inputs.data()[i]);
      seen[at.epoch].push_back(x);
      r.loss += static_cast<float>(x);
      r.correct += x % 2 == 0;
    }
    return r;
  };
  const std::vector<double> accuracies = {0.5, 0.7, 0.6, 0.95};  // the 4th is not scored
  int evaluated = 0;
  seams.evaluate = [&] { return accuracies[evaluated++]; };
  std::vector<EpochSummary> summaries;
  seams.end_epoch = [&](const EpochSummary& e) { summaries.push_back(e); };

  const EpochLoopResult result = run_epochs(*sampler, loader, kEpochs, seams, /*scored_epochs=*/3);

  ASSERT_EQ(summaries.size(), static_cast<size_t>(kEpochs));
  int64_t global = 0;
  size_t p = 0;
  for (int e = 0; e < kEpochs; ++e) {
    SCOPED_TRACE("epoch " + std::to_string(e));
    const std::vector<int64_t> share = sampler->indices(e);
    ASSERT_EQ(seen[e], share) << "this rank's examples of the epoch, in order, each once";
    // The serial oracle: per batch, loss = the batch's sum; the epoch's loss is the mean of
    // those weighted by batch size, i.e. sum over batches of (sum * size) / examples.
    double weighted = 0;
    int64_t correct = 0, steps = 0;
    for (size_t first = 0; first < share.size(); first += kBatch, ++steps) {
      double sum = 0;
      const size_t end = std::min(share.size(), first + kBatch);
      for (size_t i = first; i < end; ++i) {
        sum += static_cast<double>(share[i]);
        correct += share[i] % 2 == 0;
      }
      weighted += sum * static_cast<double>(end - first);
      ASSERT_LT(p, positions.size());
      EXPECT_EQ(positions[p].epoch, e);
      EXPECT_EQ(positions[p].step, steps);
      EXPECT_EQ(positions[p].global_step, global++);
      ++p;
    }
    const EpochSummary& s = summaries[e];
    EXPECT_EQ(s.epoch, e + 1);
    EXPECT_EQ(s.epochs, kEpochs);
    EXPECT_EQ(s.steps, steps);
    EXPECT_EQ(s.samples, static_cast<int64_t>(share.size()));
    EXPECT_NEAR(s.loss, weighted / static_cast<double>(share.size()), 1e-9);
    EXPECT_NEAR(s.train_accuracy, static_cast<double>(correct) / static_cast<double>(share.size()),
                1e-12);
    EXPECT_DOUBLE_EQ(s.test_accuracy, accuracies[e]);
  }
  EXPECT_EQ(p, positions.size());
  EXPECT_EQ(result.steps, global);
  EXPECT_DOUBLE_EQ(result.best_accuracy, 0.7);  // 0.95 came after the scored epochs
  EXPECT_EQ(result.best_epoch, 2);
}

TEST(EpochLoop, AnEpochWithoutABatchIsAConfigErrorNamingTheSizes) {
  const Dataset data = numbered_examples(5);
  // 4 replicas: this rank's share is 2 examples, fewer than a batch of 3 that drops its
  // short last batch.
  auto sampler = std::make_shared<DistributedSampler>(5, 4, 1, false);
  DataLoader loader(data, 3, sampler, /*drop_last=*/true);
  EpochLoopSeams seams;
  int steps = 0;
  seams.step = [&](const Batch&, const StepPosition&) {
    ++steps;
    return StepResult{};
  };
  try {
    run_epochs(*sampler, loader, 2, seams, 2);
    FAIL() << "an epoch of zero steps ran";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    for (const char* part : {"epoch 1 has no batch", "rank 1 of 4", "the 5 training examples is 2",
                             "one batch of 3", "--batch-size"}) {
      EXPECT_NE(what.find(part), std::string::npos) << part << " in: " << what;
    }
  }
  EXPECT_EQ(steps, 0);
  DataLoader batches(data, 1, sampler);
  try {
    run_epochs(*sampler, batches, 1, EpochLoopSeams{}, 1);
    FAIL() << "a loop without a step ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the step seam is empty"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace course
