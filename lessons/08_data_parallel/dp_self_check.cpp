// dp_self_check.cpp: lesson 08, given: the driver's self-check (see dp_self_check.h).
#include "dp_self_check.h"

#include <stdexcept>
#include <vector>

#include "device_pool.h"
#include "error.h"
#include "parallel_apply.h"
#include "scatter.h"
#include "sequential.h"
#include "tensor_ops.h"

namespace course {
namespace {

std::string format_sizes(const std::vector<int64_t>& sizes) {
  std::string text = "{";
  for (size_t i = 0; i < sizes.size(); ++i) text += (i ? ", " : "") + std::to_string(sizes[i]);
  return text + "}";
}

std::string check_chunk_sizes() {
  struct Case {
    int64_t batch;
    int devices;
    std::vector<int64_t> sizes;
  };
  const Case cases[] = {
      {129, 2, {65, 64}}, {10, 4, {3, 3, 3, 1}}, {2, 3, {1, 1}}, {128, 2, {64, 64}}};
  for (const Case& c : cases) {
    const std::vector<int64_t> got = scatter_chunk_sizes(c.batch, c.devices);
    if (got == c.sizes) continue;
    return "scatter_chunk_sizes(" + std::to_string(c.batch) + ", " + std::to_string(c.devices) +
           ") gave " + format_sizes(got) + ", expected " + format_sizes(c.sizes) +
           " (torch.chunk: chunks of ceil(batch / devices) rows, the last what is left; so "
           "there may be fewer chunks than devices)";
  }
  return "";
}

std::string check_scatter() {
  Tensor batch = Tensor::empty({10, 2});
  for (int64_t row = 0; row < 10; ++row) {
    batch.data()[2 * row] = batch.data()[2 * row + 1] = static_cast<float>(row);  // row i: i
  }
  const std::vector<Tensor> chunks = scatter(batch, 4);
  int64_t begin = 0;
  for (size_t k = 0; k < chunks.size(); ++k) {
    const float first = chunks[k].numel() > 0 ? chunks[k].to_vector()[0] : -1.0f;
    if (first != static_cast<float>(begin)) {
      return "scatter: chunk " + std::to_string(k) + " of 10 numbered rows on 4 devices starts " +
             "with row " + std::to_string(static_cast<int64_t>(first)) + ", expected row " +
             std::to_string(begin) + " (consecutive rows: chunk k begins where chunk k - 1 ended)";
    }
    begin += chunks[k].size(0);
  }
  return "";
}

std::string check_run_on_devices() {
  DevicePool pool(2);
  bool threw = false;
  try {
    run_on_devices(pool, {[] {}, [] { throw std::runtime_error("a test failure"); }}, "forward");
  } catch (const ReplicaError&) {
    threw = true;
  } catch (const std::exception& e) {
    return std::string("run_on_devices: device 1's task threw \"a test failure\"; expected a ") +
           "ReplicaError naming device 1, got: " + e.what();
  }
  if (!threw) {
    return "run_on_devices: device 1's task threw \"a test failure\" and run_on_devices "
           "returned normally: rethrow the lowest device's error as a ReplicaError";
  }
  std::vector<int> grad_on(2, -1);
  {
    NoGradGuard no_grad;
    run_on_devices(
        pool,
        {[&] { grad_on[0] = grad_mode_enabled(); }, [&] { grad_on[1] = grad_mode_enabled(); }},
        "forward");
  }
  if (grad_on[1] != 0) {
    return "run_on_devices: with gradients off in the caller (NoGradGuard), device 1's task "
           "ran with them on: grad mode is per thread, so each task takes the caller's";
  }
  return "";
}

std::string check_parallel_apply() {
  DevicePool pool(2);
  Rng rng0(11), rng1(12);
  const Replicas replicas{make_mlp({3, 2}, rng0), make_mlp({3, 2}, rng1)};
  const std::vector<Variable> inputs{
      Variable(Tensor::from_vector({1, 3}, {0.5f, -1.0f, 2.0f})),
      Variable(Tensor::from_vector({2, 3}, {1.5f, 0.25f, -0.75f, 3.0f, -2.0f, 0.125f}))};
  const std::vector<Variable> outputs = parallel_apply(pool, replicas, inputs);
  for (size_t k = 0; k < replicas.size(); ++k) {
    const Variable want = replicas[k]->forward(inputs[k]);
    if (k < outputs.size() && outputs[k].defined() &&
        max_abs_diff(outputs[k].data(), want.data()) <= 1e-6f) {
      continue;
    }
    return "parallel_apply: output " + std::to_string(k) + " is not replica " + std::to_string(k) +
           "'s forward of input " + std::to_string(k) +
           " (outputs[k] = replicas[k]->forward(inputs[k]), on device k)";
  }
  return "";
}

}  // namespace

std::string self_check_data_parallel() {
  for (const auto& check :
       {check_chunk_sizes, check_scatter, check_run_on_devices, check_parallel_apply}) {
    std::string problem = check();
    if (!problem.empty()) return problem;
  }
  return "";
}

}  // namespace course
