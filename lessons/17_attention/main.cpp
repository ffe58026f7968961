// main.cpp: ./lesson17, attention and a small GPT on the course's autograd, trained on
// English prose in one process.
//
//   make lesson17 && ./lesson17                         # 2 layers, 4 heads, hidden 64
//   ./lesson17 --attention naive --steps 200
//   ./lesson17 --checkpoint gpt.safetensors             # then --init gpt.safetensors
//
// First a self-check of your attention kernels against each other and finite differences
// (attention_self_check.h), naming the function at fault. Then gpt_training.h: the bigram
// baseline on the fortunes corpus, the GPT trained with AdamW for --steps steps, its
// validation loss, a sample of its text and its tokens/s. PASS needs the GPT's validation
// loss below the bigram's by --margin nats per character.
#include <iostream>

#include "attention_self_check.h"
#include "driver.h"
#include "flags.h"
#include "gpt_training.h"
#include "gpt_training_flags.h"

namespace {

course::GptTrainingOptions g_training;

}  // namespace

int main(int argc, char** argv) {
  course::DriverConfig config;
  config.name = "lesson17";
  config.title = "attention and a small GPT: naive and tiled attention, trained on fortunes";
  config.distributed = false;
  config.check_flags = [](const course::DriverArgs&) {
    return course::check_gpt_training_flags(g_training);
  };
  return course::run_driver(
      argc, argv, config,
      [](course::Flags& flags) { course::add_gpt_training_flags(flags, g_training); },
      [](course::DriverContext&) {
        const std::string problem = course::attention_self_check(std::cout);
        if (!problem.empty()) return course::Verdict::fail("self-check: " + problem);
        std::cout << course::kLesson17SelfCheckPassed << std::endl;
        return course::run_gpt_training(g_training, std::cout);
      });
}
