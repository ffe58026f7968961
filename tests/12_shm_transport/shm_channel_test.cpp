// shm_channel_test.cpp: lesson 12's channel and stream: every byte in order across slot
// boundaries, slow consumers and producers, the doorbell that wakes a sleeper, a peer
// killed mid-message, and no segment left in /dev/shm after a run or a crash.
//
//   ctest -L lesson12     or     ./build/solutions/test_12 --gtest_filter='ShmChannel*'
//
// What this is not: the collectives over shared memory (backends_test.cpp).
#include "shm_channel.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "../harness/harness.h"
#include "../support/joined_thread.h"
#include "error.h"
#include "shm_segment.h"
#include "shm_stream.h"
#include "shm_transport.h"
#include "shm_tuning.h"

namespace course::test {
namespace {

using Clock = std::chrono::steady_clock;

// The segments in /dev/shm that a process `pid` created (connect_shm names them
// "course.<pid>.<lo>-<hi>.<n>.<random>").
std::vector<std::string> leftovers(int pid) {
  std::vector<std::string> found;
  const std::string prefix = "course." + std::to_string(pid) + ".";
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm")) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0) found.push_back(name);
  }
  return found;
}

// The byte at offset i of message `index` sent by side `from`.
uint8_t byte_at(int from, size_t index, size_t i) {
  return static_cast<uint8_t>((i * 131 + index * 7 + static_cast<size_t>(from) * 29) >> 2);
}

std::vector<uint8_t> message(int from, size_t index, size_t bytes) {
  std::vector<uint8_t> m(bytes);
  for (size_t i = 0; i < bytes; ++i) m[i] = byte_at(from, index, i);
  return m;
}

// Where the first wrong byte is, or -1.
long first_wrong(const std::vector<uint8_t>& got, int from, size_t index) {
  for (size_t i = 0; i < got.size(); ++i) {
    if (got[i] != byte_at(from, index, i)) return static_cast<long>(i);
  }
  return -1;
}

// Both ends of one pair in this process: two mappings of one segment, as two ranks have.
struct Pair {
  std::unique_ptr<ShmStream> side0;
  std::unique_ptr<ShmStream> side1;
};

Pair make_pair(uint32_t slot_bytes, uint32_t slots, int spin) {
  static int serial = 0;
  const std::string name =
      "/course." + std::to_string(::getpid()) + ".test." + std::to_string(serial++);
  const size_t bytes = shm_pair_bytes(slot_bytes, slots);
  ShmSegment mine = ShmSegment::create(name, bytes);
  auto* header = new (mine.data()) ShmPairHeader();
  header->slot_bytes = slot_bytes;
  header->slots = slots;
  header->pid[0] = header->pid[1] = ::getpid();
  header->magic = kShmMagic;
  ShmSegment theirs = ShmSegment::open(name, bytes);
  mine.unlink();
  Pair pair;
  pair.side0 = std::make_unique<ShmStream>(std::move(mine), 0, "side 0", spin);
  pair.side1 = std::make_unique<ShmStream>(std::move(theirs), 1, "side 1", spin);
  return pair;
}

constexpr Millis kTimeout{20'000};

// Sizes around the slot size, and several MiB: every message crosses slot boundaries at
// a different offset, and wraps the ring many times.
std::vector<size_t> sizes_for(size_t slot) {
  return {0,
          1,
          3,
          slot - 1,
          slot,
          slot + 1,
          2 * slot + 5,
          7 * slot - 3,
          (1u << 20) + 3,
          (5u << 20) + 11};
}

// One thread sends `sizes` on `from`, this thread receives them on `to` (in pieces of
// `piece` bytes when non-zero) and checks every byte; `pause_every` slows one side.
void stream_and_check(ByteStream& from, ByteStream& to, const std::vector<size_t>& sizes,
                      size_t piece, bool slow_producer, bool slow_consumer) {
  JoinedThread producer([&] {
    for (size_t index = 0; index < sizes.size(); ++index) {
      const std::vector<uint8_t> m = message(0, index, sizes[index]);
      if (!slow_producer) {
        from.send_all(m.data(), m.size(), kTimeout);
        continue;
      }
      for (size_t at = 0; at < m.size(); at += 100'000) {
        from.send_all(m.data() + at, std::min<size_t>(100'000, m.size() - at), kTimeout);
        std::this_thread::sleep_for(std::chrono::microseconds(300));
      }
    }
  });
  for (size_t index = 0; index < sizes.size(); ++index) {
    std::vector<uint8_t> got(sizes[index]);
    const size_t step = piece == 0 ? got.size() : piece;
    for (size_t at = 0; at < got.size(); at += step) {
      to.recv_all(got.data() + at, std::min(step, got.size() - at), kTimeout);
      if (slow_consumer) std::this_thread::sleep_for(std::chrono::microseconds(300));
    }
    EXPECT_EQ(first_wrong(got, 0, index), -1)
        << "message " << index << " of " << sizes[index] << " bytes: first wrong byte";
  }
  producer.join();
}

TEST(ShmChannel, EveryByteInOrderAcrossSlotBoundaries) {
  for (uint32_t slot : {64u, 4096u}) {
    Pair pair = make_pair(slot, 4, 100);
    stream_and_check(*pair.side0, *pair.side1, sizes_for(slot), 0, false, false);
    // The other direction, and reads that cut slots in odd places.
    stream_and_check(*pair.side1, *pair.side0, sizes_for(slot), 1000, false, false);
  }
}

TEST(ShmChannel, FullAndEmptyRingsAreSeen) {
  Pair pair = make_pair(64, 4, 0);
  std::vector<uint8_t> big = message(0, 0, 1000);
  // Four slots of 64 bytes take 256 bytes; then the ring is full.
  EXPECT_EQ(pair.side0->try_send(big.data(), big.size()), 256u);
  EXPECT_EQ(pair.side0->try_send(big.data(), big.size()), 0u);
  std::vector<uint8_t> got(1000);
  EXPECT_EQ(pair.side1->try_recv(got.data(), 100), 100u);  // a slot and a half
  EXPECT_EQ(pair.side1->try_recv(got.data() + 100, 1000), 156u);
  EXPECT_EQ(pair.side1->try_recv(got.data(), 1000), 0u);
  got.resize(256);
  EXPECT_EQ(first_wrong(got, 0, 0), -1);
  // Tiny writes use a slot each: four of them fill the ring.
  for (int i = 0; i < 4; ++i) EXPECT_EQ(pair.side0->try_send(big.data(), 1), 1u);
  EXPECT_EQ(pair.side0->try_send(big.data(), 1), 0u);
}

// A message that starts mid-ring and wraps past its last slot to slot 0, from every start
// slot, on one channel over private memory: the ring, then a guard region of a known
// pattern where a write that forgets to wrap lands (seen at once, not a crash or a
// timeout later).
TEST(ShmChannel, AMessageThatWrapsTheRingsEndGoesOnAtSlotZero) {
  constexpr uint32_t kSlotBytes = 64, kSlots = 4;
  const size_t ring_bytes = shm_slot_stride(kSlotBytes) * kSlots;
  std::vector<uint64_t> storage(2 * ring_bytes / sizeof(uint64_t) + 1);
  char* const slots = reinterpret_cast<char*>(storage.data());
  std::fill(slots + ring_bytes, slots + 2 * ring_bytes, static_cast<char>(0x5A));
  ShmRingHeader ring;
  ShmDoorbell bell;
  ShmChannel channel(ring, slots, kSlotBytes, kSlots, bell);
  uint64_t head = 0;
  std::vector<uint8_t> got(kSlots * kSlotBytes);
  for (size_t index = 0; index < 12; ++index) {
    // Head moves on by 1 to 4 slots a round: every start slot, every length of wrap.
    const uint32_t start = static_cast<uint32_t>(head % kSlots);
    const size_t bytes = (index % kSlots + 1) * kSlotBytes - index % 3;
    const std::vector<uint8_t> m = message(1, index, bytes);
    ASSERT_EQ(channel.try_write(m.data(), m.size()), bytes)
        << "message " << index << " of " << bytes << " bytes from slot " << start
        << " into an empty ring of 4 slots";
    for (size_t i = ring_bytes; i < 2 * ring_bytes; ++i) {
      ASSERT_EQ(slots[i], static_cast<char>(0x5A))
          << "message " << index << " of " << bytes << " bytes from slot " << start
          << ": try_write wrote past the ring's last slot (" << i - ring_bytes
          << " bytes past its end); the slot after slot 3 is slot 0";
    }
    got.assign(bytes, 0);
    ASSERT_EQ(channel.try_read(got.data(), got.size()), bytes)
        << "message " << index << " of " << bytes << " bytes from slot " << start;
    EXPECT_EQ(first_wrong(got, 1, index), -1)
        << "message " << index << " of " << bytes << " bytes from slot " << start
        << ": first wrong byte";
    head += (bytes + kSlotBytes - 1) / kSlotBytes;
  }
}

TEST(ShmChannel, ASlowConsumerGetsEveryByte) {
  Pair pair = make_pair(4096, 4, 100);
  stream_and_check(*pair.side0, *pair.side1, {(2u << 20) + 7}, 64 * 1024, false, true);
}

TEST(ShmChannel, ASlowProducerGetsEveryByteThrough) {
  Pair pair = make_pair(4096, 4, 100);
  stream_and_check(*pair.side0, *pair.side1, {(2u << 20) + 7}, 0, true, false);
}

// With no spinning, every wait sleeps on the futex: a ping-pong only runs at speed if
// every write and read rings the peer's doorbell. Without the wake, each wait lasts until
// the 100 ms liveness slice ends: 100 round trips would take 20 s.
TEST(ShmChannel, TheDoorbellWakesASleepingPeer) {
  Pair pair = make_pair(4096, 4, 0);
  constexpr int kRounds = 100;
  const auto start = Clock::now();
  JoinedThread echo([&] {
    uint32_t v = 0;
    for (int i = 0; i < kRounds; ++i) {
      pair.side1->recv_all(&v, sizeof(v), kTimeout);
      ++v;
      pair.side1->send_all(&v, sizeof(v), kTimeout);
    }
  });
  uint32_t v = 0;
  for (int i = 0; i < kRounds; ++i) {
    pair.side0->send_all(&v, sizeof(v), kTimeout);
    pair.side0->recv_all(&v, sizeof(v), kTimeout);
  }
  echo.join();
  EXPECT_EQ(v, static_cast<uint32_t>(kRounds));
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(3))
      << kRounds << " round trips with every wait asleep: is the doorbell rung?";
}

TEST(ShmStream, AClosedPeerGivesPeerClosedErrorAfterTheLastByte) {
  Pair pair = make_pair(4096, 4, 100);
  const std::vector<uint8_t> m = message(0, 0, 100);
  pair.side0->send_all(m.data(), m.size(), kTimeout);
  pair.side0->close();
  std::vector<uint8_t> got(100);
  pair.side1->recv_all(got.data(), got.size(), kTimeout);  // what was sent still arrives
  EXPECT_EQ(first_wrong(got, 0, 0), -1);
  EXPECT_THROW(pair.side1->recv_all(got.data(), 1, kTimeout), PeerClosedError);
  EXPECT_THROW(pair.side1->send_all(got.data(), 1, kTimeout), PeerClosedError);
}

TEST(ShmStream, ATimeoutSaysSo) {
  Pair pair = make_pair(4096, 4, 0);
  uint8_t b = 0;
  EXPECT_THROW(pair.side1->recv_all(&b, 1, Millis(200)), TimeoutError);
}

// A stream to a forked child that runs `last_words` on its end, then dies by SIGKILL (no
// destructor, no close). The segment is unlinked by the time it returns; `child` is the
// pid to reap.
std::unique_ptr<ShmStream> stream_to_doomed_child(const std::string& tag, size_t slot_bytes,
                                                  size_t slots, const std::string& peer_name,
                                                  const std::function<void(ShmStream&)>& last_words,
                                                  pid_t& child) {
  const std::string name = "/course." + std::to_string(::getpid()) + "." + tag;
  const size_t bytes = shm_pair_bytes(slot_bytes, slots);
  ShmSegment mine = ShmSegment::create(name, bytes);
  auto* header = new (mine.data()) ShmPairHeader();
  header->slot_bytes = slot_bytes;
  header->slots = slots;
  header->pid[0] = ::getpid();
  header->magic = kShmMagic;
  int ready[2];
  if (::pipe(ready) != 0) throw std::runtime_error("pipe failed");
  child = ::fork();
  if (child < 0) throw std::runtime_error("fork failed");
  if (child == 0) {
    ShmStream peer(ShmSegment::open(name, bytes), 1, "parent", 0);
    const char one = 1;
    (void)!::write(ready[1], &one, 1);
    try {
      last_words(peer);
    } catch (...) {
      ::_exit(3);  // never back into the test: this is a copy of the test process
    }
    ::raise(SIGKILL);
    ::_exit(0);
  }
  header->pid[1] = child;
  char one = 0;
  const bool attached = ::read(ready[0], &one, 1) == 1;
  mine.unlink();
  ::close(ready[0]);
  ::close(ready[1]);
  if (!attached) throw std::runtime_error("the child died before it attached");
  return std::make_unique<ShmStream>(std::move(mine), 0, peer_name, 0);
}

// A peer that dies mid-message (SIGKILL: no destructor, no close) is noticed through its
// pid within seconds, not after the 60 s timeout.
TEST(ShmStream, APeerKilledMidMessageGivesAnErrorWithinSeconds) {
  pid_t child = -1;
  const std::unique_ptr<ShmStream> stream = stream_to_doomed_child(
      "killed", 64 * 1024, 8, "rank 1",
      [](ShmStream& peer) {
        const std::vector<uint8_t> m = message(1, 0, 1u << 20);
        peer.send_all(m.data(), m.size(), kTimeout);  // a third of the message, then death
      },
      child);
  std::vector<uint8_t> got(3u << 20);
  const auto start = Clock::now();
  EXPECT_THROW(stream->recv_all(got.data(), got.size(), Millis(60'000)), PeerClosedError);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_TRUE(leftovers(::getpid()).empty()) << "the crash left a segment in /dev/shm";
}

// What a peer wrote before it died is delivered, even when this side first looks after the
// death: a rank may finish its last send and exit before its neighbour reads. Only then
// does the next receive fail.
TEST(ShmStream, WhatAPeerWroteBeforeItDiedIsStillDelivered) {
  pid_t child = -1;
  const std::vector<uint8_t> m = message(1, 0, 1000);
  const std::unique_ptr<ShmStream> stream = stream_to_doomed_child(
      "wrote", 4096, 4, "rank 1",
      [&m](ShmStream& peer) { peer.send_all(m.data(), m.size(), kTimeout); }, child);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);               // dead and reaped: gone from /proc
  std::this_thread::sleep_for(std::chrono::milliseconds(150));  // past one liveness period
  EXPECT_TRUE(stream->wait(false, true, Millis(1000)));
  std::vector<uint8_t> got(m.size());
  stream->recv_all(got.data(), got.size(), Millis(1000));
  EXPECT_EQ(first_wrong(got, 1, 0), -1);
  uint8_t more = 0;
  EXPECT_THROW(stream->recv_all(&more, 1, Millis(5000)), PeerClosedError);
}

// The ring's one-thread mode waits on two streams at once (wait_either), in slices of
// 1 ms: a peer that dies while this rank waits on it and on another, live, peer must still
// be noticed within seconds.
TEST(ShmStream, APeerKilledWhileWaitingOnTwoStreamsGivesAnErrorWithinSeconds) {
  pid_t child = -1;
  const std::unique_ptr<ShmStream> from_dead = stream_to_doomed_child(
      "two", 4096, 4, "rank 2", [](ShmStream&) {}, child);
  // The live peer's ring is full, so neither direction can move.
  Pair live = make_pair(64, 4, 0);
  const std::vector<uint8_t> m = message(0, 0, 256);
  ASSERT_EQ(live.side0->try_send(m.data(), m.size()), 256u);
  const auto start = Clock::now();
  EXPECT_THROW(
      {
        while (Clock::now() - start < std::chrono::seconds(20)) {
          wait_either(*live.side0, true, *from_dead, true, Millis(50));
        }
      },
      PeerClosedError);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  int status = 0;
  ::waitpid(child, &status, 0);
}

// ---- through the store, between two processes ------------------------------------------

TEST(ShmTransport, TwoRanksStreamBothWaysAndLeaveNothingInDevShm) {
  run_ranks(2, [](RankContext& ctx) {
    const ShmTuning tuning = choose_shm_tuning(2, 2);
    const int peer = 1 - ctx.rank;
    ByteStreamPtr stream = connect_shm(ctx.store(), ctx.rank, peer, "t", kTimeout, tuning);
    EXPECT_STREQ(stream->kind(), "shm");
    // Unlinked as soon as both ends mapped it.
    EXPECT_TRUE(leftovers(::getpid()).empty());
    const std::vector<size_t> sizes = {0, 5, tuning.slot_bytes + 1, (3u << 20) + 1};
    JoinedThread sender([&] {
      for (size_t index = 0; index < sizes.size(); ++index) {
        const std::vector<uint8_t> m = message(ctx.rank, index, sizes[index]);
        stream->send_all(m.data(), m.size(), kTimeout);
      }
    });
    for (size_t index = 0; index < sizes.size(); ++index) {
      std::vector<uint8_t> got(sizes[index]);
      stream->recv_all(got.data(), got.size(), kTimeout);
      EXPECT_EQ(first_wrong(got, peer, index), -1) << "message " << index << " from rank " << peer;
    }
    sender.join();
    ctx.store().set("done/" + std::to_string(ctx.rank), "1");
    ctx.store().get("done/" + std::to_string(peer));
    stream.reset();
    EXPECT_TRUE(leftovers(::getpid()).empty());
  });
}

TEST(ShmTransport, APeerThatNeverComesLeavesNothingInDevShm) {
  run_ranks(1, [](RankContext& ctx) {
    EXPECT_THROW(connect_shm(ctx.store(), 0, 1, "never", Millis(300), choose_shm_tuning(2, 2)),
                 TimeoutError);
    EXPECT_TRUE(leftovers(::getpid()).empty());
  });
}

// ---- the tuning (given code) ------------------------------------------------------------

TEST(ShmTuning, MoreRanksThanCoresSpinNeverAndUseOneThread) {
  const ShmTuning idle = choose_shm_tuning(2, 2);
  EXPECT_GT(idle.spin, 0);
  const ShmTuning crowded = choose_shm_tuning(4, 2);
  EXPECT_EQ(crowded.spin, 0);
  EXPECT_EQ(crowded.ring_sender_thread_bytes, static_cast<size_t>(-1));
  EXPECT_GE(crowded.ring_chunk_elements, idle.ring_chunk_elements);
}

}  // namespace
}  // namespace course::test
