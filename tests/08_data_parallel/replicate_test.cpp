// replicate_test.cpp: lesson 08, part 2: replicate copies the master every call, and its
// adjoint sums the replicas' gradients into the master in device order.
//
//   ./build/solutions/test_08 --gtest_filter='Replicate*:ReduceAdd*'
#include "replicate.h"

#include <gtest/gtest.h>

#include <cmath>

#include "error.h"
#include "sequential.h"
#include "tensor_ops.h"

namespace course {
namespace {

std::vector<std::shared_ptr<Module>> make_replicas(int k, const std::vector<int64_t>& sizes) {
  std::vector<std::shared_ptr<Module>> out;
  for (int i = 0; i < k; ++i) {
    Rng rng(1000 + i);  // other values than the master's
    out.push_back(make_mlp(sizes, rng));
  }
  return out;
}

Tensor index_tensor(const Shape& shape, float scale) {
  Tensor t = Tensor::empty(shape);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.data()[i] = scale * static_cast<float>(std::sin(0.9 * i + scale));
  return t;
}

TEST(Replicate, EveryReplicaGetsTheMastersValuesAndNoGradient) {
  Rng rng(3);
  const auto master = make_mlp({5, 7, 3}, rng);
  const auto replicas = make_replicas(3, {5, 7, 3});
  for (const auto& r : replicas) {
    for (const Variable& p : r->parameters()) p.set_grad(Tensor::full(p.shape(), 9.0f));
  }
  replicate(*master, replicas);
  const std::vector<Variable> mine = master->parameters();
  for (size_t k = 0; k < replicas.size(); ++k) {
    const std::vector<Variable> theirs = replicas[k]->parameters();
    ASSERT_EQ(theirs.size(), mine.size());
    for (size_t i = 0; i < mine.size(); ++i) {
      EXPECT_EQ(max_abs_diff(theirs[i].data(), mine[i].data()), 0.0f)
          << "replica " << k << " param " << i;
      EXPECT_FALSE(theirs[i].grad().defined()) << "replica " << k << " param " << i;
      EXPECT_TRUE(theirs[i].requires_grad());
      // Replica 0 keeps the master's tensor; the others own copies.
      EXPECT_EQ(theirs[i].data().shares_storage_with(mine[i].data()), k == 0) << "replica " << k;
    }
  }
}

TEST(Replicate, CopiesAgainOnEveryCallSoReplicasFollowTheMaster) {
  Rng rng(4);
  const auto master = make_mlp({4, 6, 2}, rng);
  const auto replicas = make_replicas(2, {4, 6, 2});
  replicate(*master, replicas);
  const Tensor before = replicas[1]->parameters()[0].data();
  // An optimizer step changes the master in place.
  for (const Variable& p : master->parameters()) add_scalar_(p.data(), 0.25f);
  replicate(*master, replicas);
  for (size_t i = 0; i < master->parameters().size(); ++i) {
    EXPECT_EQ(max_abs_diff(replicas[1]->parameters()[i].data(), master->parameters()[i].data()),
              0.0f);
  }
  EXPECT_FALSE(replicas[1]->parameters()[0].data().shares_storage_with(before))
      << "replicate should copy into new storage each call (torch's broadcast allocates)";
}

TEST(Replicate, AModelOfAnotherShapeIsAConfigErrorNamingTheReplica) {
  Rng rng(5);
  const auto master = make_mlp({4, 6, 2}, rng);
  auto replicas = make_replicas(2, {4, 6, 2});
  replicas.push_back(make_mlp({4, 5, 2}, rng));
  try {
    replicate(*master, replicas);
    FAIL() << "expected a ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("replica 2"), std::string::npos) << e.what();
  }
}

TEST(ReduceAdd, SumsInIndexOrderIntoANewTensor) {
  const Tensor a = index_tensor({2, 3}, 1.0f), b = index_tensor({2, 3}, 2.0f),
               c = index_tensor({2, 3}, 3.0f);
  const std::vector<float> a0 = a.to_vector();
  const Tensor s = reduce_add({a, b, c});
  for (int64_t i = 0; i < 6; ++i) {
    EXPECT_EQ(s.data()[i], (a.data()[i] + b.data()[i]) + c.data()[i]) << i;
    EXPECT_EQ(a.data()[i], a0[i]) << "reduce_add changed its first input";
  }
  EXPECT_FALSE(s.shares_storage_with(a));
  EXPECT_EQ(max_abs_diff(reduce_add({b}), b), 0.0f);
  EXPECT_THROW(reduce_add({}), ConfigError);
  EXPECT_THROW(reduce_add({a, Tensor::zeros({3, 2})}), ConfigError);
}

TEST(ReduceAdd, IntoTheMasterAccumulatesAndFiresItsHookOnce) {
  Rng rng(6);
  const auto master = make_mlp({3, 4, 2}, rng);
  const auto replicas = make_replicas(3, {3, 4, 2});
  replicate(*master, replicas);
  const std::vector<Variable> params = master->parameters();
  std::vector<int> fired(params.size(), 0);
  for (size_t i = 0; i < params.size(); ++i) {
    params[i].register_post_accumulate_grad_hook([&fired, i](const Variable&) { fired[i] += 1; });
  }
  // The master already has a gradient for parameter 0: reduce-add adds to it.
  params[0].set_grad(index_tensor(params[0].shape(), 0.5f));
  const Tensor old0 = params[0].grad().clone();
  // Replica k's gradient of parameter i: an index-dependent tensor; replica 1 has none
  // for the last parameter (it did not use it).
  for (size_t k = 0; k < replicas.size(); ++k) {
    const std::vector<Variable> mine = replicas[k]->parameters();
    for (size_t i = 0; i < mine.size(); ++i) {
      if (k == 1 && i + 1 == mine.size()) continue;
      mine[i].set_grad(index_tensor(mine[i].shape(), static_cast<float>(k + 1) + 0.1f * i));
    }
  }
  reduce_add_into(*master, replicas);
  for (size_t i = 0; i < params.size(); ++i) {
    Tensor expected = i == 0 ? old0.clone() : Tensor::zeros(params[i].shape());
    for (size_t k = 0; k < replicas.size(); ++k) {
      if (k == 1 && i + 1 == params.size()) continue;
      add_(expected, index_tensor(params[i].shape(), static_cast<float>(k + 1) + 0.1f * i));
    }
    EXPECT_LT(max_abs_diff(params[i].grad(), expected), 1e-6f) << "parameter " << i;
    EXPECT_EQ(fired[i], 1) << "parameter " << i << "'s hook";
  }
}

}  // namespace
}  // namespace course
