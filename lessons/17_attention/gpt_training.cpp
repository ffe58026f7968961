// gpt_training.cpp: lesson 17, given: ./lesson17's training run (see gpt_training.h).
#include "gpt_training.h"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>

#include "adamw.h"
#include "attention_op.h"
#include "bigram.h"
#include "checkpoint.h"
#include "error.h"
#include "gpt.h"
#include "grad_clip.h"
#include "lr_schedule.h"
#include "ops.h"
#include "safetensors.h"

namespace course {

namespace {

constexpr double kSampleTemperature = 0.8;

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// The model's shape as the checkpoint's metadata holds it.
std::map<std::string, std::string> shape_metadata(const GptConfig& c) {
  return {{"gpt.vocab", std::to_string(c.vocab)},
          {"gpt.context", std::to_string(c.context)},
          {"gpt.layers", std::to_string(c.layers)},
          {"gpt.heads", std::to_string(c.heads)},
          {"gpt.hidden", std::to_string(c.hidden)}};
}

GptConfig checkpoint_config(const std::string& path) {
  const SafetensorsFile file = load_safetensors(path);
  GptConfig c;
  c.vocab = metadata_int(file.metadata, "gpt.vocab", path);
  c.context = metadata_int(file.metadata, "gpt.context", path);
  c.layers = metadata_int(file.metadata, "gpt.layers", path);
  c.heads = metadata_int(file.metadata, "gpt.heads", path);
  c.hidden = metadata_int(file.metadata, "gpt.hidden", path);
  return c;
}

std::string shape_text(int64_t layers, int64_t heads, int64_t hidden) {
  return std::to_string(layers) + " layers, " + std::to_string(heads) + " heads, hidden " +
         std::to_string(hidden);
}

// The model the flags describe, for a vocabulary of `vocab` tokens.
GptConfig flag_config(const GptTrainingOptions& o, int64_t vocab, int64_t context) {
  GptConfig c;
  c.vocab = vocab;
  c.context = context;
  c.layers = o.layers;
  c.heads = o.heads;
  c.hidden = o.hidden;
  c.attention = parse_attention_kind(o.attention);
  return c;
}

double validation_loss(Gpt& model, const std::vector<TokenBatch>& batches) {
  const NoGradGuard no_grad;
  double total = 0;
  for (const TokenBatch& b : batches) {
    total += cross_entropy(model.forward(Variable(b.inputs)), b.targets).item();
  }
  return total / static_cast<double>(batches.size());
}

// Saves model, optimizer and vocabulary, loads them into a fresh model and checks that it
// gives `loss` again on the validation windows.
void checkpoint_round_trip(const std::string& path, Gpt& model, const AdamW& optimizer,
                           const CharTokenizer& tok, const std::vector<TokenBatch>& val,
                           double loss, std::ostream* out) {
  save_checkpoint(path, model, &optimizer, shape_metadata(model.config()));
  save_vocab(tok, vocab_path_for(path));
  Rng other(12345);
  Gpt fresh(model.config(), other);
  load_checkpoint(path, fresh, nullptr);
  const CharTokenizer loaded = load_vocab(vocab_path_for(path));
  const double again = validation_loss(fresh, val);
  if (again != loss || loaded.bytes() != tok.bytes()) {
    throw ConfigError("the checkpoint " + path + " loaded back gives validation loss " +
                      fixed(again, 6) + ", not " + fixed(loss, 6));
  }
  if (out) {
    *out << "checkpoint " << path << " (vocabulary " << vocab_path_for(path)
         << "): loaded back, the same validation loss" << std::endl;
  }
}

}  // namespace

std::string check_gpt_shape_flags(const GptTrainingOptions& o) {
  if (o.hidden % o.heads != 0) {
    return "--heads " + std::to_string(o.heads) + " does not divide --hidden " +
           std::to_string(o.hidden) + " (each head takes hidden / heads columns)";
  }
  return "";
}

std::string check_gpt_training_flags(const GptTrainingOptions& o) {
  if (std::string problem = check_gpt_shape_flags(o); !problem.empty()) return problem;
  if (std::string problem = fortunes_problem(o.data); !problem.empty()) return problem;
  if (o.init.empty()) return "";
  if (!std::filesystem::is_regular_file(o.init)) return "--init " + o.init + " does not exist";
  try {
    const GptConfig c = checkpoint_config(o.init);
    if (c.layers != o.layers || c.heads != o.heads || c.hidden != o.hidden) {
      return "--init " + o.init + " holds a model of " + shape_text(c.layers, c.heads, c.hidden) +
             ", the flags ask for " + shape_text(o.layers, o.heads, o.hidden);
    }
    if (o.seq_len > c.context) {
      return "--seq-len " + std::to_string(o.seq_len) + " is longer than the context " +
             std::to_string(c.context) + " of the model in --init " + o.init;
    }
    const int64_t vocab = load_vocab(vocab_path_for(o.init)).vocab_size();
    if (vocab != c.vocab) {
      return "--init " + o.init + " holds a model of vocabulary " + std::to_string(c.vocab) +
             ", its vocabulary file " + vocab_path_for(o.init) + " " + std::to_string(vocab);
    }
  } catch (const ConfigError& e) {
    return e.detail();
  }
  return "";
}

GptStepResult standard_gpt_step(const GptStepContext& c) {
  c.optimizer.zero_grad();
  const Variable loss = cross_entropy(c.model.forward(Variable(c.batch.inputs)), c.batch.targets);
  loss.backward();
  GptStepResult r;
  r.loss = loss.item();
  r.grad_norm = clip_grad_norm(c.params, c.clip);
  c.optimizer.set_lr(c.lr);
  c.optimizer.step();
  return r;
}

GptTrainingResult train_gpt(const GptTrainingOptions& o, const TextSplit& text, std::ostream* out,
                            const GptTrainingSeams& seams) {
  const CharTokenizer tok =
      o.init.empty() ? CharTokenizer(text.train) : load_vocab(vocab_path_for(o.init));
  const std::vector<int32_t> train = tok.encode(text.train);
  const std::vector<int32_t> valid = tok.encode(text.validation);
  const std::vector<TokenBatch> val = fixed_batches(valid, o.batch_size, o.seq_len, o.eval_batches);
  GptTrainingResult r;
  r.vocab = tok.vocab_size();
  r.bigram_loss = BigramModel(train, tok.vocab_size()).loss(val);

  const int64_t context = o.init.empty() ? o.seq_len : checkpoint_config(o.init).context;
  Rng init_rng(o.seed);
  Gpt model(flag_config(o, tok.vocab_size(), context), init_rng);
  r.parameters = model.parameter_count();
  const std::vector<Variable> params = model.parameters();
  AdamW optimizer(params, {.lr = o.lr, .beta1 = 0.9, .beta2 = 0.95, .weight_decay = o.weight_decay},
                  decay_matrices(params));
  if (!o.init.empty()) load_checkpoint(o.init, model, &optimizer);
  if (seams.prepare) seams.prepare(model);
  const auto& step_fn = seams.step ? seams.step : standard_gpt_step;
  const CosineSchedule schedule{
      .max_lr = o.lr,
      .min_lr = o.lr / 10,
      .warmup_steps = std::min<int64_t>(o.steps, std::max<int64_t>(1, o.steps / 20)),
      .decay_steps = o.steps};
  if (out) {
    *out << "corpus: " << text.train.size() << " training characters (" << text.train_fortunes
         << " fortunes), " << text.validation.size() << " validation (" << text.validation_fortunes
         << "); vocabulary " << tok.vocab_size() << "\n"
         << model.describe() << ": " << r.parameters << " parameters\n"
         << "bigram baseline: validation loss " << fixed(r.bigram_loss, 4) << " nats/char ("
         << val.size() * o.batch_size << " windows of " << o.seq_len << ")" << std::endl;
  }
  r.initial_loss = validation_loss(model, val);
  Rng batch_rng(o.seed, 1);
  double window_loss = 0;
  int64_t window_steps = 0;
  for (int64_t step = 0; step < o.steps; ++step) {
    const auto t0 = std::chrono::steady_clock::now();
    const TokenBatch b = random_batch(train, o.batch_size, o.seq_len, batch_rng);
    const GptStepResult sr = step_fn({.model = model,
                                      .params = params,
                                      .optimizer = optimizer,
                                      .batch = b,
                                      .lr = schedule.lr(step),
                                      .clip = o.clip,
                                      .step = step});
    const double norm = sr.grad_norm;
    r.skipped_steps += sr.skipped ? 1 : 0;
    r.train_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.train_losses.push_back(sr.loss);
    window_loss += sr.loss;
    ++window_steps;
    const bool last = step + 1 == o.steps;
    if (out && ((o.eval_every > 0 && (step + 1) % o.eval_every == 0) || last)) {
      const double tokens = static_cast<double>((step + 1) * o.batch_size * o.seq_len);
      *out << "step " << step + 1 << "/" << o.steps << "  train "
           << fixed(window_loss / static_cast<double>(window_steps), 4) << "  val "
           << fixed(validation_loss(model, val), 4) << "  lr " << fixed(schedule.lr(step) * 1e3, 3)
           << "e-3  |g| " << fixed(norm, 3) << "  " << fixed(tokens / r.train_seconds, 0)
           << " tokens/s" << std::endl;
      window_loss = 0;
      window_steps = 0;
    }
  }
  r.final_loss = validation_loss(model, val);
  if (seams.finish) seams.finish(model);
  r.tokens_per_second =
      r.train_seconds > 0
          ? static_cast<double>(o.steps * o.batch_size * o.seq_len) / r.train_seconds
          : 0;
  if (o.sample > 0) {
    Rng sample_rng(o.seed, 2);
    const std::vector<int32_t> tokens =
        gpt_generate(model, tok.encode("%\n"), o.sample, kSampleTemperature, sample_rng);
    r.sample = tok.decode({tokens.begin() + 2, tokens.end()});
  }
  if (!o.checkpoint.empty()) {
    checkpoint_round_trip(o.checkpoint, model, optimizer, tok, val, r.final_loss, out);
  }
  return r;
}

Verdict run_gpt_training(const GptTrainingOptions& o, std::ostream& out) {
  openblas_set_num_threads(1);  // the two-minute default is measured on one thread
  const TextSplit text = load_fortunes(o.data);
  const GptTrainingResult r = train_gpt(o, text, &out);
  if (!r.sample.empty()) {
    out << "sample (temperature " << fixed(kSampleTemperature, 1) << "):\n"
        << r.sample << "\n----" << std::endl;
  }
  out << "trained " << o.steps << " steps in " << fixed(r.train_seconds, 1) << " s, "
      << fixed(r.tokens_per_second, 0) << " tokens/s" << std::endl;
  return gpt_training_verdict(o, r);
}

Verdict gpt_training_verdict(const GptTrainingOptions& o, const GptTrainingResult& r) {
  const std::string losses = "validation loss " + fixed(r.final_loss, 4) +
                             " nats/char against the bigram's " + fixed(r.bigram_loss, 4);
  if (r.final_loss <= r.bigram_loss - o.margin) {
    return Verdict::pass(losses + " (better by " + fixed(r.bigram_loss - r.final_loss, 3) +
                         ", margin " + fixed(o.margin, 2) + ")");
  }
  return Verdict::fail(losses + ": not better by the margin " + fixed(o.margin, 2) +
                       " (train longer: --steps, or a larger --lr)");
}

}  // namespace course
