// activity.h: what a rank is blocked in right now, readable from outside the process.
//
// When a test or a graded run hangs, "timed out" alone teaches nothing; "rank 2 was still
// in recv from rank 1" points at the bug. Blocking calls (socket send/recv, accept, store
// get) open an ActivityScope naming what they wait for. If a slot has been attached (the
// test harness attaches one in shared memory before forking each rank), the description
// is copied there, so the parent can read it after the rank stops answering.
//
// What this is not: a tracer or a log. Only the innermost current activity is kept.
//
// Thread safety: scopes may open on several threads; the slot shows the most recent.
// Writers within the process take turns (a mutex); the reader in another process may still
// catch a write half done (a torn read costs one garbled diagnostic, never a crash): the
// slot is always NUL-terminated.
#pragma once

#include <cstddef>
#include <string>

namespace course {

/// Publishes activities into `slot` (size bytes, e.g. a MAP_SHARED page). nullptr detaches.
void activity_attach(char* slot, size_t size);

/// Reads a slot written by another process: "" when idle.
std::string activity_read(const char* slot, size_t size);

/// Service threads that block by design (the store server's) call this once so their
/// waits never hide what the rank's own threads are blocked in.
void activity_ignore_this_thread();

/// Whether an activity opened on this thread now would be published: a slot is attached
/// and the thread is not ignored. A caller on a hot path (a collective, a ring step, a
/// socket call that has to wait) builds its description only when this is true, so that
/// with no slot attached (./lessonNN, a benchmark) it formats no string per call:
///
///   std::optional<ActivityScope> activity;
///   if (activity_recorded()) activity.emplace("recv from " + peer);
bool activity_recorded();

/// Marks the current thread as blocked in `what` ("recv from rank 1") until destroyed;
/// restores the previous description then. Costs a short copy when a slot is attached,
/// nothing otherwise.
class ActivityScope {
 public:
  /// Publishes `what` as this thread's activity until the scope ends.
  explicit ActivityScope(const std::string& what);
  ~ActivityScope();
  ActivityScope(const ActivityScope&) = delete;
  ActivityScope& operator=(const ActivityScope&) = delete;

 private:
  std::string previous_;
  bool active_ = false;
};

/// Names the algorithm the current thread runs ("all_reduce_naive") until destroyed: every
/// ActivityScope opened meanwhile on this thread is published as "<label>: <what>"
/// ("all_reduce_naive: recv from rank 2"), so a hang report says which code to look at.
/// Labels nest (the innermost names the scope); operations handed to another thread (a
/// channel's worker) carry no label. Free when no slot is attached.
class ActivityLabel {
 public:
  /// Labels this thread's activities with `algorithm` until the label ends.
  explicit ActivityLabel(const std::string& algorithm);
  ~ActivityLabel();
  ActivityLabel(const ActivityLabel&) = delete;
  ActivityLabel& operator=(const ActivityLabel&) = delete;

 private:
  std::string previous_;
  bool active_ = false;
};

/// Names the operation of a lesson the current thread is in ("ShardedModel (lesson 13):
/// broadcasting unit 2's parameters from rank 0") until destroyed: every ActivityScope
/// opened meanwhile on this thread is published as "<operation>: <label>: <what>", so a
/// hang report names the lesson's step as well as the algorithm under it, which
/// ActivityLabel names and a collective's own label replaces. Contexts nest (the innermost
/// names the step); like labels, they stay on their thread. Free when no slot is attached.
class ActivityContext {
 public:
  /// Prefixes this thread's activities with `operation` until the context ends.
  explicit ActivityContext(const std::string& operation);
  ~ActivityContext();
  ActivityContext(const ActivityContext&) = delete;
  ActivityContext& operator=(const ActivityContext&) = delete;

 private:
  std::string previous_;
  bool active_ = false;
};

}  // namespace course
