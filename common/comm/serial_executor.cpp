// serial_executor.cpp: see serial_executor.h.
#include "serial_executor.h"

#include <future>

#include "work.h"

namespace course {

struct SerialExecutor::Task {
  std::function<void()> op;
  std::promise<void> done;
  uint64_t seq = 0;  // its place in the order of submit() calls
};

struct SerialExecutor::State {
  State(std::string name, ErrorHook on_error)
      : name(std::move(name)), on_error(std::move(on_error)) {}
  std::exception_ptr report(std::exception_ptr error) const {
    if (!on_error) return error;
    std::exception_ptr replaced = on_error(error);
    return replaced ? replaced : error;
  }

  const std::string name;
  const ErrorHook on_error;
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<std::unique_ptr<Task>> queue;  // each Task holds an op and its promise
  uint64_t next_seq = 0;
  bool busy = false;  // an operation is running (inline, on the worker, or on a waiter)
  bool stopping = false;
};

SerialExecutor::SerialExecutor(std::string name, ErrorHook on_error)
    : state_(std::make_shared<State>(std::move(name), std::move(on_error))) {}

SerialExecutor::~SerialExecutor() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stopping = true;
  }
  state_->changed.notify_all();
  if (worker_.joinable()) worker_.join();
  // A waiter may still be running an operation it took (invariant 4): let it finish.
  std::unique_lock<std::mutex> lock(state_->mutex);
  state_->changed.wait(lock, [&] { return !state_->busy; });
}

const std::string& SerialExecutor::name() const {
  return state_->name;
}

void SerialExecutor::run_inline(const std::function<void()>& op) {
  State& state = *state_;
  {
    std::unique_lock<std::mutex> lock(state.mutex);
    state.changed.wait(lock, [&] { return state.queue.empty() && !state.busy; });
    state.busy = true;
  }
  std::exception_ptr error;
  try {
    op();
  } catch (...) {
    error = state.report(std::current_exception());
  }
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    state.busy = false;
  }
  state.changed.notify_all();
  if (error) std::rethrow_exception(error);
}

WorkPtr SerialExecutor::submit(std::function<void()> op, std::string what, bool run_on_wait) {
  auto task = std::make_unique<Task>(Task{std::move(op), {}, 0});
  std::shared_future<void> future = task->done.get_future().share();
  uint64_t seq = 0;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    seq = task->seq = state_->next_seq++;
    state_->queue.push_back(std::move(task));
    if (!worker_.joinable())
      worker_ = std::thread([state = state_] {
        while (true) {
          std::unique_ptr<Task> next;
          {
            std::unique_lock<std::mutex> lock(state->mutex);
            // Invariant 1: a queued task waits for an operation that started before it.
            state->changed.wait(lock, [&] {
              return (!state->queue.empty() && !state->busy) ||
                     (state->stopping && state->queue.empty() && !state->busy);
            });
            if (state->queue.empty()) return;  // stopping, nothing left
            next = std::move(state->queue.front());
            state->queue.pop_front();
            state->busy = true;
          }
          run_task(*state, std::move(next));
        }
      });
  }
  state_->changed.notify_all();
  std::function<void()> before_wait;
  if (run_on_wait) {
    before_wait = [weak = std::weak_ptr<State>(state_), seq] {
      if (std::shared_ptr<State> state = weak.lock()) run_queued_through(*state, seq);
    };
  }
  return std::make_shared<FutureWork>(std::move(future), std::move(what), std::move(before_wait));
}

void SerialExecutor::run_task(State& state, std::unique_ptr<Task> task) {
  // REQUIRES: state.busy was set by the caller, which took `task` off the queue.
  try {
    task->op();
    task->done.set_value();
  } catch (...) {
    task->done.set_exception(state.report(std::current_exception()));
  }
  task.reset();
  {
    std::lock_guard<std::mutex> lock(state.mutex);
    state.busy = false;
  }
  state.changed.notify_all();
}

void SerialExecutor::run_queued_through(State& state, uint64_t seq) {
  // Invariant 4: run, on this thread, every queued task up to `seq`, in order, each once
  // nothing else is running. Stops as soon as `seq` has left the queue (someone runs or
  // ran it): the caller then waits for its Work as usual.
  while (true) {
    std::unique_ptr<Task> task;
    {
      std::unique_lock<std::mutex> lock(state.mutex);
      const auto queued = [&] { return !state.queue.empty() && state.queue.front()->seq <= seq; };
      state.changed.wait(lock, [&] { return !queued() || !state.busy; });
      if (!queued()) return;
      task = std::move(state.queue.front());
      state.queue.pop_front();
      state.busy = true;
    }
    run_task(state, std::move(task));
  }
}

bool SerialExecutor::idle() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->queue.empty() && !state_->busy;
}

}  // namespace course
