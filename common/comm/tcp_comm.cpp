// tcp_comm.cpp: see tcp_comm.h.
#include "tcp_comm.h"

#include "collective_checks.h"
#include "error.h"

namespace course {

TcpComm::TcpComm(Mesh mesh, Millis timeout) : mesh_(std::move(mesh)), timeout_(timeout) {
  if (mesh_.world < 1 || mesh_.rank < 0 || mesh_.rank >= mesh_.world ||
      static_cast<int>(mesh_.peers.size()) != mesh_.world) {
    throw ConfigError("TcpComm: the mesh says rank " + std::to_string(mesh_.rank) + " of " +
                      std::to_string(mesh_.world) + " but holds " +
                      std::to_string(mesh_.peers.size()) +
                      " sockets: build it with connect_full_mesh (lesson 01)");
  }
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
  for (int peer = 0; peer < mesh_.world; ++peer) {
    const std::string to = "rank " + std::to_string(peer);
    send_channels_.push_back(std::make_unique<SerialExecutor>("send to " + to, on_error));
    recv_channels_.push_back(std::make_unique<SerialExecutor>("recv from " + to, on_error));
  }
}

TcpComm::~TcpComm() {
  bool pending = false;
  for (int peer = 0; peer < mesh_.world; ++peer) {
    pending = pending || !send_channels_[peer]->idle() || !recv_channels_[peer]->idle();
  }
  if (pending) abort("the tcp comm was destroyed while operations were still pending");
  // The channels join their workers before the sockets close (members die in reverse).
  send_channels_.clear();
  recv_channels_.clear();
}

Socket& TcpComm::socket(int peer) {
  check_peer("tcp comm", peer, mesh_.rank, mesh_.world);
  check_not_aborted();
  return mesh_.peers[peer];
}

SerialExecutor& TcpComm::send_channel(int peer) {
  check_peer("tcp comm", peer, mesh_.rank, mesh_.world);
  check_not_aborted();
  return *send_channels_[peer];
}

SerialExecutor& TcpComm::recv_channel(int peer) {
  check_peer("tcp comm", peer, mesh_.rank, mesh_.world);
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
  for (Socket& sock : mesh_.peers) sock.shutdown();
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
