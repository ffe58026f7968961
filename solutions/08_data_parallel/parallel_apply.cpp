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
  // BEGIN SOLUTION: tasks writing outputs[k]; run_on_devices(..., "forward"); times to busy_seconds
  std::vector<Variable> outputs(replicas.size());
  std::vector<std::function<void()>> tasks;
  for (size_t k = 0; k < replicas.size(); ++k) {
    tasks.push_back([&, k] { outputs[k] = replicas[k]->forward(inputs[k]); });
  }
  std::vector<double> busy = run_on_devices(pool, tasks, "forward");
  if (busy_seconds) *busy_seconds = std::move(busy);
  return outputs;
  // END SOLUTION
}

std::vector<double> run_on_devices(DevicePool& pool,
                                   const std::vector<std::function<void()>>& tasks,
                                   const std::string& phase) {
  std::vector<double> seconds(tasks.size(), 0.0);
  std::vector<std::exception_ptr> errors;
  // Wrap each task: the caller's grad mode (a NoGradGuard when it is off), its time into
  // seconds[k]. Then run the wrapped tasks on the pool.
  // BEGIN SOLUTION: wrapped tasks (grad mode, timing), then errors = pool.run(wrapped)
  const bool grad_mode = grad_mode_enabled();
  std::vector<std::function<void()>> wrapped;
  for (size_t k = 0; k < tasks.size(); ++k) {
    wrapped.push_back([&, k] {
      std::optional<NoGradGuard> no_grad;
      if (!grad_mode) no_grad.emplace();
      const auto start = std::chrono::steady_clock::now();
      tasks[k]();
      seconds[k] = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    });
  }
  errors = pool.run(wrapped);
  // END SOLUTION
  // Every task has finished; report the lowest device that failed.
  // BEGIN SOLUTION: the first error: NotImplementedError as it is, else a ReplicaError
  for (size_t k = 0; k < errors.size(); ++k) {
    if (!errors[k]) continue;
    try {
      std::rethrow_exception(errors[k]);
    } catch (const NotImplementedError&) {
      throw;
    } catch (const std::exception& e) {
      throw ReplicaError(static_cast<int>(k), phase, e.what());
    } catch (...) {
      throw ReplicaError(static_cast<int>(k), phase, "an exception that is not a std::exception");
    }
  }
  // END SOLUTION
  return seconds;
}

}  // namespace course
