// device_test.cpp: lesson 07 on the GPU: a few training steps on CUDA equal the same steps
// on the CPU, and the device helpers of training_options.h.
//
// Two models are built from one seed; one is moved to the GPU (move_module_to). Both take
// the same steps on the same batches (SGD with momentum, then Adam); their parameters and
// losses must agree within float rounding. Without a GPU those report "skipped: no CUDA
// device"; the CPU side (select_device's errors, move_module_to on the CPU) runs everywhere.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "data_loader.h"
#include "error.h"
#include "rng.h"
#include "sequential.h"
#include "tensor_ops.h"
#include "trainer.h"
#include "training_options.h"

namespace course {
namespace {

#define SKIP_WITHOUT_CUDA() \
  if (!cuda_available()) GTEST_SKIP() << "skipped: no CUDA device"

// 24 examples of 12 features in 5 classes; rank- and index-dependent values.
Dataset toy_data() {
  Dataset d;
  d.classes = 5;
  d.inputs = Tensor::empty({24, 12});
  d.targets = Tensor::empty({24});
  for (int64_t i = 0; i < 24; ++i) {
    for (int64_t j = 0; j < 12; ++j) {
      d.inputs.data()[i * 12 + j] = static_cast<float>(std::sin(0.7 * i + 0.3 * j));
    }
    d.targets.data()[i] = static_cast<float>((7 * i) % 5);
  }
  return d;
}

float max_param_diff(Module& a, Module& b) {
  const std::vector<Variable> pa = a.parameters(), pb = b.parameters();
  float worst = 0;
  for (size_t i = 0; i < pa.size(); ++i) {
    worst =
        std::max(worst, max_abs_diff(pa[i].data().to(Device::cpu), pb[i].data().to(Device::cpu)));
  }
  return worst;
}

TEST(DeviceTraining, CpuIsTheDefaultAndMovesNothing) {
  EXPECT_EQ(select_device("cpu", 3), Device::cpu);
  EXPECT_THROW(select_device("tpu", 0), ConfigError);
  Rng rng(1);
  auto model = make_mlp({12, 9, 5}, rng);
  const float* before = model->parameters()[0].data().data();
  move_module_to(*model, Device::cpu);
  EXPECT_EQ(model->parameters()[0].data().data(), before);  // already there: no copy
}

TEST(DeviceTraining, WithoutAGpuDeviceCudaIsAClearError) {
  if (cuda_available()) GTEST_SKIP() << "a GPU is present";
  try {
    select_device("cuda", 0);
    FAIL() << "select_device(cuda) succeeded without a GPU";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("--device cpu"), std::string::npos) << e.what();
  }
}

TEST(DeviceTraining, MoveModuleToPutsEveryParameterOnTheGpu) {
  SKIP_WITHOUT_CUDA();
  select_device("cuda", 0);
  Rng rng(2);
  auto model = make_mlp({12, 9, 5}, rng);
  const NamedTensors before = model->state_dict();
  std::vector<std::vector<float>> values;
  for (const auto& [name, t] : before) values.push_back(t.to_vector());
  move_module_to(*model, Device::cuda);
  size_t i = 0;
  for (const auto& [name, t] : model->state_dict()) {
    EXPECT_EQ(t.device(), Device::cuda) << name;
    EXPECT_EQ(t.to_vector(), values[i++]) << name;
  }
}

TEST(DeviceTraining, AFewCudaStepsEqualTheCpu) {
  SKIP_WITHOUT_CUDA();
  select_device("cuda", 0);
  const Dataset data = toy_data();
  for (const std::string optimizer : {"sgd", "adam"}) {
    Rng rng_cpu(3), rng_gpu(3);
    auto cpu_model = make_mlp({12, 9, 5}, rng_cpu);
    auto gpu_model = make_mlp({12, 9, 5}, rng_gpu);
    move_module_to(*gpu_model, Device::cuda);
    TrainingOptions o;
    o.optimizer = optimizer;
    o.weight_decay = 1e-3f;
    auto cpu_opt = make_optimizer(o, cpu_model->parameters());
    auto gpu_opt = make_optimizer(o, gpu_model->parameters());
    DataLoader cpu_loader(data, 8, std::make_shared<RandomSampler>(data.size(), 5));
    DataLoader gpu_loader(data, 8, std::make_shared<RandomSampler>(data.size(), 5), false,
                          Device::cuda);
    for (int epoch = 0; epoch < 2; ++epoch) {
      cpu_loader.start_epoch(epoch);
      gpu_loader.start_epoch(epoch);
      while (std::optional<Batch> cb = cpu_loader.next()) {
        std::optional<Batch> gb = gpu_loader.next();
        ASSERT_TRUE(gb.has_value());
        ASSERT_EQ(gb->inputs.device(), Device::cuda);
        const StepResult rc = train_step(*cpu_model, *cpu_opt, *cb);
        const StepResult rg = train_step(*gpu_model, *gpu_opt, *gb);
        EXPECT_NEAR(rc.loss, rg.loss, 1e-4f) << optimizer << ", epoch " << epoch;
        EXPECT_EQ(rc.correct, rg.correct) << optimizer << ", epoch " << epoch;
      }
    }
    for (const Variable& p : gpu_model->parameters()) EXPECT_EQ(p.data().device(), Device::cuda);
    EXPECT_LE(max_param_diff(*cpu_model, *gpu_model), 1e-4f) << optimizer;
  }
}

}  // namespace
}  // namespace course
