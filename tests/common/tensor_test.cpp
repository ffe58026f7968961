// tensor_test.cpp: the tensors of common/ (tensor.h, tensor_ops.h) against naive loops.
//
// Inputs depend on the index (sin of it), sizes are odd and cross the four-float blocks
// of the CPU kernels (0, 1, 3, 5, 17 elements), so a kernel that drops the remainder, reads
// a transposed operand the wrong way or sums the wrong axis fails. The CUDA kernels are
// compared with the CPU ones where a GPU is present (skipped otherwise).
//
//   ./build/solutions/tests/common/test_common --gtest_filter='Tensor*'
#include "tensor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "error.h"
#include "tensor_ops.h"

namespace course {
namespace {

Tensor wavy(const Shape& shape, float phase = 0.0f, float amplitude = 1.0f) {
  Tensor t = Tensor::empty(shape);
  for (int64_t i = 0; i < t.numel(); ++i) {
    t.data()[i] = amplitude * static_cast<float>(std::sin(0.9 * i + 0.3 + phase));
  }
  return t;
}

float at(const Tensor& t, int64_t i) {
  return t.data()[i];
}

// ---- Tensor: storage, views, copies ----------------------------------------------------

TEST(Tensor, ShapesAndScalars) {
  const Tensor s = Tensor::scalar(2.5f);
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(s.item(), 2.5f);
  const Tensor e = Tensor::zeros({3, 0});
  EXPECT_EQ(e.numel(), 0);
  EXPECT_EQ(shape_str({128, 784}), "[128, 784]");
  EXPECT_EQ(wavy({2, 3, 4}).size(-1), 4);
  EXPECT_THROW(wavy({2, 3}).size(2), ConfigError);
  EXPECT_THROW(Tensor::zeros({-1}), ConfigError);
  EXPECT_FALSE(Tensor().defined());
}

TEST(Tensor, FromVectorChecksTheCount) {
  const Tensor t = Tensor::from_vector({2, 2}, {1, 2, 3, 4});
  EXPECT_EQ(t.to_vector(), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_THROW(Tensor::from_vector({2, 2}, {1, 2, 3}), ConfigError);
  EXPECT_THROW(t.item(), ConfigError);
}

TEST(Tensor, CopiesShareViewsShareCloneDoesNot) {
  const Tensor a = wavy({4, 3});
  // NOLINTNEXTLINE(performance-unnecessary-copy-initialization): the copy is under test
  const Tensor alias = a;
  const Tensor view = a.reshape({3, -1});
  const Tensor rows = a.rows(1, 2);
  const Tensor copy = a.clone();
  EXPECT_EQ(view.shape(), (Shape{3, 4}));
  EXPECT_EQ(rows.shape(), (Shape{2, 3}));
  EXPECT_FALSE(a.is_unique());
  a.data()[4] = 100.0f;  // row 1, column 1
  EXPECT_EQ(at(alias, 4), 100.0f);
  EXPECT_EQ(at(view, 4), 100.0f);
  EXPECT_EQ(at(rows, 1), 100.0f);
  EXPECT_NE(at(copy, 4), 100.0f);
  EXPECT_TRUE(copy.is_unique());
  EXPECT_THROW(a.reshape({5, -1}), ConfigError);
  EXPECT_THROW(a.rows(3, 2), ConfigError);
}

// FSDP's free and refill (lesson 13): every view of a storage follows its resize; a view
// that reaches past the storage throws instead of reading freed memory; the process's
// live and peak bytes count it.
TEST(Tensor, ResizedStorageIsFollowedByEveryViewAndCounted) {
  Tensor flat = Tensor::from_vector({6}, {1, 2, 3, 4, 5, 6});
  const Tensor view = flat.rows(2, 4).reshape({2, 2});
  const int64_t before = Storage::live_cpu_bytes();
  flat.resize_storage(0);
  EXPECT_EQ(Storage::live_cpu_bytes(), before - 24);
  try {
    (void)view.data();
    ADD_FAILURE() << "a view of a freed storage gave out a pointer";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("resized"), std::string::npos) << e.what();
  }
  Storage::reset_peak_cpu_bytes();
  flat.resize_storage(6);
  EXPECT_EQ(Storage::live_cpu_bytes(), before);
  EXPECT_GE(Storage::peak_cpu_bytes(), before);
  for (int i = 0; i < 6; ++i) flat.data()[i] = static_cast<float>(10 * i);
  EXPECT_EQ(view.to_vector(), (std::vector<float>{20, 30, 40, 50}));
  {
    const Tensor big = Tensor::zeros({1000});
    EXPECT_GE(Storage::peak_cpu_bytes(), Storage::live_cpu_bytes());
  }
  EXPECT_GE(Storage::peak_cpu_bytes(), before + 4000);
  EXPECT_THROW(flat.resize_storage(-1), ConfigError);
}

TEST(Tensor, UndefinedTensorsAreConfigErrors) {
  const Tensor u;
  EXPECT_THROW(u.data(), ConfigError);
  EXPECT_THROW(add(u, u), ConfigError);
  EXPECT_EQ(tensor_str(u), "Tensor(undefined)");
}

// ---- Matrix products -------------------------------------------------------------------

// c = alpha * op(a) op(b) + beta * c, by the definition.
std::vector<double> naive_gemm(const Tensor& a, bool ta, const Tensor& b, bool tb, float alpha,
                               float beta, const Tensor& c) {
  const int64_t m = c.size(0), n = c.size(1), k = ta ? a.size(0) : a.size(1);
  std::vector<double> out(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) {
        const double x = ta ? at(a, p * a.size(1) + i) : at(a, i * a.size(1) + p);
        const double y = tb ? at(b, j * b.size(1) + p) : at(b, p * b.size(1) + j);
        s += x * y;
      }
      out[i * n + j] = alpha * s + beta * at(c, i * n + j);
    }
  }
  return out;
}

TEST(TensorMatmul, AllFourTransposeCombinationsMatchNaiveLoops) {
  const int64_t m = 5, n = 3, k = 7;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const Tensor a = wavy(ta ? Shape{k, m} : Shape{m, k}, 1.0f);
      const Tensor b = wavy(tb ? Shape{n, k} : Shape{k, n}, 2.0f);
      const Tensor c = wavy({m, n}, 3.0f);
      const std::vector<double> want = naive_gemm(a, ta, b, tb, 0.5f, -2.0f, c);
      gemm(a, ta, b, tb, 0.5f, -2.0f, c);
      for (int64_t i = 0; i < m * n; ++i) {
        EXPECT_NEAR(at(c, i), want[i], 1e-5) << "ta " << ta << " tb " << tb << " element " << i;
      }
      const Tensor p = matmul(a, b, ta, tb);
      const std::vector<double> plain = naive_gemm(a, ta, b, tb, 1.0f, 0.0f, Tensor::zeros({m, n}));
      for (int64_t i = 0; i < m * n; ++i) EXPECT_NEAR(at(p, i), plain[i], 1e-5);
    }
  }
}

// Results with at most 8 columns take gemm's own loops (PowerSGD's M Q and Mᵀ P) instead of
// BLAS: every column count 1 to 8 (and 9, BLAS again), lengths that are and are not
// multiples of four, both transposes, and beta 0 over NaN (BLAS never reads c then).
TEST(TensorMatmul, ThinResultsMatchNaiveLoops) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (int64_t n = 1; n <= 9; ++n) {
    for (const auto& [m, k] : {std::pair<int64_t, int64_t>{37, 130}, {8, 4}, {3, 1}, {1, 9}}) {
      for (bool ta : {false, true}) {
        for (bool tb : {false, true}) {
          const Tensor a = wavy(ta ? Shape{k, m} : Shape{m, k}, 1.0f + static_cast<float>(n));
          const Tensor b = wavy(tb ? Shape{n, k} : Shape{k, n}, 2.0f);
          for (float beta : {0.0f, -2.0f}) {
            const Tensor c = beta == 0.0f ? Tensor::full({m, n}, nan) : wavy({m, n}, 3.0f);
            const std::vector<double> want =
                naive_gemm(a, ta, b, tb, 0.5f, beta, beta == 0.0f ? Tensor::zeros({m, n}) : c);
            gemm(a, ta, b, tb, 0.5f, beta, c);
            for (int64_t i = 0; i < m * n; ++i) {
              ASSERT_NEAR(at(c, i), want[i], 1e-5 * static_cast<double>(k))
                  << "m " << m << " n " << n << " k " << k << " ta " << ta << " tb " << tb
                  << " beta " << beta << " element " << i;
            }
          }
        }
      }
    }
  }
}

TEST(TensorMatmul, EmptyInnerDimensionAndShapeErrors) {
  const Tensor c = Tensor::full({2, 3}, std::numeric_limits<float>::quiet_NaN());
  gemm(Tensor::zeros({2, 0}), false, Tensor::zeros({0, 3}), false, 1.0f, 0.0f, c);
  EXPECT_EQ(c.to_vector(), std::vector<float>(6, 0.0f));  // beta 0 clears even NaN
  EXPECT_THROW(matmul(wavy({2, 3}), wavy({2, 3})), ConfigError);
  EXPECT_THROW(matmul(wavy({6}), wavy({6, 1})), ConfigError);
}

TEST(TensorMatmul, CountsCallsFlopsAndTimePerThread) {
  thread_matmul_stats() = {};
  matmul(wavy({4, 5}), wavy({5, 6}));
  matmul(wavy({2, 3}), wavy({3, 2}));
  EXPECT_EQ(thread_matmul_stats().calls, 2);
  EXPECT_EQ(thread_matmul_stats().flops, 2.0 * 4 * 6 * 5 + 2.0 * 2 * 2 * 3);
  EXPECT_GT(thread_matmul_stats().seconds, 0.0);
}

// ---- Elementwise -------------------------------------------------------------------------

TEST(TensorElementwise, BinaryAndUnaryOpsMatchTheirDefinitions) {
  for (int64_t n : {0, 1, 3, 4, 5, 17}) {
    const Tensor a = wavy({n}, 0.0f, 2.0f), b = wavy({n}, 1.0f);
    Tensor pos = wavy({n}, 2.0f);
    for (float& v : pos.span()) v = 1.5f + v;
    const Tensor sum_ = add(a, b), dif = sub(a, b), pro = mul(a, b), quo = div(a, pos);
    const Tensor ng = neg(a), ex = exp(a), lg = log(pos), sq = sqrt(pos), sc = scale(a, -3.0f);
    const Tensor re = relu_forward(a), rb = relu_backward(b, a);
    for (int64_t i = 0; i < n; ++i) {
      const float x = at(a, i), y = at(b, i), p = at(pos, i);
      EXPECT_FLOAT_EQ(at(sum_, i), x + y);
      EXPECT_FLOAT_EQ(at(dif, i), x - y);
      EXPECT_FLOAT_EQ(at(pro, i), x * y);
      EXPECT_FLOAT_EQ(at(quo, i), x / p);
      EXPECT_FLOAT_EQ(at(ng, i), -x);
      EXPECT_FLOAT_EQ(at(ex, i), std::exp(x));
      EXPECT_FLOAT_EQ(at(lg, i), std::log(p));
      EXPECT_FLOAT_EQ(at(sq, i), std::sqrt(p));
      EXPECT_FLOAT_EQ(at(sc, i), -3.0f * x);
      EXPECT_FLOAT_EQ(at(re, i), x > 0 ? x : 0.0f);
      EXPECT_FLOAT_EQ(at(rb, i), x > 0 ? y : 0.0f);
    }
  }
  EXPECT_THROW(add(wavy({3}), wavy({4})), ConfigError);
}

TEST(TensorElementwise, InPlaceOpsWriteTheirFirstArgument) {
  for (int64_t n : {1, 5, 17}) {
    const Tensor x = wavy({n}, 1.0f), a = wavy({n}, 2.0f), b = wavy({n}, 3.0f);
    Tensor pos = wavy({n}, 4.0f);
    for (float& v : pos.span()) v = 2.0f + v;
    const Tensor y0 = wavy({n});
    Tensor y1 = y0.clone(), y2 = y0.clone(), y3 = y0.clone(), y4 = y0.clone(), y5 = y0.clone(),
           y6 = y0.clone(), y7 = y0.clone();
    add_(y1, x, 0.5f);
    axpby_(y2, 2.0f, x, -0.25f);
    scale_(y3, 3.0f);
    add_scalar_(y4, 0.75f);
    addcmul_(y5, a, b, -0.5f);
    addcdiv_(y6, a, pos, 1.5f);
    fill_(y7, 9.0f);
    for (int64_t i = 0; i < n; ++i) {
      const float y = at(y0, i);
      EXPECT_FLOAT_EQ(at(y1, i), y + 0.5f * at(x, i));
      EXPECT_FLOAT_EQ(at(y2, i), 2.0f * at(x, i) - 0.25f * y);
      EXPECT_FLOAT_EQ(at(y3, i), 3.0f * y);
      EXPECT_FLOAT_EQ(at(y4, i), y + 0.75f);
      EXPECT_NEAR(at(y5, i), y - 0.5f * at(a, i) * at(b, i), 1e-6);
      EXPECT_NEAR(at(y6, i), y + 1.5f * at(a, i) / at(pos, i), 1e-6);
      EXPECT_EQ(at(y7, i), 9.0f);
    }
  }
  const Tensor y = wavy({4});
  add_(y, y, 1.0f);  // y += y: the same storage, exactly
  EXPECT_FLOAT_EQ(at(y, 1), 2.0f * at(wavy({4}), 1));
  EXPECT_THROW(add_(y, y.reshape({2, 2}).rows(1, 1).reshape({2}), 1.0f), ConfigError);
  EXPECT_THROW(addcmul_(y, y, wavy({4}), 1.0f), ConfigError);
}

TEST(TensorElementwise, CopyBetweenShapesWithTheSameCount) {
  const Tensor src = wavy({2, 3});
  const Tensor dst = Tensor::zeros({6});
  copy_(dst, src);
  EXPECT_EQ(dst.to_vector(), src.to_vector());
  EXPECT_THROW(copy_(Tensor::zeros({5}), src), ConfigError);
}

// ---- Broadcasting and reductions ------------------------------------------------------

TEST(TensorReduce, RowBroadcastsAndSumsMatchNaiveLoops) {
  const int64_t rows = 7, cols = 5;
  const Tensor x = wavy({rows, cols}), row = wavy({cols}, 1.0f);
  const Tensor added = add_rows(x, row), repeated = broadcast_rows(row, rows);
  const Tensor col_sums = sum_rows(x), total = sum(x), average = mean(x);
  double all = 0;
  for (int64_t j = 0; j < cols; ++j) {
    double s = 0;
    for (int64_t i = 0; i < rows; ++i) {
      EXPECT_FLOAT_EQ(at(added, i * cols + j), at(x, i * cols + j) + at(row, j));
      EXPECT_EQ(at(repeated, i * cols + j), at(row, j));
      s += at(x, i * cols + j);
    }
    EXPECT_NEAR(at(col_sums, j), s, 1e-5);
    all += s;
  }
  EXPECT_NEAR(total.item(), all, 1e-5);
  EXPECT_NEAR(average.item(), all / (rows * cols), 1e-6);
  EXPECT_EQ(total.shape(), Shape{});
  EXPECT_EQ(sum(Tensor::zeros({0})).item(), 0.0f);
  EXPECT_THROW(mean(Tensor::zeros({0})), ConfigError);
  EXPECT_THROW(add_rows(x, wavy({cols + 1})), ConfigError);
  // A 3-D tensor's rows are all of its leading dimensions.
  EXPECT_EQ(sum_rows(wavy({2, 3, 4})).shape(), Shape{4});
}

TEST(TensorReduce, ExpandScalarAndTranspose) {
  const Tensor e = expand_scalar(Tensor::scalar(3.0f), {2, 3}, 0.5f);
  EXPECT_EQ(e.to_vector(), std::vector<float>(6, 1.5f));
  const Tensor x = wavy({37, 41});  // larger than one 32x32 tile, not a multiple of it
  const Tensor t = transpose(x);
  ASSERT_EQ(t.shape(), (Shape{41, 37}));
  for (int64_t i = 0; i < 37; ++i) {
    for (int64_t j = 0; j < 41; ++j) ASSERT_EQ(at(t, j * 37 + i), at(x, i * 41 + j));
  }
}

// ---- Softmax family and losses -----------------------------------------------------------

TEST(TensorSoftmax, SoftmaxAndLogSoftmaxAreStableAndRight) {
  const int64_t rows = 4, cols = 6;
  Tensor x = wavy({rows, cols}, 0.0f, 3.0f);
  x.data()[0] = 1000.0f;  // would overflow exp without the max subtraction
  const Tensor p = softmax_forward(x), lp = log_softmax_forward(x);
  for (int64_t i = 0; i < rows; ++i) {
    double max = -1e30, z = 0;
    for (int64_t j = 0; j < cols; ++j) max = std::max<double>(max, at(x, i * cols + j));
    for (int64_t j = 0; j < cols; ++j) z += std::exp(at(x, i * cols + j) - max);
    for (int64_t j = 0; j < cols; ++j) {
      const double want_log = at(x, i * cols + j) - max - std::log(z);
      EXPECT_NEAR(at(lp, i * cols + j), want_log, 1e-6 * std::max(1.0, std::fabs(want_log)));
      EXPECT_NEAR(at(p, i * cols + j), std::exp(want_log), 1e-6);
    }
  }
}

TEST(TensorSoftmax, LogSoftmaxBackwardMatchesItsFormula) {
  const int64_t rows = 3, cols = 5;
  const Tensor out = log_softmax_forward(wavy({rows, cols}));
  const Tensor g = wavy({rows, cols}, 1.0f);
  const Tensor gi = log_softmax_backward(g, out);
  for (int64_t i = 0; i < rows; ++i) {
    double s = 0;
    for (int64_t j = 0; j < cols; ++j) s += at(g, i * cols + j);
    for (int64_t j = 0; j < cols; ++j) {
      const double want = at(g, i * cols + j) - std::exp(at(out, i * cols + j)) * s;
      EXPECT_NEAR(at(gi, i * cols + j), want, 1e-6);
    }
  }
}

TEST(TensorSoftmax, NllLossPicksTheTargetsAndRejectsBadOnes) {
  const int64_t rows = 5, cols = 4;
  const Tensor logp = wavy({rows, cols});
  Tensor targets = Tensor::empty({rows});
  for (int64_t i = 0; i < rows; ++i) targets.data()[i] = static_cast<float>((3 * i + 1) % cols);
  double want = 0;
  for (int64_t i = 0; i < rows; ++i) want -= at(logp, i * cols + (3 * i + 1) % cols);
  EXPECT_NEAR(nll_loss_forward(logp, targets).item(), want / rows, 1e-6);
  const Tensor g = nll_loss_backward(Tensor::scalar(2.0f), targets, cols);
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      EXPECT_EQ(at(g, i * cols + j), j == (3 * i + 1) % cols ? -2.0f / rows : 0.0f);
    }
  }
  targets.data()[2] = 4.0f;
  EXPECT_THROW(nll_loss_forward(logp, targets), ConfigError);
  targets.data()[2] = 1.5f;
  EXPECT_THROW(nll_loss_forward(logp, targets), ConfigError);
  EXPECT_THROW(nll_loss_forward(logp, Tensor::zeros({rows + 1})), ConfigError);
}

TEST(TensorSoftmax, ArgmaxTakesTheFirstOfEqualMaxima) {
  const Tensor x = Tensor::from_vector({3, 4}, {1, 5, 5, 2, -1, -3, -2, -1, 0, 0, 0, 7});
  EXPECT_EQ(argmax_rows(x).to_vector(), (std::vector<float>{1, 0, 3}));
}

// ---- Data movement ---------------------------------------------------------------------

TEST(TensorGather, GatherRowsStacksTheChosenRows) {
  const Tensor src = wavy({6, 3});
  const std::vector<int64_t> idx{4, 0, 4, 5};
  const Tensor out = gather_rows(src, idx);
  ASSERT_EQ(out.shape(), (Shape{4, 3}));
  for (size_t r = 0; r < idx.size(); ++r) {
    for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(at(out, r * 3 + j), at(src, idx[r] * 3 + j));
  }
  const std::vector<int64_t> bad{6};
  EXPECT_THROW(gather_rows(src, bad), ConfigError);
  EXPECT_EQ(gather_rows(src, {}).shape(), (Shape{0, 3}));
}

TEST(TensorGather, MaxAbsDiff) {
  EXPECT_EQ(
      max_abs_diff(Tensor::from_vector({3}, {1, 2, 3}), Tensor::from_vector({3}, {1, 2.5f, 2})),
      1.0f);
  EXPECT_TRUE(std::isnan(max_abs_diff(Tensor::from_vector({1}, {NAN}), Tensor::zeros({1}))));
}

// ---- CUDA (where a GPU is present) -------------------------------------------------------

TEST(TensorCuda, WithoutAGpuCudaTensorsAreClearErrors) {
  if (cuda_available()) GTEST_SKIP() << "a GPU is present";
  EXPECT_THROW(Tensor::zeros({4}, Device::cuda), Error);
}

// cuBLAS is opened at the first matrix product on a GPU, not at the start of every
// process (tensor_kernels_cuda.cu): it is not mapped before, and it opens, with the three
// functions the kernels call, on a machine without a GPU too.
bool cublas_is_mapped() {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    if (line.find("libcublas") != std::string::npos) return true;
  }
  return false;
}

TEST(TensorCuda, CublasIsOpenedAtFirstUseNotAtStart) {
#if COURSE_HAVE_CUDA
  EXPECT_FALSE(cublas_is_mapped()) << "cuBLAS was loaded at the start: is it linked again?";
  cuda_open_blas();
  EXPECT_TRUE(cublas_is_mapped());
#else
  EXPECT_THROW(cuda_open_blas(), ConfigError);
#endif
}

TEST(TensorCuda, EveryOpMatchesTheCpu) {
  if (!cuda_available()) GTEST_SKIP() << "no CUDA GPU on this machine";
  const Device gpu = Device::cuda;
  const auto same = [](const Tensor& cpu, const Tensor& cuda, float tol) {
    EXPECT_EQ(cpu.shape(), cuda.shape());
    EXPECT_LE(max_abs_diff(cpu, cuda.to(Device::cpu)), tol);
  };
  const Tensor a = wavy({33, 17}), b = wavy({17, 9}, 1.0f), c = wavy({33, 17}, 2.0f);
  Tensor pos = wavy({33, 17}, 3.0f);
  for (float& v : pos.span()) v += 1.5f;
  const Tensor ga = a.to(gpu), gb = b.to(gpu), gc = c.to(gpu), gp = pos.to(gpu);
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const Tensor x = ta ? transpose(a) : a, y = tb ? transpose(b) : b;
      same(matmul(x, y, ta, tb), matmul(x.to(gpu), y.to(gpu), ta, tb), 1e-4f);
    }
  }
  same(add(a, c), add(ga, gc), 1e-6f);
  same(sub(a, c), sub(ga, gc), 1e-6f);
  same(mul(a, c), mul(ga, gc), 1e-6f);
  same(div(a, pos), div(ga, gp), 1e-6f);
  same(neg(a), neg(ga), 0.0f);
  same(exp(a), exp(ga), 1e-5f);
  same(log(pos), log(gp), 1e-5f);
  same(sqrt(pos), sqrt(gp), 1e-6f);
  same(scale(a, 3.0f), scale(ga, 3.0f), 1e-6f);
  same(relu_forward(a), relu_forward(ga), 0.0f);
  same(relu_backward(c, a), relu_backward(gc, ga), 0.0f);
  same(add_rows(a, a.rows(0, 1).reshape({17})), add_rows(ga, ga.rows(0, 1).reshape({17})), 1e-6f);
  same(broadcast_rows(b.rows(0, 1).reshape({9}), 5), broadcast_rows(gb.rows(0, 1).reshape({9}), 5),
       0.0f);
  same(sum_rows(a), sum_rows(ga), 1e-5f);
  same(sum(a), sum(ga), 1e-4f);
  same(mean(a), mean(ga), 1e-6f);
  same(expand_scalar(sum(a), {3, 2}, 0.5f), expand_scalar(sum(ga), {3, 2}, 0.5f), 1e-4f);
  same(transpose(a), transpose(ga), 0.0f);
  same(softmax_forward(a), softmax_forward(ga), 1e-6f);
  const Tensor lp = log_softmax_forward(a);
  same(lp, log_softmax_forward(ga), 1e-5f);
  same(log_softmax_backward(c, lp), log_softmax_backward(gc, lp.to(gpu)), 1e-5f);
  Tensor t = Tensor::empty({33});
  for (int64_t i = 0; i < 33; ++i) t.data()[i] = static_cast<float>((5 * i) % 17);
  same(nll_loss_forward(lp, t), nll_loss_forward(lp.to(gpu), t.to(gpu)), 1e-5f);
  same(nll_loss_backward(Tensor::scalar(1.5f), t, 17),
       nll_loss_backward(Tensor::scalar(1.5f, gpu), t.to(gpu), 17), 0.0f);
  same(argmax_rows(a), argmax_rows(ga), 0.0f);
  Tensor y = c.clone(), gy = gc.clone();
  axpby_(y, 0.5f, a, 2.0f);
  axpby_(gy, 0.5f, ga, 2.0f);
  addcmul_(y, a, c, 0.3f);
  addcmul_(gy, ga, gc, 0.3f);
  addcdiv_(y, a, pos, -0.7f);
  addcdiv_(gy, ga, gp, -0.7f);
  add_scalar_(y, 0.25f);
  add_scalar_(gy, 0.25f);
  same(y, gy, 1e-5f);
  EXPECT_THROW(add(a, ga), ConfigError);
  EXPECT_THROW(ga.data(), ConfigError);
}

}  // namespace
}  // namespace course
