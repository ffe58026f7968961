// memory_training.cpp: lesson 18, given: ./lesson18's training run (memory_training.h).
#include "memory_training.h"

#include <cblas.h>

#include <cmath>
#include <memory>

#include "activation_ledger.h"
#include "bench_table.h"
#include "grad_scaler.h"
#include "mixed_precision.h"
#include "recompute_policy.h"

namespace course {

namespace {

std::string mib(int64_t bytes) {
  return format_fixed(static_cast<double>(bytes) / (1 << 20), 2) + " MiB";
}

}  // namespace

std::string check_memory_training_flags(const MemoryTrainingOptions& o) {
  if (std::string problem = check_gpt_training_flags(o); !problem.empty()) return problem;
  if (o.loss_scale == "none" && o.precision != "fp16") {
    return "--loss-scale none is for --precision fp16 (loss scaling is fp16's; " + o.precision +
           " has float32's range)";
  }
  return "";
}

MemoryRunResult train_in_precision(const MemoryTrainingOptions& o, const TextSplit& text,
                                   std::ostream* out, FlushCount* flushed,
                                   const std::function<void(Gpt&)>& finish) {
  const Precision precision = parse_precision(o.precision);
  const RecomputePolicy policy = parse_recompute_policy(o.recompute);
  std::unique_ptr<GradScaler> scaler;
  if (precision == Precision::fp16 && o.loss_scale == "dynamic") {
    scaler = std::make_unique<GradScaler>(GradScalerOptions{.growth_interval = o.growth_interval});
  }
  const MixedPrecision mp{.precision = precision, .scaler = scaler.get(), .flushed = flushed};
  GptTrainingSeams seams;
  seams.prepare = [&](Gpt& model) {
    install_model_seams(model, policy, precision);
    if (!out) return;
    const GptConfig& c = model.config();
    Rng probe_rng(1);
    Gpt probe(c, probe_rng);  // a copy of the shape, not of the trained model
    const TokenBatch batch = counting_batch(c.vocab, o.batch_size, o.seq_len);
    const SavedTensorLedger measured = measure_gpt_activations(probe, batch, policy, precision);
    const ActivationBytes formula =
        gpt_activation_formula(c, o.batch_size, o.seq_len, policy, precision);
    *out << "activations kept for backward (" << precision_name(precision) << ", recompute "
         << recompute_policy_name(policy) << ", " << attention_kind_name(c.attention)
         << "): measured " << mib(measured.total_bytes) << ", formula " << mib(formula.total())
         << (measured.total_bytes == formula.total() ? " (equal)" : " (DIFFER)") << std::endl;
  };
  if (precision != Precision::fp32) {
    seams.step = [&mp](const GptStepContext& c) { return mixed_precision_step(c, mp); };
  }
  seams.finish = finish;
  MemoryRunResult r;
  r.training = train_gpt(o, text, out, seams);
  if (scaler) {
    r.final_scale = scaler->get_scale();
    if (out) {
      *out << "loss scale: " << r.final_scale << " at the end, " << scaler->skipped_steps()
           << " step(s) skipped for inf or NaN" << std::endl;
    }
  }
  return r;
}

Verdict run_memory_training(const MemoryTrainingOptions& o, std::ostream& out) {
  openblas_set_num_threads(1);
  const TextSplit text = load_fortunes(o.data);
  const Precision precision = parse_precision(o.precision);
  double reference = 0;
  if (precision != Precision::fp32) {
    MemoryTrainingOptions ref = o;
    ref.precision = "fp32";
    ref.recompute = "none";
    ref.checkpoint.clear();
    ref.sample = 0;
    out << "== the float32 reference (same seed, same batches) ==" << std::endl;
    reference = train_in_precision(ref, text, &out).training.final_loss;
    out << "== " << o.precision << " ==" << std::endl;
  }
  MemoryRunResult r;
  try {
    r = train_in_precision(o, text, &out);
  } catch (const ScaleCollapse& e) {
    return Verdict::fail(e.detail());
  }
  const GptTrainingResult& t = r.training;
  if (!t.sample.empty()) out << "sample (temperature 0.8):\n" << t.sample << "\n----" << std::endl;
  out << "trained " << o.steps << " steps in " << format_fixed(t.train_seconds, 1) << " s, "
      << format_fixed(t.tokens_per_second, 0) << " tokens/s" << std::endl;
  Verdict verdict = gpt_training_verdict(o, t);
  if (!verdict.passed || precision == Precision::fp32) return verdict;
  const double above = t.final_loss - reference;
  const std::string against = o.precision + " ends at " + format_fixed(t.final_loss, 4) +
                              ", float32 at " + format_fixed(reference, 4) + " (" +
                              (above >= 0 ? "+" : "") + format_fixed(above, 4) + ", tolerance " +
                              format_fixed(o.tolerance, 3) + ")";
  if (above > o.tolerance) {
    return Verdict::fail(against + ": further from float32 than the tolerance" +
                         (t.skipped_steps > 0
                              ? " (" + std::to_string(t.skipped_steps) + " steps skipped)"
                              : std::string()));
  }
  return Verdict::pass(verdict.detail + "; " + against);
}

}  // namespace course
