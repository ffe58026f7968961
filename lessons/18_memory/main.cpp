// main.cpp: ./lesson18, where a transformer's memory goes and the two tools that cut it:
// activation recomputation and mixed precision, on lesson 17's GPT.
//
//   make lesson18 && ./lesson18                          # fp32, no recomputation
//   ./lesson18 --precision bf16 --recompute full         # bf16 master-weight training
//   ./lesson18 --precision fp16                          # fp16 with dynamic loss scaling
//   ./lesson18 --bench                                   # memory and time tables
//
// First a self-check of your checkpoint and GradScaler (memory_self_check.h), naming the
// function at fault. Then memory_training.h: lesson 17's run in the chosen precision and
// recomputation policy, with a float32 reference run first for bf16 and fp16. PASS needs the
// bigram margin and, in 16 bits, a final validation loss within --tolerance of float32's.
// --bench prints memory_bench.h's tables instead.
#include <iostream>

#include "driver.h"
#include "flags.h"
#include "memory_bench.h"
#include "memory_self_check.h"
#include "memory_training.h"
#include "memory_training_flags.h"

namespace {

course::MemoryTrainingOptions g_training;
double g_budget_mib = 64;

course::MemoryBenchOptions bench_options(const std::string& csv_path) {
  course::MemoryBenchOptions b;
  b.csv_path = csv_path;
  b.layers = g_training.layers;
  b.heads = g_training.heads;
  b.hidden = g_training.hidden;
  b.memory_budget_mib = g_budget_mib;
  b.data = g_training.data;
  return b;
}

}  // namespace

int main(int argc, char** argv) {
  course::DriverConfig config;
  config.name = "lesson18";
  config.title = "memory and precision: activation recomputation, bf16 and fp16 training";
  config.distributed = false;
  config.has_bench = true;
  config.check_flags = [](const course::DriverArgs& args) {
    return args.bench ? course::check_gpt_shape_flags(g_training)
                      : course::check_memory_training_flags(g_training);
  };
  return course::run_driver(
      argc, argv, config,
      [](course::Flags& flags) {
        course::add_memory_training_flags(flags, g_training);
        flags.option("--memory-budget", g_budget_mib, "--bench: MiB per rank for table 4")
            .check(course::number_in(0.01, 1e7))
            .show_default();
      },
      [](course::DriverContext& ctx) {
        if (auto failed = course::self_check_failure(ctx, course::memory_self_check(std::cout),
                                                     course::kLesson18SelfCheckPassed)) {
          return *failed;
        }
        if (ctx.args().bench)
          return course::run_memory_bench(bench_options(ctx.bench_csv()), std::cout);
        return course::run_memory_training(g_training, std::cout);
      });
}
