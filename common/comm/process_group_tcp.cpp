// process_group_tcp.cpp: the tcp backend's ordering, checks and failure policy around the
// lessons' algorithms (see process_group_tcp.h).
#include "process_group_tcp.h"

#include <optional>

#include "activity.h"
#include "collective_checks.h"
#include "error.h"
#include "transport.h"

namespace course {
namespace {

void check_user_tag(const char* op, int tag) {
  if (tag < 0) {
    throw ConfigError(std::string(op) + ": tag " + std::to_string(tag) +
                      " is negative; negative tags belong to the collectives (lesson 02's "
                      "tags.h). Use a tag >= 0");
  }
}

bool is_point_to_point(const char* entry) {
  const std::string e = entry;
  return e == "send" || e == "recv" || e == "isend" || e == "irecv";
}

// What a hang report calls the algorithm behind `entry`: "all_reduce, ring (lesson 05)".
std::string algorithm_label(const TcpAlgorithms& algorithms, const char* entry) {
  const auto name = algorithms.names.find(entry);
  return name == algorithms.names.end() ? std::string(entry)
                                        : std::string(entry) + ", " + name->second;
}

}  // namespace

TcpProcessGroup::TcpProcessGroup(Mesh mesh, TcpAlgorithms algorithms, Millis timeout,
                                 std::unique_ptr<CollectiveMonitor> monitor)
    : TcpProcessGroup(mesh.rank, mesh.world, socket_streams(std::move(mesh)), std::move(algorithms),
                      timeout, std::move(monitor)) {}

TcpProcessGroup::TcpProcessGroup(int rank, int world, std::vector<ByteStreamPtr> streams,
                                 TcpAlgorithms algorithms, Millis timeout,
                                 std::unique_ptr<CollectiveMonitor> monitor, RankNames names)
    : comm_(rank, world, std::move(streams), timeout, std::move(names)),
      algorithms_(std::move(algorithms)),
      monitor_(std::move(monitor)),
      // Any error in a call aborts the comm (tcp_comm.h's failure policy), whether it
      // came from a socket or from a check that failed on this rank only: either way the
      // other ranks would otherwise wait for us until their timeout.
      calls_("tcp process group", [this](std::exception_ptr error) -> std::exception_ptr {
        if (!comm_.aborted()) comm_.abort(exception_message(error));
        return error;
      }) {}

TcpProcessGroup::~TcpProcessGroup() {
  if (!calls_.idle()) {
    comm_.abort("the tcp process group was destroyed while an async all_reduce was pending");
  }
}

void TcpProcessGroup::run(const char* entry, bool entry_installed,
                          const std::function<void()>& call) {
  if (!entry_installed) {
    throw ConfigError(std::string("the tcp backend has no ") + entry +
                      " algorithm installed: install the lesson that writes it (send, recv, "
                      "isend, irecv: install_lesson02; broadcast, scatter, gather, barrier: "
                      "install_lesson03; reduce, all_reduce, all_gather, reduce_scatter, "
                      "all_to_all: install_lesson04)");
  }
  comm_.check_not_aborted();
  // The label's text is built only when a hang report could show it (activity.h).
  std::optional<ActivityLabel> label;
  if (activity_recorded()) label.emplace(algorithm_label(algorithms_, entry));
  if (!monitor_ || is_point_to_point(entry)) {
    calls_.run_inline(call);
    return;
  }
  calls_.run_inline(monitored(entry, call));
}

std::function<void()> TcpProcessGroup::monitored(const char* entry, std::function<void()> call) {
  if (!monitor_) return call;
  const uint64_t seq = monitor_->enter(entry);  // now, in call order, even for async calls
  return [this, entry, seq, call = std::move(call)] {
    try {
      call();
      monitor_->leave(seq);
    } catch (...) {
      // Abort first, so that the peers fail now and report while this rank waits for
      // their reports (the monitor's grace), instead of after it.
      if (!comm_.aborted()) comm_.abort(exception_message(std::current_exception()));
      monitor_->rethrow_with_report(seq, entry);
    }
  };
}

// ---- point to point ----------------------------------------------------------------

void TcpProcessGroup::send(std::span<const float> data, int dst, int tag) {
  check_user_tag("send", tag);
  check_peer("send", dst, rank(), size());
  run("send", bool(algorithms_.send), [&] { algorithms_.send(comm_, data, dst, tag); });
}

void TcpProcessGroup::recv(std::span<float> data, int src, int tag) {
  check_user_tag("recv", tag);
  check_peer("recv", src, rank(), size());
  run("recv", bool(algorithms_.recv), [&] { algorithms_.recv(comm_, data, src, tag); });
}

WorkPtr TcpProcessGroup::isend(std::span<const float> data, int dst, int tag) {
  check_user_tag("isend", tag);
  check_peer("isend", dst, rank(), size());
  WorkPtr work;
  run("isend", bool(algorithms_.isend), [&] { work = algorithms_.isend(comm_, data, dst, tag); });
  return work;
}

WorkPtr TcpProcessGroup::irecv(std::span<float> data, int src, int tag) {
  check_user_tag("irecv", tag);
  check_peer("irecv", src, rank(), size());
  WorkPtr work;
  run("irecv", bool(algorithms_.irecv), [&] { work = algorithms_.irecv(comm_, data, src, tag); });
  return work;
}

// ---- collectives -------------------------------------------------------------------
// The algorithms check their own arguments (collective_checks.h), so that calling a
// lesson's function directly is as safe as calling it through the group.

void TcpProcessGroup::broadcast(std::span<float> data, int root) {
  run("broadcast", bool(algorithms_.broadcast), [&] { algorithms_.broadcast(comm_, data, root); });
}

void TcpProcessGroup::scatter(std::span<const float> input, std::span<float> output, int root) {
  run("scatter", bool(algorithms_.scatter),
      [&] { algorithms_.scatter(comm_, input, output, root); });
}

void TcpProcessGroup::gather(std::span<const float> input, std::span<float> output, int root) {
  run("gather", bool(algorithms_.gather), [&] { algorithms_.gather(comm_, input, output, root); });
}

void TcpProcessGroup::barrier() {
  run("barrier", bool(algorithms_.barrier), [&] { algorithms_.barrier(comm_); });
}

void TcpProcessGroup::reduce(std::span<float> data, ReduceOp op, int root) {
  run("reduce", bool(algorithms_.reduce), [&] { algorithms_.reduce(comm_, data, op, root); });
}

void TcpProcessGroup::all_reduce(std::span<float> data, ReduceOp op) {
  run("all_reduce", bool(algorithms_.all_reduce), [&] { algorithms_.all_reduce(comm_, data, op); });
}

void TcpProcessGroup::all_gather(std::span<const float> input, std::span<float> output) {
  run("all_gather", bool(algorithms_.all_gather),
      [&] { algorithms_.all_gather(comm_, input, output); });
}

void TcpProcessGroup::reduce_scatter(std::span<const float> input, std::span<float> output,
                                     ReduceOp op) {
  run("reduce_scatter", bool(algorithms_.reduce_scatter),
      [&] { algorithms_.reduce_scatter(comm_, input, output, op); });
}

void TcpProcessGroup::all_to_all(std::span<const float> input, std::span<float> output) {
  run("all_to_all", bool(algorithms_.all_to_all),
      [&] { algorithms_.all_to_all(comm_, input, output); });
}

WorkPtr TcpProcessGroup::submit(const char* entry, bool entry_installed, std::function<void()> call,
                                const std::string& what) {
  if (!entry_installed) run(entry, false, [] {});
  comm_.check_not_aborted();
  return calls_.submit(monitored(entry,
                                 [this, entry, call = std::move(call)] {
                                   std::optional<ActivityLabel> label;
                                   if (activity_recorded()) {
                                     label.emplace(algorithm_label(algorithms_, entry));
                                   }
                                   call();
                                 }),
                       what, /*run_on_wait=*/true);
}

WorkPtr TcpProcessGroup::all_reduce_async(std::span<float> data, ReduceOp op) {
  return submit(
      "all_reduce", bool(algorithms_.all_reduce),
      [this, data, op] { algorithms_.all_reduce(comm_, data, op); },
      "all_reduce_async of " + std::to_string(data.size()) + " elements (" + reduce_op_name(op) +
          ")");
}

WorkPtr TcpProcessGroup::reduce_scatter_async(std::span<const float> input, std::span<float> output,
                                              ReduceOp op) {
  return submit(
      "reduce_scatter", bool(algorithms_.reduce_scatter),
      [this, input, output, op] { algorithms_.reduce_scatter(comm_, input, output, op); },
      "reduce_scatter_async of " + std::to_string(input.size()) + " elements (" +
          reduce_op_name(op) + ")");
}

WorkPtr TcpProcessGroup::all_gather_async(std::span<const float> input, std::span<float> output) {
  return submit(
      "all_gather", bool(algorithms_.all_gather),
      [this, input, output] { algorithms_.all_gather(comm_, input, output); },
      "all_gather_async of " + std::to_string(output.size()) + " elements");
}

}  // namespace course
