// driver_prologue.h: lesson 01, given: what a distributed training driver's rank_main does
// before its lesson's work, written once (docs/maintainers.md, "Adding a lesson").
//
//   course::DriverStart start = course::start_driver(
//       ctx, {.group = "lesson13",
//             .install = course::install_lesson13,
//             .device = g_training.device,
//             .header = course::link_header(),
//             .self_check = course::run_lesson13_self_check,
//             .self_check_passed = course::kLesson13SelfCheckPassed});
//   if (start.failed) return *start.failed;        // "self-check: ..." names the function
//   g_training.local_rank = start.local_rank;
//   if (ctx.args().bench) return course::run_sharding_bench(*start.group, g_bench, std::cout);
//   return course::run_sharded_training(g_training, *start.group, std::cout);
//
// In this order: --device checked against --backend (a ConfigError, a usage error, when a
// CUDA tensor cannot go through tcp or a CPU one through nccl); the world's group from
// driver_recipe with the lesson's tcp algorithms; rank 0's header line "backend B, N
// rank(s), HEADER"; the self-check on the group, its problem turned into the FAIL
// "self-check: PROBLEM", or rank 0 printing the passed line. A driver whose steps come in
// another order (lesson 10 benches before its header, lesson 11 checks a second group)
// calls the steps themselves: select_device, make_driver_group, then driver.h's
// print_driver_header and self_check_failure.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "driver.h"
#include "process_group.h"
#include "process_group_factory.h"

namespace course {

/// What start_driver does, one field per step.
struct DriverPrologue {
  /// The group's name (driver_recipe): "lesson13".
  std::string group;
  /// The tcp backend's algorithms: install_lesson05, install_lesson13, ...
  std::function<void(TcpAlgorithms&)> install;
  /// --device ("cpu" or "cuda"), checked against --backend; empty: the lesson has none.
  std::string device;
  /// What rank 0's header prints after "backend B, N rank(s), " (empty: nothing more).
  std::string header;
  /// The self-check on the group: "" when all matched, else the problem, naming the
  /// function at fault. Empty: no self-check.
  std::function<std::string(ProcessGroup&)> self_check;
  /// What rank 0 prints when the self-check passed.
  std::string self_check_passed;
};

/// What start_driver leaves for the rest of rank_main.
struct DriverStart {
  /// The group of every rank, named DriverPrologue::group.
  std::unique_ptr<ProcessGroup> group;
  /// LOCAL_RANK: the GPU a cuda device puts this rank's tensors on.
  int local_rank = 0;
  /// Set when the self-check failed: the verdict rank_main returns at once.
  std::optional<Verdict> failed;
};

/// Checks `device` (--device; empty: none) against --backend, throwing ConfigError when
/// they cannot go together, and returns this rank's LOCAL_RANK (the GPU it uses).
int select_device(const DriverContext& ctx, const std::string& device);

/// The group `name` of every rank on --backend, from driver_recipe with `install`.
std::unique_ptr<ProcessGroup> make_driver_group(DriverContext& ctx, const std::string& name,
                                                std::function<void(TcpAlgorithms&)> install = {});

/// select_device, make_driver_group, print_driver_header and self_check_failure in turn,
/// as described above.
DriverStart start_driver(DriverContext& ctx, const DriverPrologue& prologue);

}  // namespace course
