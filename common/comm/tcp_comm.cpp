// tcp_comm.cpp: see tcp_comm.h.
#include "tcp_comm.h"

#include "collective_checks.h"
#include "error.h"
#include "transport.h"

namespace course {

TcpComm::TcpComm(Mesh mesh, Millis timeout)
    : TcpComm(mesh.rank, mesh.world, socket_streams(std::move(mesh)), timeout) {}

TcpComm::TcpComm(int rank, int world, std::vector<ByteStreamPtr> streams, Millis timeout,
                 RankNames names)
    : rank_(rank),
      world_(world),
      streams_(std::move(streams)),
      timeout_(timeout),
      names_(std::move(names)) {
  if (world_ < 1 || rank_ < 0 || rank_ >= world_ || static_cast<int>(streams_.size()) != world_) {
    throw ConfigError("TcpComm: the mesh says rank " + std::to_string(rank_) + " of " +
                      std::to_string(world_) + " but holds " + std::to_string(streams_.size()) +
                      " connections: build it with connect_full_mesh (lesson 01)");
  }
  for (int peer = 0; peer < world_; ++peer) {
    if (peer != rank_ && !streams_[peer]) {
      throw ConfigError("TcpComm: " + names_(rank_) + " has no connection to " + names_(peer) +
                        ": every peer needs one stream");
    }
  }
  // A subgroup's peers are named by their world rank in every error of their streams
  // (lesson 01's mesh names them by the group's ranks).
  if (!names_.is_world()) {
    for (int peer = 0; peer < world_; ++peer) {
      if (peer != rank_) streams_[peer]->set_peer_name(names_(peer));
    }
  }
  make_channels();
}

void TcpComm::make_channels() {
  // The first error aborts the comm; an error after that is most likely the abort's
  // shutdown cutting an operation short, so the caller is told about the first one.
  const auto on_error = [this](std::exception_ptr error) -> std::exception_ptr {
    if (aborted()) {
      try {
        check_not_aborted();
      } catch (...) {
        return std::current_exception();
      }
    }
    abort(exception_message(error));
    return error;
  };
  for (int peer = 0; peer < world_; ++peer) {
    const std::string to = names_(peer);
    send_channels_.push_back(std::make_unique<SerialExecutor>("send to " + to, on_error));
    recv_channels_.push_back(std::make_unique<SerialExecutor>("recv from " + to, on_error));
  }
}

TcpComm::~TcpComm() {
  bool pending = false;
  for (int peer = 0; peer < world_; ++peer) {
    pending = pending || !send_channels_[peer]->idle() || !recv_channels_[peer]->idle();
  }
  if (pending) abort("the tcp comm was destroyed while operations were still pending");
  // The channels join their workers before the streams close (members die in reverse).
  send_channels_.clear();
  recv_channels_.clear();
}

ByteStream& TcpComm::stream(int peer) {
  check_peer("tcp comm", peer, rank_, world_);
  check_not_aborted();
  return *streams_[peer];
}

SerialExecutor& TcpComm::send_channel(int peer) {
  check_peer("tcp comm", peer, rank_, world_);
  check_not_aborted();
  return *send_channels_[peer];
}

SerialExecutor& TcpComm::recv_channel(int peer) {
  check_peer("tcp comm", peer, rank_, world_);
  check_not_aborted();
  return *recv_channels_[peer];
}

void TcpComm::abort(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(reason_mutex_);
    if (aborted_.load()) return;
    reason_ = reason;
    aborted_.store(true);
  }
  // shutdown(), not close(): another thread may be inside send/recv on the fd right now;
  // shutdown wakes it with an error, close could hand its fd number to a new file.
  for (ByteStreamPtr& stream : streams_) {
    if (stream) stream->shutdown();
  }
}

void TcpComm::check_not_aborted() const {
  if (!aborted_.load()) return;
  std::lock_guard<std::mutex> lock(reason_mutex_);
  throw NetworkError(
      "this tcp comm was aborted after an earlier error, and every call on it "
      "now fails; make a new group. The first error was: " +
      reason_);
}

}  // namespace course
