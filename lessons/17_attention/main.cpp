// main.cpp: ./lesson17, attention and a small GPT on the course's autograd, trained on
// English prose in one process.
//
//   make lesson17 && ./lesson17                         # 2 layers, 4 heads, hidden 64
//   ./lesson17 --attention naive --steps 200
//   ./lesson17 --checkpoint gpt.safetensors             # then --init gpt.safetensors
//   ./lesson17 --bench                                  # naive against tiled (gpt_bench.h)
//
// First a self-check of your attention kernels against a direct computation
// (attention_self_check.h), naming the function at fault. Then gpt_training.h: the bigram
// baseline on the fortunes corpus, the GPT trained with AdamW for --steps steps, its
// validation loss, a sample of its text and its tokens/s. PASS needs the GPT's validation
// loss below the bigram's by --margin nats per character. --bench times the kernels and the
// training step instead, the step on the model and batch of --layers, --heads, --hidden,
// --batch-size and --seq-len.
#include <iostream>

#include "attention_self_check.h"
#include "driver.h"
#include "flags.h"
#include "gpt_bench.h"
#include "gpt_training.h"
#include "gpt_training_flags.h"

namespace {

course::GptTrainingOptions g_training;

course::GptBenchOptions bench_options(const std::string& csv_path) {
  course::GptBenchOptions b;
  b.csv_path = csv_path;
  b.train_batch = g_training.batch_size;
  b.train_seq = g_training.seq_len;
  b.layers = g_training.layers;
  b.hidden = g_training.hidden;
  b.train_heads = g_training.heads;
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  course::DriverConfig config;
  config.name = "lesson17";
  config.title = "attention and a small GPT: naive and tiled attention, trained on fortunes";
  config.distributed = false;
  config.has_bench = true;
  config.check_flags = [](const course::DriverArgs& args) {
    return args.bench ? course::check_gpt_shape_flags(g_training)
                      : course::check_gpt_training_flags(g_training);
  };
  return course::run_driver(
      argc, argv, config,
      [](course::Flags& flags) { course::add_gpt_training_flags(flags, g_training); },
      [](course::DriverContext& ctx) {
        if (auto failed = course::self_check_failure(ctx, course::attention_self_check(std::cout),
                                                     course::kLesson17SelfCheckPassed)) {
          return *failed;
        }
        if (ctx.args().bench)
          return course::run_gpt_bench(bench_options(ctx.bench_csv()), std::cout);
        return course::run_gpt_training(g_training, std::cout);
      });
}
