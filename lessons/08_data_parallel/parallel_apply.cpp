// parallel_apply.cpp: lesson 08, part 3: replicas on their own threads, errors carried
// home (see parallel_apply.h).
#include "parallel_apply.h"

#include <chrono>
#include <optional>

#include "error.h"
#include "exercise_checks.h"

namespace course {

std::vector<Variable> parallel_apply(DevicePool& pool, const Replicas& replicas,
                                     const std::vector<Variable>& inputs,
                                     std::vector<double>* busy_seconds) {
  check_parallel_apply(pool, replicas, inputs);
  // TODO(lesson08): tasks writing outputs[k]; run_on_devices(..., "forward"); times to busy_seconds
  COURSE_TODO();
}

std::vector<double> run_on_devices(DevicePool& pool,
                                   const std::vector<std::function<void()>>& tasks,
                                   const std::string& phase) {
  std::vector<double> seconds(tasks.size(), 0.0);
  std::vector<std::exception_ptr> errors;
  // Wrap each task: the caller's grad mode (a NoGradGuard when it is off), its time into
  // seconds[k]. Then run the wrapped tasks on the pool.
  // TODO(lesson08): wrapped tasks (grad mode, timing), then errors = pool.run(wrapped)
  COURSE_TODO();
  // Every task has finished; report the lowest device that failed.
  // TODO(lesson08): the first error: NotImplementedError as it is, else a ReplicaError
  COURSE_TODO();
  return seconds;
}

}  // namespace course
