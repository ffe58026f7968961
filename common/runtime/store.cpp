// store.cpp: the rendezvous key-value store, server and client (see store.h).
//
// Server threads:
//
//   accept thread ──accept──> connection thread 1: hello, then request/reply until EOF
//                 ──accept──> connection thread 2: ...
//                 ──accept──> connection thread for a stranger: hello refused, ends
//
// The accept thread hands out only connections that have sent their first bytes
// (listener.cpp), so a stranger that connects and says nothing never gets a thread; the
// hello then runs on the connection's own thread. At most kMaxStoreConnections are served
// at once, and a request may be at most kMaxStoreRequestBytes (store.h): a client cannot
// make rank 0 run a thousand threads or allocate gigabytes.
// A GET for a missing key waits on the server, on its connection's thread, for a
// condition variable that every SET and ADD notifies: no client polls.
//
// Stopping (the destructor): a byte on the wake pipe ends the accept loop; `stopping` wakes
// the GETs waiting on the condition variable; shutting down the read side of every
// connection wakes the threads waiting for a next request; then every thread is joined.
//
// What this is not: durable or replicated (it lives as long as rank 0 does).
#include "store.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "activity.h"
#include "error.h"
#include "handshake.h"

namespace course {
namespace {

enum Op : uint32_t { kSet = 1, kGet = 2, kAdd = 3, kCheck = 4 };
enum Status : uint32_t { kOk = 0, kTimedOut = 1, kBadRequest = 2 };

std::string reply(Status status, const std::string& value = "") {
  std::string out;
  put_u32(out, status);
  return out + value;
}

bool parse_i64(const std::string& text, int64_t& out) {
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && ptr == end && !text.empty();
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Server

struct StoreServer::Impl {
  struct Connection {
    Socket sock;
    std::thread thread;
    std::atomic<bool> done{false};
  };

  Listener listener;
  std::string token;
  int wake[2] = {-1, -1};  // the destructor writes to wake[1] to end the accept loop
  std::thread accept_thread;
  // Touched only by the accept thread, and by the destructor once that thread is joined.
  std::list<std::unique_ptr<Connection>> connections;

  std::mutex mu;  // guards data and stopping
  std::condition_variable changed;
  std::map<std::string, std::string> data;
  bool stopping = false;

  void accept_loop();
  void serve(Connection& conn);
  /// The reply to one request, or nullopt when the server is stopping.
  std::optional<std::string> handle(const std::string& request);
  /// Joins the threads of connections that have ended.
  void reap_finished();
};

void StoreServer::Impl::accept_loop() {
  activity_ignore_this_thread();
  while (true) {
    Socket sock;
    try {
      // Only connections that have said something come out (listener.cpp): silent ones
      // never cost a thread. An invalid socket means the destructor asked us to stop.
      sock = listener.accept(Millis::max());
      if (!sock.valid()) return;
    } catch (const TimeoutError&) {
      continue;
    } catch (const Error& e) {
      // Out of file descriptors, say: keep serving the connections we have.
      log_warning(std::string("store: accept failed: ") + e.detail());
      std::this_thread::sleep_for(Millis(50));
      continue;
    }
    reap_finished();
    if (connections.size() >= kMaxStoreConnections) {
      log_warning("store: refused a connection from " + sock.peer_name() + ": it already serves " +
                  std::to_string(kMaxStoreConnections) +
                  " connections, the most it takes (a job has one per rank)");
      continue;  // closing it tells the client
    }
    auto conn = std::make_unique<Connection>();
    conn->sock = std::move(sock);
    Connection& c = *conn;
    connections.push_back(std::move(conn));
    c.thread = std::thread([this, &c] { serve(c); });
  }
}

void StoreServer::Impl::serve(Connection& conn) {
  activity_ignore_this_thread();
  try {
    const Hello hello = hello_accept(conn.sock, token, "store");
    conn.sock.set_peer_name("rank " + std::to_string(hello.rank) + " (" + conn.sock.peer_name() +
                            ")");
  } catch (const Error&) {
    // hello_accept has logged the stranger and the reason; this connection is over.
    conn.sock.shutdown();
    conn.done = true;
    return;
  }
  try {
    // One request frame in, one reply frame out, until the client hangs up. A client may
    // stay idle for as long as its job runs, so the wait for the next request is unbounded.
    while (true) {
      const std::string request = conn.sock.recv_frame(Millis::max(), kMaxStoreRequestBytes);
      const std::optional<std::string> answer = handle(request);
      if (!answer) break;
      conn.sock.send_frame(*answer);
    }
  } catch (const PeerClosedError&) {
    // The client is done (or the destructor shut the socket down).
  } catch (const Error& e) {
    std::lock_guard<std::mutex> lock(mu);
    if (!stopping) log_warning("store: dropped " + conn.sock.peer_name() + ": " + e.detail());
  }
  conn.sock.shutdown();
  conn.done = true;
}

// A request:  | u32 op | u32 key length | key | value |
// A reply:    | u32 status | value |
std::optional<std::string> StoreServer::Impl::handle(const std::string& request) {
  if (request.size() < 8) return reply(kBadRequest, "request shorter than its 8-byte header");
  const uint32_t op = get_u32(request.data());
  const uint32_t key_len = get_u32(request.data() + 4);
  if (request.size() - 8 < key_len) return reply(kBadRequest, "key runs past the request");
  const std::string key = request.substr(8, key_len);
  const std::string value = request.substr(8 + key_len);

  std::unique_lock<std::mutex> lock(mu);
  switch (op) {
    case kSet:
      data[key] = value;
      changed.notify_all();
      return reply(kOk);
    case kGet: {
      if (value.size() != 8) return reply(kBadRequest, "GET needs a u64 timeout");
      const uint64_t ms = get_u64(value.data());
      auto ready = [&] { return stopping || data.count(key) != 0; };
      if (ms >= kStoreForeverMs) {
        changed.wait(lock, ready);
      } else {
        changed.wait_for(lock, std::chrono::milliseconds(ms), ready);
      }
      const auto it = data.find(key);
      if (it != data.end()) return reply(kOk, it->second);
      return stopping ? std::nullopt : std::optional<std::string>(reply(kTimedOut));
    }
    case kAdd: {
      int64_t delta = 0, total = 0;
      if (!parse_i64(value, delta)) return reply(kBadRequest, "ADD needs a decimal delta");
      const auto it = data.find(key);
      if (it != data.end() && !parse_i64(it->second, total)) {
        return reply(kBadRequest, "ADD on key '" + key + "' whose value is not an integer");
      }
      total += delta;
      data[key] = std::to_string(total);
      changed.notify_all();
      return reply(kOk, std::to_string(total));
    }
    case kCheck:
      return reply(kOk, data.count(key) != 0 ? "1" : "0");
    default:
      return reply(kBadRequest, "unknown op " + std::to_string(op));
  }
}

void StoreServer::Impl::reap_finished() {
  for (auto it = connections.begin(); it != connections.end();) {
    if ((*it)->done) {
      (*it)->thread.join();
      it = connections.erase(it);
    } else {
      ++it;
    }
  }
}

StoreServer::StoreServer(const std::string& host, int port, std::string token)
    : impl_(std::make_unique<Impl>()) {
  impl_->listener = Listener(host, port);
  impl_->token = std::move(token);
  COURSE_CHECK_SYS(::pipe2(impl_->wake, O_CLOEXEC), "pipe2() for the store");
  impl_->listener.set_wake_fd(impl_->wake[0]);
  impl_->accept_thread = std::thread([impl = impl_.get()] { impl->accept_loop(); });
}

StoreServer::~StoreServer() {
  Impl& s = *impl_;
  const char byte = 'x';
  if (::write(s.wake[1], &byte, 1) != 1) {
    log_warning("store: could not wake the accept thread; it stays blocked");
  }
  s.accept_thread.join();
  // No new connections now. Stop in two steps, so that no reply already earned is lost
  // (a rank that has just passed its last barrier may still be waiting for that reply):
  //  1. `stopping` wakes the GETs still waiting: a GET whose key is there now gets its
  //     value, any other gets its connection closed.
  //  2. Shutting down the read side ends every wait for a next request, while the write
  //     side stays open for replies in progress. Each thread then ends on its own.
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.stopping = true;
  }
  s.changed.notify_all();
  for (auto& conn : s.connections) ::shutdown(conn->sock.fd(), SHUT_RD);
  for (auto& conn : s.connections) conn->thread.join();
  s.connections.clear();
  ::close(s.wake[0]);
  ::close(s.wake[1]);
}

int StoreServer::port() const {
  return impl_->listener.port();
}

// ---------------------------------------------------------------------------------------
// Client

StoreClient::StoreClient(const std::string& host, int port, int rank, const std::string& token,
                         Millis timeout)
    : host_(host), port_(port), rank_(rank), token_(token) {
  sock_ = Socket::connect(host, port, timeout);
  sock_.set_peer_name("the store at " + host + ":" + std::to_string(port));
  hello_send(sock_, Hello{token, rank, "store"}, timeout);
}

std::string StoreClient::request(uint32_t op, const std::string& key, const std::string& value,
                                 Millis timeout) {
  std::string frame;
  put_u32(frame, op);
  put_u32(frame, static_cast<uint32_t>(key.size()));
  frame += key;
  frame += value;
  sock_.send_frame(frame, timeout);
  const std::string answer = sock_.recv_frame(timeout);
  if (answer.size() < 4) throw ProtocolError(sock_.peer_name() + " sent a reply without status");
  const uint32_t status = get_u32(answer.data());
  if (status == kOk) return answer.substr(4);
  if (status == kTimedOut) {
    throw TimeoutError("key '" + key + "' did not appear in " + sock_.peer_name() +
                       " in time: the rank that should set it has not got there (did every "
                       "rank start? is one stuck or dead?)");
  }
  throw ProtocolError(sock_.peer_name() + " rejected a request for key '" + key +
                      "': " + answer.substr(4));
}

std::unique_ptr<StoreClient> StoreClient::connect_another(Millis timeout) const {
  return std::make_unique<StoreClient>(host_, port_, rank_, token_, timeout);
}

void StoreClient::set(const std::string& key, const std::string& value) {
  request(kSet, key, value, io_timeout_);
}

std::string StoreClient::get(const std::string& key, Millis timeout) {
  timeout = std::max(timeout, Millis(0));
  const bool forever = static_cast<uint64_t>(timeout.count()) >= kStoreForeverMs;
  std::string wait_ms;
  put_u64(wait_ms, forever ? kStoreForeverMs : static_cast<uint64_t>(timeout.count()));
  // The server answers "timed out" when its wait ends; give its reply time to arrive
  // before our own socket timeout would fire.
  const Millis socket_timeout =
      forever ? Millis::max() : timeout + std::min<Millis>(io_timeout_, std::chrono::seconds(10));
  try {
    return request(kGet, key, wait_ms, socket_timeout);
  } catch (const TimeoutError&) {
    throw TimeoutError("waited " + std::to_string(timeout.count()) + " ms for key '" + key +
                       "' in " + sock_.peer_name() +
                       ": the rank that should set it has not got there (did every rank "
                       "start? is one stuck or dead?)");
  }
}

int64_t StoreClient::add(const std::string& key, int64_t delta) {
  const std::string total = request(kAdd, key, std::to_string(delta), io_timeout_);
  int64_t value = 0;
  if (!parse_i64(total, value)) {
    throw ProtocolError(sock_.peer_name() + " answered ADD with '" + total + "'");
  }
  return value;
}

bool StoreClient::check(const std::vector<std::string>& keys) {
  for (const std::string& key : keys) {
    if (request(kCheck, key, "", io_timeout_) != "1") return false;
  }
  return true;
}

void StoreClient::wait(const std::vector<std::string>& keys, Millis timeout) {
  using Clock = std::chrono::steady_clock;
  const bool forever =
      static_cast<uint64_t>(std::max<int64_t>(timeout.count(), 0)) >= kStoreForeverMs;
  const auto end = forever ? Clock::time_point::max() : Clock::now() + timeout;
  for (const std::string& key : keys) {
    const Millis left =
        forever ? timeout : std::max(Millis(0), std::chrono::ceil<Millis>(end - Clock::now()));
    get(key, left);  // throws TimeoutError naming this key, the first one still missing
  }
}

}  // namespace course
