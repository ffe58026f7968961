// pp_equivalence.cpp: see pp_equivalence.h.
#include "pp_equivalence.h"

#include <algorithm>
#include <memory>

#include "error.h"
#include "ops.h"
#include "optimizer.h"
#include "rng.h"
#include "sequential.h"
#include "stage_runner.h"
#include "tensor_ops.h"

namespace course {

double compare_with_one_process(const DeviceMesh& mesh, const EquivalenceCase& c) {
  const int replicas = mesh.size("dp");
  const std::vector<int> bounds =
      partition_layers(layer_parameter_counts(c.sizes), mesh.size("pp"));
  StageRunner runner(mesh, c.sizes, c.seed, c.schedule, c.micro_batches, c.micro_batch_rows,
                     bounds);
  Sgd pipeline_sgd(runner.module().parameters(), {.lr = c.lr});
  Rng rng(c.seed);
  const std::shared_ptr<Sequential> whole = make_mlp(c.sizes, rng);
  Sgd whole_sgd(whole->parameters(), {.lr = c.lr});
  const int64_t replica_rows = c.micro_batches * c.micro_batch_rows;
  const int64_t rows = replicas * replica_rows;
  const int64_t in = c.sizes.front();
  const int64_t classes = c.sizes.back();
  for (int t = 0; t < c.steps; ++t) {
    std::vector<float> x(static_cast<size_t>(rows * in));
    std::vector<float> y(static_cast<size_t>(rows));
    for (size_t i = 0; i < x.size(); ++i) {
      x[i] = static_cast<float>(static_cast<int64_t>((i * 37 + t * 11) % 101) - 50) / 25.0f;
    }
    for (int64_t r = 0; r < rows; ++r) y[r] = static_cast<float>((r * 7 + t * 3) % classes);
    const Batch batch{Tensor::from_vector({rows, in}, x), Tensor::from_vector({rows}, y)};
    const int64_t first = mesh.coordinate("dp") * replica_rows;
    pipeline_sgd.zero_grad();
    runner.step({batch.inputs.rows(first, replica_rows), batch.targets.rows(first, replica_rows)});
    pipeline_sgd.step();
    whole_sgd.zero_grad();
    cross_entropy(whole->forward(Variable(batch.inputs)), batch.targets).backward();
    whole_sgd.step();
  }
  std::vector<float> worst = {0.0f};
  const auto whole_params = whole->named_parameters();
  for (const auto& named : runner.module().named_parameters()) {
    const std::string& name = named.first;
    const auto& p = named.second;
    const auto it = std::find_if(whole_params.begin(), whole_params.end(),
                                 [&](const auto& np) { return np.first == name; });
    if (it == whole_params.end())
      throw ConfigError("the stage's parameter " + name + " is not the model's");
    worst[0] = std::max(worst[0], max_abs_diff(p.data(), it->second.data()));
  }
  // The largest over the pipeline's stages, then over the replicas: over every rank.
  mesh.group("pp")->all_reduce(worst, ReduceOp::MAX);
  mesh.group("dp")->all_reduce(worst, ReduceOp::MAX);
  return worst[0];
}

}  // namespace course
