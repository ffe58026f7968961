// tensor_cuda_test.cpp: every CUDA kernel against its CPU twin, on random shapes.
//
// Each op runs on the same random inputs on Device::cpu and Device::cuda; the results must
// agree within a tolerance that fits the op (exact for copies and maxima, a few ulps
// scaled by the length for sums and products). Shapes are drawn at random from sizes that
// stress the launch arithmetic: 0 (empty), 1, odd sizes, sizes just past a block (257), and
// one tensor past the grid (over 4096 x 256 elements, so the grid-stride loops go around).
//
// Without a GPU (or in a build without CUDA) the comparisons report "skipped: no CUDA
// device"; the device plumbing tests (cuda_device_count, cuda_set_device, parse_device,
// device_span) run everywhere.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "error.h"
#include "tensor.h"
#include "tensor_ops.h"

namespace course {
namespace {

#define SKIP_WITHOUT_CUDA() \
  if (!cuda_available()) GTEST_SKIP() << "skipped: no CUDA device"

Tensor random_tensor(const Shape& shape, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  Tensor t = Tensor::empty(shape);
  for (float& v : t.span()) v = dist(rng);
  return t;
}

int64_t pick(std::mt19937& rng, std::initializer_list<int64_t> choices) {
  std::uniform_int_distribution<size_t> d(0, choices.size() - 1);
  return *(choices.begin() + d(rng));
}

// The sizes the shapes are drawn from (see the top of the file).
int64_t random_dim(std::mt19937& rng) {
  return pick(rng, {0, 1, 3, 7, 31, 64, 257, 1000});
}

// CPU result vs the CUDA result brought back; the tolerance is relative to the largest
// CPU magnitude (at least 1).
void expect_same(const Tensor& cpu, const Tensor& cuda, float tol, const std::string& what) {
  ASSERT_EQ(cuda.device(), Device::cuda) << what;
  ASSERT_EQ(cpu.shape(), cuda.shape()) << what;
  float scale = 1.0f;
  for (float v : cpu.to_vector()) scale = std::max(scale, std::fabs(v));
  EXPECT_LE(max_abs_diff(cpu, cuda.to(Device::cpu)), tol * scale) << what;
}

Tensor gpu(const Tensor& t) {
  return t.to(Device::cuda);
}

// ---- device plumbing (runs everywhere) --------------------------------------------------

TEST(TensorDevice, ParseDeviceNamesBothAndRejectsOthers) {
  EXPECT_EQ(parse_device("cpu"), Device::cpu);
  EXPECT_EQ(parse_device("cuda"), Device::cuda);
  EXPECT_THROW(parse_device("gpu"), ConfigError);
  EXPECT_THROW(parse_device(""), ConfigError);
}

TEST(TensorDevice, DeviceSpanOfACpuTensorIsItsSpan) {
  const Tensor t = Tensor::from_vector({2, 3}, {1, 2, 3, 4, 5, 6});
  const Tensor row = t.rows(1, 1);
  EXPECT_EQ(row.device_span().data(), row.span().data());
  EXPECT_EQ(row.device_span().size(), 3u);
  EXPECT_EQ(row.device_span()[0], 4.0f);
  EXPECT_THROW(Tensor().device_span(), ConfigError);
}

TEST(TensorDevice, WithoutAGpuSetDeviceIsAClearError) {
  if (cuda_available()) GTEST_SKIP() << "a GPU is present";
  EXPECT_EQ(cuda_device_count(), 0);
  try {
    cuda_set_device(0);
    FAIL() << "cuda_set_device(0) succeeded without a GPU";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--device cpu"), std::string::npos) << e.what();
  }
}

TEST(TensorDevice, SetDeviceRefusesAGpuPastTheCount) {
  SKIP_WITHOUT_CUDA();
  const int count = cuda_device_count();
  EXPECT_GE(count, 1);
  EXPECT_NO_THROW(cuda_set_device(0));
  EXPECT_THROW(cuda_set_device(count), ConfigError);
  EXPECT_THROW(cuda_set_device(-1), ConfigError);
}

TEST(TensorDevice, DeviceSpanOfACudaTensorIsDeviceMemory) {
  SKIP_WITHOUT_CUDA();
  const Tensor t = Tensor::full({5}, 2.0f, Device::cuda);
  EXPECT_EQ(t.device_span().size(), 5u);
  EXPECT_EQ(t.device_span().data(), t.raw());
  EXPECT_THROW(t.span(), ConfigError);
}

TEST(TensorDevice, WithoutAGpuMoveToCudaFailsAndLeavesTheTensorWhereItWas) {
  if (cuda_available()) GTEST_SKIP() << "a GPU is present";
  const Tensor t = Tensor::from_vector({3}, {1, 2, 3});
  EXPECT_NO_THROW(t.move_to_(Device::cpu));  // already there: a no-op
  EXPECT_THROW(t.move_to_(Device::cuda), Error);
  EXPECT_EQ(t.device(), Device::cpu);
  EXPECT_EQ(t.to_vector(), (std::vector<float>{1, 2, 3}));
}

TEST(TensorDevice, MoveToMovesEveryHandleAndViewOfTheStorage) {
  SKIP_WITHOUT_CUDA();
  const Tensor t = Tensor::from_vector({2, 2}, {1, 2, 3, 4});
  // A second handle of the same storage is the point of the test, not a needless copy.
  const Tensor handle = t;  // NOLINT(performance-unnecessary-copy-initialization)
  const Tensor view = t.rows(1, 1);
  t.move_to_(Device::cuda);
  EXPECT_EQ(handle.device(), Device::cuda);
  EXPECT_EQ(view.device(), Device::cuda);
  EXPECT_EQ(view.to_vector(), (std::vector<float>{3, 4}));
  fill_(view, 9.0f);  // a write through the view shows in the whole tensor
  view.move_to_(Device::cpu);
  EXPECT_EQ(t.device(), Device::cpu);
  EXPECT_EQ(t.to_vector(), (std::vector<float>{1, 2, 9, 9}));
}

// ---- every kernel vs its CPU twin --------------------------------------------------------

TEST(TensorCudaRandom, ElementwiseOpsMatchTheCpu) {
  SKIP_WITHOUT_CUDA();
  std::mt19937 rng(7);
  std::vector<Shape> shapes = {{0}, {1}, {1, 0}, {4097}, {1048576 + 4099}};
  for (int trial = 0; trial < 6; ++trial) shapes.push_back({random_dim(rng), random_dim(rng)});
  for (const Shape& shape : shapes) {
    const std::string at = "shape " + shape_str(shape);
    const Tensor a = random_tensor(shape, rng), b = random_tensor(shape, rng);
    const Tensor pos = random_tensor(shape, rng, 0.5f, 2.0f);
    const Tensor ga = gpu(a), gb = gpu(b), gp = gpu(pos);
    expect_same(add(a, b), add(ga, gb), 1e-6f, "add, " + at);
    expect_same(sub(a, b), sub(ga, gb), 1e-6f, "sub, " + at);
    expect_same(mul(a, b), mul(ga, gb), 1e-6f, "mul, " + at);
    expect_same(div(a, pos), div(ga, gp), 1e-6f, "div, " + at);
    expect_same(neg(a), neg(ga), 0.0f, "neg, " + at);
    expect_same(exp(a), exp(ga), 1e-6f, "exp, " + at);
    expect_same(log(pos), log(gp), 1e-6f, "log, " + at);
    expect_same(sqrt(pos), sqrt(gp), 1e-6f, "sqrt, " + at);
    expect_same(scale(a, -2.5f), scale(ga, -2.5f), 1e-6f, "scale, " + at);
    expect_same(relu_forward(a), relu_forward(ga), 0.0f, "relu_forward, " + at);
    expect_same(relu_backward(b, a), relu_backward(gb, ga), 0.0f, "relu_backward, " + at);
    expect_same(sum(a), sum(ga), 1e-5f * std::sqrt(float(a.numel()) + 1), "sum, " + at);
    if (a.numel() == 0) {  // the mean of nothing is an error on either device
      EXPECT_THROW(mean(a), ConfigError) << at;
      EXPECT_THROW(mean(ga), ConfigError) << at;
    } else {
      expect_same(mean(a), mean(ga), 1e-5f, "mean, " + at);
    }
    Tensor y = b.clone(), gy = gb.clone();
    axpby_(y, 0.5f, a, 2.0f);
    axpby_(gy, 0.5f, ga, 2.0f);
    addcmul_(y, a, b, 0.3f);
    addcmul_(gy, ga, gb, 0.3f);
    addcdiv_(y, a, pos, -0.7f);
    addcdiv_(gy, ga, gp, -0.7f);
    add_scalar_(y, 0.25f);
    add_scalar_(gy, 0.25f);
    scale_(y, 1.5f);
    scale_(gy, 1.5f);
    expect_same(y, gy, 1e-5f, "axpby_/addcmul_/addcdiv_/add_scalar_/scale_, " + at);
    fill_(y, 3.0f);
    fill_(gy, 3.0f);
    expect_same(y, gy, 0.0f, "fill_, " + at);
    copy_(gy, ga);
    expect_same(a, gy, 0.0f, "copy_, " + at);
  }
}

TEST(TensorCudaRandom, MatmulMatchesTheCpuInEveryTransposition) {
  SKIP_WITHOUT_CUDA();
  std::mt19937 rng(11);
  for (int trial = 0; trial < 8; ++trial) {
    const int64_t m = random_dim(rng), n = random_dim(rng);
    const int64_t k = pick(rng, {1, 3, 17, 130});
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        const Tensor a = random_tensor(ta ? Shape{k, m} : Shape{m, k}, rng);
        const Tensor b = random_tensor(tb ? Shape{n, k} : Shape{k, n}, rng);
        const std::string at = "matmul m=" + std::to_string(m) + " n=" + std::to_string(n) +
                               " k=" + std::to_string(k) + " trans " + std::to_string(ta) +
                               std::to_string(tb);
        expect_same(matmul(a, b, ta, tb), matmul(gpu(a), gpu(b), ta, tb),
                    1e-5f * std::sqrt(float(k)), at);
      }
    }
  }
}

TEST(TensorCudaRandom, RowOpsAndTheSoftmaxFamilyMatchTheCpu) {
  SKIP_WITHOUT_CUDA();
  std::mt19937 rng(13);
  for (int trial = 0; trial < 10; ++trial) {
    const int64_t rows = random_dim(rng);
    const int64_t cols = pick(rng, {1, 2, 10, 33, 257});
    const std::string at = "[" + std::to_string(rows) + ", " + std::to_string(cols) + "]";
    const Tensor x = random_tensor({rows, cols}, rng, -4.0f, 4.0f);
    const Tensor g = random_tensor({rows, cols}, rng);
    const Tensor row = random_tensor({cols}, rng);
    const Tensor gx = gpu(x), gg = gpu(g), grow = gpu(row);
    expect_same(add_rows(x, row), add_rows(gx, grow), 1e-6f, "add_rows " + at);
    expect_same(broadcast_rows(row, rows), broadcast_rows(grow, rows), 0.0f, "broadcast " + at);
    expect_same(sum_rows(x), sum_rows(gx), 1e-5f * std::sqrt(float(rows) + 1), "sum_rows " + at);
    expect_same(transpose(x), transpose(gx), 0.0f, "transpose " + at);
    expect_same(softmax_forward(x), softmax_forward(gx), 1e-6f, "softmax " + at);
    const Tensor lp = log_softmax_forward(x);
    expect_same(lp, log_softmax_forward(gx), 1e-5f, "log_softmax " + at);
    expect_same(log_softmax_backward(g, lp), log_softmax_backward(gg, gpu(lp)), 1e-5f,
                "log_softmax_backward " + at);
    expect_same(argmax_rows(x), argmax_rows(gx), 0.0f, "argmax_rows " + at);
    Tensor targets = Tensor::empty({rows});
    std::uniform_int_distribution<int64_t> cls(0, cols - 1);
    for (float& t : targets.span()) t = static_cast<float>(cls(rng));
    if (rows > 0) {  // the mean over zero rows is 0/0 on both devices
      expect_same(nll_loss_forward(lp, targets), nll_loss_forward(gpu(lp), gpu(targets)), 1e-5f,
                  "nll_loss_forward " + at);
    }
    expect_same(nll_loss_backward(Tensor::scalar(1.5f), targets, cols),
                nll_loss_backward(Tensor::scalar(1.5f, Device::cuda), gpu(targets), cols), 1e-6f,
                "nll_loss_backward " + at);
    expect_same(expand_scalar(sum(x), {rows, 3}, 0.5f), expand_scalar(sum(gx), {rows, 3}, 0.5f),
                1e-4f, "expand_scalar " + at);
  }
}

TEST(TensorCudaRandom, CopiesBetweenDevicesRoundTripExactly) {
  SKIP_WITHOUT_CUDA();
  std::mt19937 rng(17);
  for (int trial = 0; trial < 8; ++trial) {
    const Tensor a = random_tensor({random_dim(rng), random_dim(rng)}, rng);
    const Tensor g = gpu(a);
    EXPECT_EQ(g.to_vector(), a.to_vector());
    EXPECT_EQ(g.clone().to(Device::cpu).to_vector(), a.to_vector());
    if (a.numel() > 0) {
      EXPECT_EQ(g.rows(0, 1).to_vector(), a.rows(0, 1).to_vector());
    }
  }
}

}  // namespace
}  // namespace course
