// cp_training.cpp: lesson 19, given: the GPT on a dp x cp x tp mesh (cp_training.h).
#include "cp_training.h"

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "attention_op.h"
#include "bench_table.h"
#include "error.h"
#include "grad_clip.h"
#include "naive_ddp.h"
#include "ops.h"
#include "ring_attention.h"
#include "tp_sequence.h"
#include "ulysses.h"

namespace course {

namespace {

// Rows [first, first + count) of a row-major [rows, ...] tensor.
Tensor rows_of(const Tensor& t, int64_t first, int64_t count) {
  Shape shape = t.shape();
  const int64_t row = t.numel() / shape[0];
  shape[0] = count;
  Tensor out = Tensor::empty(shape);
  std::memcpy(out.data(), t.data() + first * row, sizeof(float) * count * row);
  return out;
}

// This rank's part of the global batch: its dp rows, its cp tokens (THE STEP, 1).
struct LocalBatch {
  Tensor inputs;                   // [B/D, S/C]
  Tensor targets;                  // [B/D * S/C]
  std::vector<int64_t> positions;  // S/C positions in the whole sequence
};

LocalBatch local_batch(const TokenBatch& global, const DeviceMesh& mesh, SequenceLayout layout,
                       bool sequence_parallel) {
  const int dp = mesh.size("dp"), cp = mesh.size("cp");
  const int64_t batch = global.inputs.size(0), seq = global.inputs.size(1);
  const int64_t rows = batch / dp, first = mesh.coordinate("dp") * rows;
  const Tensor inputs = rows_of(global.inputs, first, rows).reshape({rows, seq, 1});
  const Tensor targets =
      rows_of(global.targets.reshape({batch, seq}), first, rows).reshape({rows, seq, 1});
  const int c = mesh.coordinate("cp");
  LocalBatch b;
  b.inputs = shard_sequence(inputs, layout, cp, c).reshape({rows, seq / cp});
  b.targets = shard_sequence(targets, layout, cp, c).reshape({rows * (seq / cp)});
  b.positions = token_positions(layout, seq, cp, c);
  const int T = mesh.size("tp");
  if (sequence_parallel && T > 1) {  // tp rank t: the t-th T-th of the cp rank's tokens
    const int t = mesh.coordinate("tp");
    const int64_t s = seq / cp, n = s / T;
    b.inputs = sequence_piece(b.inputs, T, t);
    b.targets = sequence_piece(b.targets.reshape({rows, s}), T, t).reshape({rows * n});
    b.positions =
        std::vector<int64_t>(b.positions.begin() + t * n, b.positions.begin() + (t + 1) * n);
  }
  return b;
}

AttentionCore cp_core(const CpTrainingOptions& o, const DeviceMesh& mesh) {
  const SequenceLayout layout = parse_sequence_layout(o.layout);
  std::shared_ptr<ProcessGroup> cp = mesh.group("cp");
  const AttentionKind kind = parse_attention_kind(o.attention);
  if (o.cp_attention == "ulysses") {
    return [cp, layout, kind](const Variable& q, const Variable& k, const Variable& v) {
      return ulysses_attention(q, k, v, *cp, layout, kind);
    };
  }
  return [cp, layout](const Variable& q, const Variable& k, const Variable& v) {
    return ring_attention(q, k, v, *cp, layout);
  };
}

}  // namespace

std::string check_cp_training_flags(const CpTrainingOptions& o, int world) {
  if (std::string problem = check_gpt_training_flags(o); !problem.empty()) return problem;
  const int tp = o.tp;
  if (world % tp != 0) {
    return "--tp " + std::to_string(tp) + " does not divide the " + std::to_string(world) +
           " ranks (the mesh is dp x cp x tp)";
  }
  const int cp = o.cp == 0 ? world / tp : o.cp;
  if (world % (cp * tp) != 0) {
    const std::string size = tp == 1
                                 ? "--cp " + std::to_string(cp)
                                 : "--cp " + std::to_string(cp) + " x --tp " + std::to_string(tp);
    return size + " does not divide the " + std::to_string(world) + " ranks (the mesh is dp x cp" +
           (tp == 1 ? ")" : " x tp)");
  }
  if (o.heads % tp != 0) {
    return "--heads " + std::to_string(o.heads) + " do not divide over --tp " + std::to_string(tp) +
           " (each tensor-parallel rank takes heads / T of them)";
  }
  const int dp = world / (cp * tp);
  if (o.seq_len % (2 * cp) != 0) {
    return "--seq-len " + std::to_string(o.seq_len) + " does not divide into 2 x --cp " +
           std::to_string(cp) + " = " + std::to_string(2 * cp) +
           " equal chunks (each rank holds two: zig-zag's head and tail)";
  }
  if (o.batch_size % dp != 0) {
    return "--batch-size " + std::to_string(o.batch_size) + " does not divide over dp " +
           std::to_string(dp) + " (" + std::to_string(world) + " ranks / --cp " +
           std::to_string(cp) + ")";
  }
  if (o.cp_attention == "ulysses" && (o.heads / tp) % cp != 0) {
    const std::string heads =
        tp == 1
            ? "--heads " + std::to_string(o.heads)
            : "the " + std::to_string(o.heads / tp) + " heads of a tensor-parallel rank (--heads " +
                  std::to_string(o.heads) + " / --tp " + std::to_string(tp) + ")";
    return "Ulysses needs " + heads + " to divide by the context-parallel size " +
           std::to_string(cp) + " (each rank takes heads / C of them); use --cp-attention ring";
  }
  if (tp > 1 && o.sequence_parallel == "on" && (o.seq_len / cp) % tp != 0) {
    return "sequence parallelism needs the " + std::to_string(o.seq_len / cp) +
           " tokens of a cp rank (--seq-len / --cp) to divide over --tp " + std::to_string(tp) +
           "; use --sequence-parallel off";
  }
  return "";
}

DeviceMesh init_cp_mesh(Subgroups& world, int cp, int tp) {
  const int c = cp == 0 ? world.world() / tp : cp;
  return init_device_mesh(world, {{"dp", world.world() / (c * tp)}, {"cp", c}, {"tp", tp}});
}

GptTrainingSeams cp_training_seams(const CpTrainingOptions& o, const DeviceMesh& mesh,
                                   ProcessGroup& all) {
  const SequenceLayout layout = parse_sequence_layout(o.layout);
  const AttentionCore core = cp_core(o, mesh);
  const int T = mesh.size("tp");
  const bool sp = T > 1 && o.sequence_parallel == "on";
  const BlockRunner runner = T > 1 ? tp_block_runner(*mesh.group("tp"), sp, core) : BlockRunner();
  auto ddp = std::make_shared<std::unique_ptr<NaiveDdp>>();
  GptTrainingSeams seams;
  seams.prepare = [ddp, &all](Gpt& model) {
    *ddp = std::make_unique<NaiveDdp>(model, all, GradSync::flat);  // rank 0's parameters
  };
  seams.step = [ddp, core, runner, T, sp, layout, &mesh, &all](const GptStepContext& c) {
    const LocalBatch b = local_batch(c.batch, mesh, layout, sp);
    c.optimizer.zero_grad();
    c.model.set_attention_core(core);
    c.model.set_block_runner(runner);
    GptStepResult r;
    try {
      const Variable loss =
          cross_entropy(c.model.forward(Variable(b.inputs), b.positions), b.targets);
      loss.backward();
      r.loss = loss.item();
    } catch (...) {
      c.model.set_attention_core({});
      c.model.set_block_runner({});
      throw;
    }
    c.model.set_attention_core({});
    c.model.set_block_runner({});
    scale_tp_gradients(c.model, T, sp);
    (*ddp)->sync_gradients();
    std::vector<float> loss{static_cast<float>(r.loss)};
    all.all_reduce(loss, ReduceOp::SUM);  // the whole batch's loss, for the log
    r.loss = loss[0] / static_cast<float>(all.size());
    r.grad_norm = clip_grad_norm(c.params, c.clip);
    c.optimizer.set_lr(c.lr);
    c.optimizer.step();
    return r;
  };
  return seams;
}

namespace {

// The parameters train_gpt ends with (or their gradients), through its finish seam.
NamedTensors train_and_keep(const GptTrainingOptions& o, const TextSplit& text,
                            GptTrainingSeams seams, bool gradients = false) {
  NamedTensors kept;
  seams.finish = [&kept, gradients](Gpt& model) {
    for (const auto& [name, p] : model.named_parameters())
      kept.emplace_back(name, (gradients ? p.grad() : p.data()).clone());
  };
  train_gpt(o, text, nullptr, seams);
  return kept;
}

double largest_difference(const NamedTensors& a, const NamedTensors& b, ProcessGroup& all) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const float* x = a[i].second.data();
    const float* y = b[i].second.data();
    for (int64_t j = 0; j < a[i].second.numel(); ++j) {
      worst = std::max(worst, static_cast<double>(std::fabs(x[j] - y[j])));
    }
  }
  std::vector<float> w{static_cast<float>(worst)};
  all.all_reduce(w, ReduceOp::MAX);
  return w[0];
}

GptTrainingOptions one_process_options(const CpTrainingOptions& o) {
  GptTrainingOptions one = o;
  one.eval_every = 0;
  one.sample = 0;
  one.checkpoint.clear();
  return one;
}

}  // namespace

double cp_gradient_difference(const CpTrainingOptions& o, const TextSplit& text,
                              const DeviceMesh& mesh, ProcessGroup& all) {
  GptTrainingOptions one = one_process_options(o);
  one.steps = 1;
  one.clip = 1e30;  // clipping would scale a wrong gradient back to the right norm
  CpTrainingOptions mine = o;
  mine.steps = 1;
  mine.clip = one.clip;
  const NamedTensors serial = train_and_keep(one, text, {}, true);
  const NamedTensors parallel = train_and_keep(one, text, cp_training_seams(mine, mesh, all), true);
  return largest_difference(serial, parallel, all);
}

double cp_equivalence_difference(const CpTrainingOptions& o, const TextSplit& text,
                                 const DeviceMesh& mesh, ProcessGroup& all) {
  const GptTrainingOptions one = one_process_options(o);
  const NamedTensors serial = train_and_keep(one, text, {});
  const NamedTensors parallel = train_and_keep(one, text, cp_training_seams(o, mesh, all));
  return largest_difference(serial, parallel, all);
}

Verdict run_cp_training(const CpTrainingOptions& o, const DeviceMesh& mesh, ProcessGroup& all,
                        std::ostream& out) {
  openblas_set_num_threads(1);
  const bool lead = mesh.rank() == 0;
  const TextSplit text = load_fortunes(o.data);
  if (lead) {
    const int T = mesh.size("tp");
    out << "device mesh: " << mesh.layout().describe() << "; " << o.cp_attention << " attention, "
        << o.layout << " layout, S/C = " << o.seq_len / mesh.size("cp") << " tokens per cp rank";
    if (T > 1) {
      out << "; heads / T = " << o.heads / T << " per tp rank, sequence parallelism "
          << o.sequence_parallel;
    }
    out << std::endl;
  }
  constexpr double kEquivalenceTolerance = 2e-4, kGradientTolerance = 2e-5;
  if (o.equivalence_steps > 0) {
    CpTrainingOptions check = o;
    check.steps = o.equivalence_steps;
    check.eval_batches = 1;
    const double grad_diff = cp_gradient_difference(check, text, mesh, all);
    if (lead) {
      out << "equivalence: the first step's gradients are within " << grad_diff
          << " of one process's (tolerance " << kGradientTolerance << ")" << std::endl;
    }
    if (!(grad_diff <= kGradientTolerance)) {
      return Verdict::fail("a gradient of the first step differs from one process's by " +
                           std::to_string(grad_diff) +
                           " (tolerance 2e-5): a reduction over dp, cp or tp is missing, or a "
                           "gradient is scaled by the wrong factor (T or C)");
    }
    const double diff = cp_equivalence_difference(check, text, mesh, all);
    if (lead) {
      out << "equivalence: after " << check.steps << " steps the parameters are within " << diff
          << " of one process's (tolerance " << kEquivalenceTolerance << ")" << std::endl;
    }
    if (!(diff <= kEquivalenceTolerance)) {
      return Verdict::fail("after " + std::to_string(check.steps) +
                           " steps a parameter differs from one process's by " +
                           std::to_string(diff) +
                           " (tolerance 2e-4): the attention over the "
                           "cp group is not the whole sequence's");
    }
  }
  CpTrainingOptions run = o;
  if (!lead) run.checkpoint.clear();
  const GptTrainingResult r =
      train_gpt(run, text, lead ? &out : nullptr, cp_training_seams(o, mesh, all));
  if (lead && !r.sample.empty()) out << "sample (temperature 0.8):\n" << r.sample << "\n----\n";
  if (lead) {
    out << "trained " << o.steps << " steps in " << format_fixed(r.train_seconds, 1) << " s, "
        << format_fixed(r.tokens_per_second, 0) << " tokens/s (all ranks together)" << std::endl;
  }
  return gpt_training_verdict(o, r);
}

}  // namespace course
