// gloo_store.h: Gloo's rendezvous store, served by the course's own store (store.h).
//
// Gloo's ranks find each other through a gloo::rendezvous::Store: each rank sets a key
// with its listening addresses and waits for everyone else's. GlooStore answers those
// calls with the job's StoreClient, every key under a prefix ("gloo/pg/0/"), so a gloo
// group and the course's tcp mesh rendezvous through the one store rank 0 hosts, without
// their keys meeting. torch.distributed does the same with its TCPStore and a PrefixStore.
//
// What this is not: public. Only the gloo backend's .cpp files include it (they are
// compiled only when CMake found Gloo). Used only during GlooProcessGroup's constructor.
//
// Thread safety: as StoreClient (one thread at a time).
#pragma once

#include <gloo/rendezvous/store.h>

#include <string>
#include <vector>

#include "store.h"

namespace course {

/// Gloo's rendezvous store on top of the course's StoreClient, under a key prefix.
class GlooStore : public gloo::rendezvous::Store {
 public:
  /// `timeout` bounds every get and wait (Gloo's own default would be 30 s).
  GlooStore(StoreClient& store, std::string prefix, Millis timeout)
      : store_(store), prefix_(std::move(prefix)), timeout_(timeout) {}

  /// Sets prefix + key.
  void set(const std::string& key, const std::vector<char>& data) override;
  /// Waits for prefix + key (up to the timeout) and returns its value.
  std::vector<char> get(const std::string& key) override;
  /// Waits, up to the timeout given at construction, until every key exists.
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  /// Waits, up to `timeout`, until every key exists. Throws TimeoutError naming the first
  /// missing one.
  void wait(const std::vector<std::string>& keys,
            const std::chrono::milliseconds& timeout) override;

 private:
  StoreClient& store_;
  std::string prefix_;
  Millis timeout_;
};

}  // namespace course
