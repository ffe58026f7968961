// recompute_policy.cpp: lesson 18, given: the policies as gpt.h's seams (see
// recompute_policy.h).
#include "recompute_policy.h"

#include "attention_op.h"
#include "error.h"
#include "recompute.h"

namespace course {

RecomputePolicy parse_recompute_policy(const std::string& name) {
  if (name == "none") return RecomputePolicy::none;
  if (name == "selective") return RecomputePolicy::selective;
  if (name == "full") return RecomputePolicy::full;
  throw ConfigError("recompute policy \"" + name + "\": use none, selective or full");
}

const char* recompute_policy_name(RecomputePolicy policy) {
  switch (policy) {
    case RecomputePolicy::none:
      return "none";
    case RecomputePolicy::selective:
      return "selective";
    case RecomputePolicy::full:
      return "full";
  }
  return "?";
}

void install_model_seams(Gpt& model, RecomputePolicy policy, Precision precision) {
  const bool half = precision != Precision::fp32;
  const GptConfig config = model.config();
  const AttentionKind kind = config.attention;
  const AttentionTiles tiles = config.tiles;
  AttentionCore core;
  if (half || policy == RecomputePolicy::selective) {
    const CheckpointFn run_core = [=](const std::vector<Variable>& in) {
      return cast(causal_self_attention(cast(in[0], precision), cast(in[1], precision),
                                        cast(in[2], precision), kind, tiles),
                  precision);
    };
    if (policy == RecomputePolicy::selective) {
      core = [run_core](const Variable& q, const Variable& k, const Variable& v) {
        return checkpoint(run_core, {q, k, v});
      };
    } else {
      core = [run_core](const Variable& q, const Variable& k, const Variable& v) {
        return run_core({q, k, v});
      };
    }
  }
  model.set_attention_core(core);

  BlockRunner runner;
  if (half || policy == RecomputePolicy::full) {
    const auto run_block = [precision](GptBlock& block, const Variable& x) {
      return cast(block.forward(cast(x, precision)), precision);
    };
    if (policy == RecomputePolicy::full) {
      runner = [run_block](GptBlock& block, const Variable& x) {
        GptBlock* b = &block;  // the model outlives its graph's backward
        return checkpoint(
            [b, run_block](const std::vector<Variable>& in) { return run_block(*b, in[0]); }, {x});
      };
    } else {
      runner = run_block;
    }
  }
  model.set_block_runner(runner);
}

}  // namespace course
