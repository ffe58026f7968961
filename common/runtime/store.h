// store.h: the TCP key-value store every job rendezvous through (torch's TCPStore).
//
// Rank 0 hosts a StoreServer on MASTER_ADDR:MASTER_PORT; every rank (rank 0 included)
// talks to it through a StoreClient. Ranks use it to publish their listening addresses
// ("addr/3" -> "10.0.0.7:41234"), to count arrivals (add) and to wait for each other.
//
// Protocol (after the hello of handshake.h with purpose "store"): the client sends one
// frame per request and reads one frame per reply.
//   request: u32 op | u32 key length | key | value bytes     (op: SET=1 GET=2 ADD=3 CHECK=4)
//            GET carries a u64 timeout in milliseconds as its value.
//   reply:   u32 status (0 ok, 1 timeout, 2 bad request) | value bytes
// GET blocks on the server until the key exists or the timeout passes; ADD treats the
// value as a signed 64-bit decimal and returns the new total; CHECK answers "1" or "0".
//
// What this is not: durable or replicated. It lives as long as rank 0 does.
//
// Thread safety: StoreServer serves each connection on its own thread. A StoreClient is
// one connection: use it from one thread at a time (or give each thread its own).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "socket.h"

namespace course {

/// A timeout at least this long waits forever (and keeps the clock's arithmetic from
/// overflowing): the wire carries it as milliseconds.
constexpr uint64_t kStoreForeverMs = 1ull << 40;
/// The most connections a StoreServer serves at once; more are refused (and logged).
constexpr size_t kMaxStoreConnections = 1024;
/// The largest request a StoreServer reads (key and value together): store values are
/// addresses and counters. A larger one is refused and its connection dropped.
constexpr size_t kMaxStoreRequestBytes = 4u << 20;

/// The server. Starts serving in the constructor; stops (closing every connection) in
/// the destructor.
class StoreServer {
 public:
  /// Binds host:port (port 0 picks a free one). Throws ConfigError if the port is in use.
  StoreServer(const std::string& host, int port, std::string token);
  ~StoreServer();
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;
  /// The port it listens on (the kernel's pick when constructed with port 0).
  int port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// One connection to the store.
class StoreClient {
 public:
  /// Connects (retrying until `timeout` while the server starts) and says hello.
  StoreClient(const std::string& host, int port, int rank, const std::string& token,
              Millis timeout = default_timeout());

  /// Sets `key` to `value`, replacing any earlier value, and wakes every get() waiting for it.
  void set(const std::string& key, const std::string& value);
  /// Waits until `key` exists, then returns its value. Throws TimeoutError naming the key.
  std::string get(const std::string& key, Millis timeout = default_timeout());
  /// Adds `delta` to the integer at `key` (0 when absent) and returns the new value.
  int64_t add(const std::string& key, int64_t delta);
  /// True when every key exists. Never waits.
  bool check(const std::vector<std::string>& keys);
  /// Waits until every key exists. Throws TimeoutError naming the first missing key.
  void wait(const std::vector<std::string>& keys, Millis timeout = default_timeout());

  /// A second connection to the same store, as the same rank (for a thread of its own).
  std::unique_ptr<StoreClient> connect_another(Millis timeout = default_timeout()) const;
  /// Bounds each reply's wait on the socket (default_timeout() by default); a get() waits
  /// its own timeout plus at most this much. A short one keeps a frozen store host from
  /// stalling a caller that has a deadline of its own.
  void set_io_timeout(Millis timeout) { io_timeout_ = timeout; }
  /// "host:port rank R": which store this connects to, and as which rank.
  std::string endpoint() const {
    return host_ + ":" + std::to_string(port_) + " rank " + std::to_string(rank_);
  }

 private:
  std::string request(uint32_t op, const std::string& key, const std::string& value,
                      Millis timeout);
  Socket sock_;
  std::string host_;
  int port_ = 0;
  int rank_ = -1;
  std::string token_;
  Millis io_timeout_ = default_timeout();
};

/// A barrier through the store: every one of `world` ranks calls it with the same name.
void store_barrier(StoreClient& store, const std::string& name, int world,
                   Millis timeout = default_timeout());

/// torch's monitored_barrier, through the store: every one of `world` ranks calls it with
/// the same name (and the same number of times). Each rank records its arrival; rank 0
/// waits for every other rank and, when some have not arrived within `timeout`, throws
/// TimeoutError naming them ("ranks 2, 3 had not arrived"): a hang becomes the name of the
/// rank that is stuck. Then rank 0 releases the others, who wait for that (a rank other
/// than 0 that times out says rank 0 did not release it). With wait_for_release = false
/// the others return as soon as they have arrived (how the drivers leave: rank 0 hosts the
/// store, so it must be the last to go).
void monitored_barrier(StoreClient& store, const std::string& name, int rank, int world,
                       Millis timeout = default_timeout(), bool wait_for_release = true);

}  // namespace course
