// socket_test.cpp: tests of common/runtime/socket.h over real loopback TCP connections.
//
// Covers frames of every awkward size (0, 1, around the 8-byte header, 64 MiB), partial
// reads and writes, a peer that closes, timeouts, a port in use and connect retries.
// Run alone: ./build/<dir>/tests/common/test_common --gtest_filter='Socket*'
#include "socket.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <thread>

#include "error.h"

namespace course {
namespace {

using namespace std::chrono_literals;

/// Both ends of one loopback TCP connection.
struct Pair {
  Socket dialer;
  Socket acceptor;
};

Pair connected_pair() {
  Listener listener("127.0.0.1", 0);
  Pair pair;
  pair.dialer = Socket::connect("127.0.0.1", listener.port(), 5s);
  pair.acceptor = listener.accept_any(5s);  // either end may speak first here
  return pair;
}

/// Bytes that depend on their index and on a seed, so a misplaced or repeated chunk shows.
std::string pattern(size_t n, uint32_t seed) {
  std::string bytes(n, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;  // a small LCG: every byte differs from its neighbours
    bytes[i] = static_cast<char>(x >> 24);
  }
  return bytes;
}

TEST(Socket, FramesOfAwkwardSizesRoundTrip) {
  Pair p = connected_pair();
  const size_t sizes[] = {0, 1, 7, 8, 9, 4095, 4096 + 3, (1u << 20) + 1};
  for (size_t i = 0; i < std::size(sizes); ++i) {
    const std::string sent = pattern(sizes[i], static_cast<uint32_t>(i));
    std::thread sender([&] { p.dialer.send_frame(sent, 5s); });
    const std::string got = p.acceptor.recv_frame(5s);
    sender.join();
    ASSERT_EQ(got.size(), sizes[i]);
    EXPECT_EQ(got, sent) << "frame " << i << " of " << sizes[i] << " bytes";
  }
}

TEST(Socket, SixtyFourMiBFramesBothWaysAtOnce) {
  // Full duplex: each side sends 64 MiB while the other does the same, so neither send can
  // finish unless both sides receive concurrently (one thread sends, one receives, per end).
  Pair p = connected_pair();
  const size_t n = 64u << 20;
  const std::string a_to_b = pattern(n, 1), b_to_a = pattern(n, 2);
  std::string got_by_a, got_by_b;
  std::thread a_send([&] { p.dialer.send_frame(a_to_b, 30s); });
  std::thread b_send([&] { p.acceptor.send_frame(b_to_a, 30s); });
  std::thread b_recv([&] { got_by_b = p.acceptor.recv_frame(30s, n); });
  got_by_a = p.dialer.recv_frame(30s, n);
  a_send.join(), b_send.join(), b_recv.join();
  EXPECT_TRUE(got_by_b == a_to_b);
  EXPECT_TRUE(got_by_a == b_to_a);
}

TEST(Socket, PartialWritesAndReadsReassemble) {
  // The writer uses one set of chunk sizes and the reader another: TCP keeps no boundaries.
  Pair p = connected_pair();
  const std::string data = pattern(300'000, 7);
  std::thread writer([&] {
    size_t at = 0;
    for (size_t chunk = 1; at < data.size(); chunk = chunk * 3 + 1) {
      const size_t k = std::min(chunk, data.size() - at);
      p.dialer.send_all(data.data() + at, k, 5s);
      at += k;
    }
  });
  std::string got(data.size(), '\0');
  size_t at = 0;
  for (size_t chunk = 5; at < got.size(); chunk = chunk * 2 + 3) {
    const size_t k = std::min(chunk, got.size() - at);
    p.acceptor.recv_all(got.data() + at, k, 5s);
    at += k;
  }
  writer.join();
  EXPECT_TRUE(got == data);
}

TEST(Socket, PeerClosingMidMessageIsPeerClosedError) {
  Pair p = connected_pair();
  p.dialer.send_all("abcd", 4, 5s);
  p.dialer.close();
  char buf[8];
  try {
    p.acceptor.recv_all(buf, 8, 5s);
    FAIL() << "recv_all returned although the peer closed after 4 of 8 bytes";
  } catch (const PeerClosedError& e) {
    EXPECT_NE(std::string(e.what()).find("after 4 of 8 bytes"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(p.acceptor.peer_closed());
}

TEST(Socket, PeerClosedIsSeenWithoutConsumingData) {
  Pair p = connected_pair();
  EXPECT_FALSE(p.acceptor.peer_closed());
  p.dialer.send_all("x", 1, 5s);
  std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(p.acceptor.peer_closed());  // data waiting is not a close
  char c = 0;
  p.acceptor.recv_all(&c, 1, 5s);
  EXPECT_EQ(c, 'x');
}

TEST(Socket, SendingToAClosedPeerThrowsInsteadOfSigpipe) {
  Pair p = connected_pair();
  p.acceptor.close();
  const std::string chunk = pattern(1 << 16, 3);
  // The first sends may still succeed (the kernel buffers them); the RST follows quickly.
  EXPECT_THROW(
      {
        for (int i = 0; i < 1000; ++i) {
          p.dialer.send_all(chunk.data(), chunk.size(), 5s);
          std::this_thread::sleep_for(1ms);
        }
      },
      PeerClosedError);
}

TEST(Socket, APortReservationIsOnlyForTheListenerThatBindsIt) {
  const PortReservation reserved("127.0.0.1");
  ASSERT_GT(reserved.port(), 0);
  Listener listener("127.0.0.1", reserved.port());  // the server still binds and listens
  ASSERT_EQ(listener.port(), reserved.port());
  // No client is handed the reserved port as its own ephemeral port.
  for (int i = 0; i < 200; ++i) {
    Socket client = Socket::connect("127.0.0.1", listener.port());
    sockaddr_in local{};
    socklen_t len = sizeof(local);
    ASSERT_EQ(::getsockname(client.fd(), reinterpret_cast<sockaddr*>(&local), &len), 0);
    EXPECT_NE(ntohs(local.sin_port), reserved.port());
    client.send_all("x", 1);
    Socket served = listener.accept();
  }
}

TEST(Socket, RecvTimesOutWithTimeoutError) {
  Pair p = connected_pair();
  char buf[16];
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(p.acceptor.recv_all(buf, sizeof(buf), 200ms), TimeoutError);
  const auto waited = std::chrono::steady_clock::now() - t0;
  EXPECT_GE(waited, 190ms);
  EXPECT_LT(waited, 3s);
}

TEST(Socket, OversizedFrameIsProtocolError) {
  Pair p = connected_pair();
  std::string header;
  put_u64(header, uint64_t(1) << 40);  // a "frame" of a terabyte: garbage, not a real frame
  p.dialer.send_all(header.data(), header.size(), 5s);
  EXPECT_THROW(p.acceptor.recv_frame(5s, 1024), ProtocolError);
}

TEST(Socket, PortInUseIsConfigErrorNamingThePort) {
  Listener first("127.0.0.1", 0);
  try {
    Listener second("127.0.0.1", first.port());
    FAIL() << "two listeners on one port";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("port " + std::to_string(first.port())), std::string::npos)
        << e.what();
  }
}

TEST(Socket, ConnectRetriesUntilTheListenerIsUp) {
  const int port = find_free_port();
  Listener listener;
  std::thread late([&] {
    std::this_thread::sleep_for(300ms);
    listener = Listener("127.0.0.1", port);
  });
  Socket s = Socket::connect("127.0.0.1", port, 10s);
  late.join();
  Socket server_side = listener.accept_any(5s);  // it speaks only after this returns
  s.send_frame(std::string("late but here"), 5s);
  EXPECT_EQ(server_side.recv_frame(5s), "late but here");
}

TEST(Socket, ConnectToNobodyTimesOutNamingTheAddress) {
  const int port = find_free_port();
  try {
    Socket::connect("127.0.0.1", port, 300ms);
    FAIL() << "connected to a port nobody listens on";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(port)), std::string::npos)
        << e.what();
  }
}

// Fifty strangers connect and say nothing; a connection that speaks is still handed out at
// once, and the strangers stay waiting (vetted together, not one after another).
TEST(Listener, FiftySilentConnectionsDoNotDelayOneThatSpeaks) {
  Listener listener("127.0.0.1", 0);
  std::vector<Socket> silent;
  for (int i = 0; i < 50; ++i) silent.push_back(Socket::connect("127.0.0.1", listener.port(), 5s));
  Socket speaker = Socket::connect("127.0.0.1", listener.port(), 5s);
  speaker.send_frame(std::string("hello from the last"), 5s);
  const auto t0 = std::chrono::steady_clock::now();
  Socket got = listener.accept(5s);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
  EXPECT_EQ(got.recv_frame(5s), "hello from the last");
  EXPECT_THROW(listener.accept(200ms), TimeoutError);  // the silent ones are never handed out
}

TEST(Listener, AConnectionThatHangsUpIsHandedOutForItsHelloToFail) {
  Listener listener("127.0.0.1", 0);
  Socket::connect("127.0.0.1", listener.port(), 5s).close();
  Socket got = listener.accept(5s);
  char byte;
  EXPECT_THROW(got.recv_all(&byte, 1, 1s), PeerClosedError);
}

TEST(Socket, AcceptTimesOut) {
  Listener listener("127.0.0.1", 0);
  EXPECT_THROW(listener.accept(100ms), TimeoutError);
}

TEST(Socket, LittleEndianHelpers) {
  std::string out;
  put_u64(out, 0x0102030405060708ull);
  put_u32(out, 0xa1b2c3d4u);
  ASSERT_EQ(out.size(), 12u);
  EXPECT_EQ(static_cast<unsigned char>(out[0]), 0x08);  // least significant byte first
  EXPECT_EQ(static_cast<unsigned char>(out[7]), 0x01);
  EXPECT_EQ(static_cast<unsigned char>(out[8]), 0xd4);
  EXPECT_EQ(get_u64(out.data()), 0x0102030405060708ull);
  EXPECT_EQ(get_u32(out.data() + 8), 0xa1b2c3d4u);
}

TEST(Socket, PeerNamesAndHostName) {
  Pair p = connected_pair();
  EXPECT_EQ(p.acceptor.peer_name().rfind("127.0.0.1:", 0), 0u) << p.acceptor.peer_name();
  EXPECT_FALSE(host_name().empty());
  EXPECT_GT(default_timeout().count(), 0);
}

}  // namespace
}  // namespace course
