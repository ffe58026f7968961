// activation_ledger.cpp: lesson 18, given: the activation formula and its measurement
// (see activation_ledger.h).
#include "activation_ledger.h"

#include "error.h"
#include "ops.h"

namespace course {

ActivationBytes gpt_activation_formula(const GptConfig& c, int64_t batch, int64_t seq,
                                       RecomputePolicy policy, Precision precision) {
  const int64_t bs = batch * seq, bsh = bs * c.hidden, a = c.heads;
  const bool naive = c.attention == AttentionKind::naive;
  const int64_t core_extra = naive ? a * batch * seq * seq : bsh + a * bs;  // beyond q, k, v
  const int64_t block_none = 16 * bsh + 4 * bs + core_extra;
  ActivationBytes f;
  f.layers = c.layers;
  f.outside = 2 * bsh + bs * c.vocab + 5 * bs;
  switch (policy) {
    case RecomputePolicy::none:
      f.per_block = block_none;
      break;
    case RecomputePolicy::selective:
      f.per_block = 16 * bsh + 4 * bs;
      f.peak_extra = core_extra + 3 * bsh;  // the core's q, k, v leaves' graph, recorded again
      break;
    case RecomputePolicy::full:
      f.per_block = bsh;
      f.peak_extra = block_none;
      break;
  }
  const int64_t e = element_bytes(precision);
  f.per_block *= e;
  f.outside *= e;
  f.peak_extra *= e;
  return f;
}

SavedTensorLedger measure_gpt_activations(Gpt& model, const TokenBatch& batch,
                                          RecomputePolicy policy, Precision precision) {
  install_model_seams(model, policy, precision);
  const Variable logits = cast(model.forward(Variable(batch.inputs)), precision);
  const Variable loss = cross_entropy(logits, batch.targets);
  std::vector<Tensor> params;
  for (const Variable& p : model.parameters()) params.push_back(p.data());
  return saved_tensor_ledger(loss, params, element_bytes(precision));
}

TokenBatch counting_batch(int64_t vocab, int64_t batch, int64_t seq) {
  if (vocab < 1 || batch < 1 || seq < 1) {
    throw ConfigError("counting_batch: vocab, batch and seq must be >= 1");
  }
  TokenBatch b{Tensor::empty({batch, seq}), Tensor::empty({batch * seq})};
  for (int64_t i = 0; i < batch * seq; ++i) {
    b.inputs.data()[i] = static_cast<float>((i * 7 + 3) % vocab);
    b.targets.data()[i] = static_cast<float>((i * 7 + 10) % vocab);
  }
  return b;
}

}  // namespace course
