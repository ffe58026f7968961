// store_test.cpp: tests of common/runtime/store.h and common/runtime/handshake.h (clients as
// threads).
//
// Covers every store operation, a GET that waits for a later SET, timeouts naming the key,
// barriers reused across rounds, strangers (wrong token, garbage bytes, silence) refused
// while the store keeps serving its own job, and a clean shutdown under a blocked GET.
// Run alone: ./build/<dir>/tests/common/test_common --gtest_filter='Store*:Handshake*'
#include "store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

#include "error.h"
#include "handshake.h"

namespace course {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

const std::string kToken = "store-test-token";

struct StoreTest : ::testing::Test {
  StoreServer server{"127.0.0.1", 0, kToken};
  StoreClient client(int rank) { return StoreClient("127.0.0.1", server.port(), rank, kToken, 5s); }
};

TEST_F(StoreTest, SetGetAddCheck) {
  StoreClient c = client(0);
  const std::string binary("a\0b\xff", 4);  // values are bytes, not C strings
  c.set("addr/0", "10.0.0.7:41234");
  c.set("blob", binary);
  EXPECT_EQ(c.get("addr/0", 1s), "10.0.0.7:41234");
  EXPECT_EQ(c.get("blob", 1s), binary);
  c.set("addr/0", "10.0.0.8:1");  // SET overwrites
  EXPECT_EQ(c.get("addr/0", 1s), "10.0.0.8:1");

  EXPECT_EQ(c.add("count", 5), 5);  // absent counts as 0
  EXPECT_EQ(c.add("count", -7), -2);
  EXPECT_EQ(c.add("count", 0), -2);
  EXPECT_EQ(c.get("count", 1s), "-2");

  EXPECT_TRUE(c.check({"addr/0", "count"}));
  EXPECT_FALSE(c.check({"addr/0", "missing"}));
  EXPECT_TRUE(c.check({}));
  EXPECT_THROW(c.add("addr/0", 1), ProtocolError);  // not an integer
}

TEST_F(StoreTest, AddFromManyClientsSumsEveryDelta) {
  const int world = 7;
  std::vector<std::thread> ranks;
  for (int r = 0; r < world; ++r) {
    ranks.emplace_back([&, r] {
      StoreClient c = client(r);
      for (int i = 0; i < 20; ++i) c.add("sum", r * 100 + i);  // rank- and index-dependent
    });
  }
  for (auto& t : ranks) t.join();
  // sum over r, i of (100 r + i) = 20 * 100 * (0+..+6) + 7 * (0+..+19)
  EXPECT_EQ(client(0).add("sum", 0), 20 * 100 * 21 + 7 * 190);
}

TEST_F(StoreTest, GetWaitsForALaterSet) {
  StoreClient getter = client(1);
  std::thread setter([&] {
    StoreClient c = client(0);
    std::this_thread::sleep_for(200ms);
    c.set("late", "value from rank 0");
  });
  const auto t0 = Clock::now();
  EXPECT_EQ(getter.get("late", 5s), "value from rank 0");
  EXPECT_GE(Clock::now() - t0, 150ms);
  setter.join();
}

TEST_F(StoreTest, GetTimeoutNamesTheKey) {
  StoreClient c = client(0);
  const auto t0 = Clock::now();
  try {
    c.get("addr/3", 200ms);
    FAIL() << "get of a key nobody sets returned";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("'addr/3'"), std::string::npos) << e.what();
  }
  EXPECT_LT(Clock::now() - t0, 3s);
  c.set("after", "ok");  // the connection is still usable after a timeout
  EXPECT_EQ(c.get("after", 1s), "ok");
}

TEST_F(StoreTest, WaitNamesTheFirstMissingKey) {
  StoreClient c = client(0);
  c.set("addr/0", "x");
  c.set("addr/1", "y");
  c.wait({"addr/0", "addr/1"}, 1s);
  try {
    c.wait({"addr/0", "addr/1", "addr/2", "addr/3"}, 200ms);
    FAIL() << "wait returned with keys missing";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("'addr/2'"), std::string::npos) << e.what();
  }
}

TEST_F(StoreTest, BarrierHoldsEveryoneAndCanBeReused) {
  const int world = 5;
  std::atomic<int> arrived{0};
  std::atomic<bool> early_exit{false};
  std::vector<std::thread> ranks;
  for (int r = 0; r < world; ++r) {
    ranks.emplace_back([&, r] {
      StoreClient c = client(r);
      for (int round = 0; round < 3; ++round) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5 * r));  // arrive staggered
        arrived.fetch_add(1);
        store_barrier(c, "step", world, 5s);
        if (arrived.load() < world * (round + 1)) early_exit = true;
      }
    });
  }
  for (auto& t : ranks) t.join();
  EXPECT_FALSE(early_exit) << "a rank left the barrier before everyone arrived";
}

TEST_F(StoreTest, BarrierTimeoutSaysHowManyArrived) {
  StoreClient c = client(0);
  try {
    store_barrier(c, "lonely", 3, 200ms);
    FAIL() << "a barrier of 3 passed with one rank";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("only 1 of 3"), std::string::npos) << e.what();
  }
}

TEST_F(StoreTest, WrongTokenIsRefusedAndLoggedThenServingGoesOn) {
  ::testing::internal::CaptureStderr();
  try {
    StoreClient stranger("127.0.0.1", server.port(), 0, "another-job", 5s);
    ::testing::internal::GetCapturedStderr();
    FAIL() << "a client with another job's token was let in";
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("wrong job token"), std::string::npos) << e.what();
  }
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("refused a connection from 127.0.0.1:"), std::string::npos) << log;
  EXPECT_NE(log.find("wrong job token"), std::string::npos) << log;

  StoreClient c = client(0);
  c.set("k", "v");
  EXPECT_EQ(c.get("k", 1s), "v");
}

TEST_F(StoreTest, GarbageBytesAreRefusedThenServingGoesOn) {
  Socket raw = Socket::connect("127.0.0.1", server.port(), 5s);
  const std::string http = "GET / HTTP/1.1\r\nHost: store\r\n\r\n";
  raw.send_all(http.data(), http.size(), 5s);
  // The store answers "refused: ..." and hangs up (or resets the connection, having left
  // our unread bytes behind). Either way this connection ends, and promptly.
  try {
    const std::string answer = raw.recv_frame(5s, 4096);
    EXPECT_EQ(answer.rfind("refused: ", 0), 0u) << answer;
    char c;
    EXPECT_THROW(raw.recv_all(&c, 1, 5s), PeerClosedError);
  } catch (const PeerClosedError&) {
  }
  StoreClient c = client(2);
  EXPECT_EQ(c.add("after-garbage", 2), 2);
}

TEST_F(StoreTest, SilentStrangerDoesNotHoldUpOthers) {
  Socket silent = Socket::connect("127.0.0.1", server.port(), 5s);  // connects, says nothing
  const auto t0 = Clock::now();
  StoreClient c = client(0);
  c.set("k", "v");
  EXPECT_EQ(c.get("k", 1s), "v");
  EXPECT_LT(Clock::now() - t0, 2s);
}

/// Threads of this process right now.
int thread_count() {
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
    (void)entry;
    ++n;
  }
  return n;
}

TEST_F(StoreTest, SilentConnectionsCostNoThreads) {
  const int before = thread_count();
  std::vector<Socket> silent;
  for (int i = 0; i < 200; ++i) silent.push_back(Socket::connect("127.0.0.1", server.port(), 5s));
  std::this_thread::sleep_for(200ms);  // let the accept thread see them all
  EXPECT_LE(thread_count(), before + 2) << "the store started threads for silent connections";
  const auto t0 = Clock::now();
  StoreClient c = client(1);
  EXPECT_EQ(c.add("after-silence", 3), 3);
  EXPECT_LT(Clock::now() - t0, 2s);
}

// A client with the token announces a request far over the cap: refused at once, naming
// the cap, without allocating what it announced; the store serves on.
TEST_F(StoreTest, ARequestOverTheCapIsRefusedNamingIt) {
  Socket raw = Socket::connect("127.0.0.1", server.port(), 5s);
  hello_send(raw, Hello{kToken, 5, "store"}, 5s);
  std::string header;
  put_u64(header, 64ull << 20);  // 64 MiB announced, none sent
  ::testing::internal::CaptureStderr();
  raw.send_all(header.data(), header.size(), 5s);
  char byte;
  EXPECT_THROW(raw.recv_all(&byte, 1, 5s), PeerClosedError);  // dropped
  const std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find(std::to_string(kMaxStoreRequestBytes)), std::string::npos) << log;
  StoreClient c = client(1);
  EXPECT_EQ(c.add("after-big", 4), 4);
}

TEST_F(StoreTest, MonitoredBarrierHoldsEveryoneAndIsReusable) {
  constexpr int kWorld = 3, kRounds = 3;
  std::atomic<int> arrived[kRounds] = {};
  std::atomic<int> early{0};
  std::vector<std::thread> threads;
  for (int r = 0; r < kWorld; ++r) {
    threads.emplace_back([&, r] {
      StoreClient c = client(r);
      for (int round = 0; round < kRounds; ++round) {
        std::this_thread::sleep_for(std::chrono::milliseconds(30 * ((r + round) % kWorld)));
        ++arrived[round];
        monitored_barrier(c, "mb", r, kWorld, 5s);
        if (arrived[round].load() != kWorld) ++early;  // left before everyone arrived
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(early.load(), 0);
}

TEST_F(StoreTest, MonitoredBarrierNamesTheRanksThatDidNotArrive) {
  constexpr int kWorld = 4;  // rank 2 never comes
  std::vector<std::thread> threads;
  std::string error0;
  for (int r : {0, 1, 3}) {
    threads.emplace_back([&, r] {
      StoreClient c = client(r);
      try {
        monitored_barrier(c, "exit", r, kWorld, r == 0 ? 500ms : 3s, /*wait_for_release=*/false);
      } catch (const TimeoutError& e) {
        if (r == 0) error0 = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_NE(error0.find("rank 2 has not arrived"), std::string::npos) << error0;
}

TEST(Handshake, ASilentForeignServerIsNamedWithinTheHelloDeadline) {
  Listener foreign("127.0.0.1", 0);
  std::thread server([&] {
    Socket s = foreign.accept_any(5s);
    std::this_thread::sleep_for(1500ms);  // reads nothing, answers nothing
  });
  Socket s = Socket::connect("127.0.0.1", foreign.port(), 5s);
  const auto t0 = Clock::now();
  try {
    hello_send(s, Hello{"tok", 1, "store"}, 1s);
    FAIL() << "a silent server accepted as a course store";
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("not a course process"), std::string::npos) << e.what();
  }
  EXPECT_LT(Clock::now() - t0, 1500ms);
  server.join();
}

TEST(Handshake, AForeignServerSpeakingAnotherProtocolIsNamedAtOnce) {
  Listener foreign("127.0.0.1", 0);
  std::thread server([&] {
    Socket s = foreign.accept_any(5s);
    const std::string banner = "SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n";
    s.send_all(banner.data(), banner.size(), 5s);
    std::this_thread::sleep_for(500ms);
  });
  Socket s = Socket::connect("127.0.0.1", foreign.port(), 5s);
  const auto t0 = Clock::now();
  EXPECT_THROW(hello_send(s, Hello{"tok", 1, "store"}, 30s), ProtocolError);
  EXPECT_LT(Clock::now() - t0, 1s);
  server.join();
}

TEST(Store, ShutdownWakesABlockedGet) {
  auto server = std::make_unique<StoreServer>("127.0.0.1", 0, kToken);
  StoreClient c("127.0.0.1", server->port(), 0, kToken, 5s);
  std::thread waiter([&] { EXPECT_THROW(c.get("never", 60s), NetworkError); });
  std::this_thread::sleep_for(100ms);
  const auto t0 = Clock::now();
  server.reset();  // must not wait for the GET's 60 s
  waiter.join();
  EXPECT_LT(Clock::now() - t0, 5s);
}

TEST(Store, ShutdownRightAfterTheLastSetStillDeliversIt) {
  // The end of a job: everyone waits on "done"; the last rank sets it and rank 0 tears the
  // store down at once. Every waiter must still get the value, not a closed connection.
  auto server = std::make_unique<StoreServer>("127.0.0.1", 0, kToken);
  const int waiters = 6;
  std::vector<std::unique_ptr<StoreClient>> clients;
  for (int r = 0; r < waiters; ++r) {
    clients.push_back(std::make_unique<StoreClient>("127.0.0.1", server->port(), r, kToken, 5s));
  }
  std::vector<std::string> got(waiters);
  std::vector<std::thread> threads;
  for (int r = 0; r < waiters; ++r) {
    threads.emplace_back([&, r] {
      try {
        got[r] = clients[r]->get("done", 10s);
      } catch (const Error& e) {
        got[r] = e.what();
      }
    });
  }
  std::this_thread::sleep_for(100ms);  // let every GET reach the server and wait there
  StoreClient last("127.0.0.1", server->port(), waiters, kToken, 5s);
  last.set("done", "bye");
  server.reset();
  for (auto& t : threads) t.join();
  for (int r = 0; r < waiters; ++r) EXPECT_EQ(got[r], "bye") << "waiter " << r;
}

TEST(Handshake, WrongPurposeIsRefusedOnBothSides) {
  Listener listener("127.0.0.1", 0);
  std::thread server([&] {
    Socket s = listener.accept(5s);
    ::testing::internal::CaptureStderr();
    EXPECT_THROW(hello_accept(s, "tok", "mesh", 5s), ProtocolError);
    ::testing::internal::GetCapturedStderr();
  });
  Socket s = Socket::connect("127.0.0.1", listener.port(), 5s);
  try {
    hello_send(s, Hello{"tok", 3, "store"}, 5s);
    FAIL() << "hello with the wrong purpose accepted";
  } catch (const ProtocolError& e) {
    EXPECT_NE(std::string(e.what()).find("'store'"), std::string::npos) << e.what();
  }
  server.join();
}

TEST(Handshake, HelloCarriesRankAndPurpose) {
  Listener listener("127.0.0.1", 0);
  Hello seen;
  std::thread server([&] {
    Socket s = listener.accept(5s);
    seen = hello_accept(s, "tok", "mesh", 5s);
  });
  Socket s = Socket::connect("127.0.0.1", listener.port(), 5s);
  hello_send(s, Hello{"tok", 6, "mesh"}, 5s);
  server.join();
  EXPECT_EQ(seen.rank, 6);
  EXPECT_EQ(seen.purpose, "mesh");
  EXPECT_EQ(seen.token, "tok");
}

TEST(Handshake, DerivedTokensSeparateJobs) {
  EXPECT_EQ(derive_job_token("node0", 29500), derive_job_token("node0", 29500));
  EXPECT_NE(derive_job_token("node0", 29500), derive_job_token("node0", 29501));
  EXPECT_NE(derive_job_token("node0", 29500), derive_job_token("node1", 29500));
}

}  // namespace
}  // namespace course
