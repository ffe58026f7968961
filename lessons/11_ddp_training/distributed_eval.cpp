// distributed_eval.cpp: lesson 11, exact distributed evaluation (given; see the header).
#include "distributed_eval.h"

#include <algorithm>

#include "distributed_sampler.h"
#include "tensor_ops.h"
#include "variable.h"

namespace course {

std::vector<int64_t> evaluation_indices(int64_t n, int world, int rank) {
  const std::vector<int64_t> padded =
      DistributedSampler(n, world, rank, /*shuffle=*/false).indices(0);
  std::vector<int64_t> mine;
  for (size_t k = 0; k < padded.size(); ++k) {
    const int64_t position = rank + static_cast<int64_t>(k) * world;  // stride N from rank
    if (position < n) mine.push_back(padded[k]);
  }
  return mine;
}

EvalStats evaluate_distributed(Module& model, const Dataset& data, ProcessGroup& pg,
                               int64_t batch_size) {
  NoGradGuard no_grad;
  const std::vector<int64_t> mine = evaluation_indices(data.size(), pg.size(), pg.rank());
  const std::vector<Variable> params = model.parameters();
  const Device device = params.empty() ? Device::cpu : params[0].device();  // batches go there
  double loss_sum = 0;
  int64_t correct = 0;
  for (size_t begin = 0; begin < mine.size(); begin += static_cast<size_t>(batch_size)) {
    const size_t end = std::min(mine.size(), begin + static_cast<size_t>(batch_size));
    const std::span<const int64_t> ids(mine.data() + begin, end - begin);
    const Tensor x = gather_rows(data.inputs, ids, device);
    const Tensor y = gather_rows(data.targets, ids, device);
    const Tensor logits = model.forward(Variable(x)).data();
    const std::vector<float> logp = log_softmax_forward(logits).to_vector();
    const std::vector<float> target = y.to_vector();
    const int64_t classes = logits.size(1);
    for (size_t i = 0; i < target.size(); ++i) {
      loss_sum -= logp[i * static_cast<size_t>(classes) + static_cast<size_t>(target[i])];
    }
    correct += count_correct(logits, y);
  }
  std::vector<float> sums{static_cast<float>(loss_sum), static_cast<float>(correct),
                          static_cast<float>(mine.size())};
  pg.all_reduce(sums, ReduceOp::SUM);
  EvalStats e;
  e.samples = static_cast<int64_t>(sums[2]);
  e.loss = sums[0] / std::max<double>(sums[2], 1);
  e.accuracy = sums[1] / std::max<double>(sums[2], 1);
  return e;
}

}  // namespace course
