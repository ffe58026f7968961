// message.h: lesson 02, part 1: one message on the wire between two ranks.
//
// TCP moves a stream of bytes, not messages: a receiver that wants "the next tensor" must
// learn from the bytes themselves where it starts and how long it is. So every message is
// a fixed 16-byte header, then the payload:
//
//   offset 0        4        8                16
//          +--------+--------+-----------------+------------------------------+
//          | magic  |  tag   |  count          |  count x float32 (4 bytes)   |
//          |  u32   |  i32   |  u64, elements  |  the tensor's data           |
//          +--------+--------+-----------------+------------------------------+
//
// (all fields in the machine's byte order: every rank of a course job runs on the same
// kind of machine). The magic catches a stream that is out of step (a receive that read
// more or fewer bytes than were sent) before it turns into garbage numbers.
//
// MATCHING RULE: in order. Between two ranks, the k-th message one sends is the k-th
// message the other receives (TCP keeps the order), so a receive never searches: it reads
// the next header and checks it. A different tag or a different count is a ProtocolError
// naming both tags or both sizes and both ranks. (MPI instead keeps messages that arrive
// "early" in an unexpected-message queue and matches by tag; that is this lesson's
// extension exercise.) Zero-element messages are real messages: a header and no payload.
//
// What this is not: a channel or a thread. These functions block the calling thread on
// one stream (a socket, or lesson 12's shared memory); point_to_point.h decides on which thread
// they run.
#pragma once

#include <cstdint>
#include <span>

#include "byte_stream.h"

namespace course {

/// The header in front of every message. 16 bytes, no padding.
struct MessageHeader {
  uint32_t magic = 0;
  int32_t tag = 0;
  uint64_t count = 0;  ///< payload elements (float32), not bytes
};
static_assert(sizeof(MessageHeader) == 16, "the header is 16 bytes on the wire");

/// "P2P1" read as a little-endian u32.
inline constexpr uint32_t kMessageMagic = 0x31503250;

/// Messages of at most this many payload bytes leave in one send: the header and the
/// payload are copied into one buffer first (on the stack). Larger payloads are sent
/// straight from `data` after the header, with no copy. (./lesson02 --bench shows why:
/// without the copy, 8-64 KiB messages take up to twice the raw socket's latency.)
inline constexpr size_t kSmallMessageBytes = 65536;

/// Writes one message (header, then payload) to `sock`.
/// Blocks until every byte is in the kernel's send buffer (not until the peer has read
/// it): a large message blocks until the receiver drains it.
/// Throws TimeoutError after `timeout`, PeerClosedError/NetworkError when the peer is gone.
void send_message(ByteStream& sock, std::span<const float> data, int tag,
                  Millis timeout = default_timeout());

/// Reads the next message from `sock` into `data`. `src` and `dst` are the sending and
/// the receiving rank, for error messages only.
/// Throws ProtocolError, naming both ranks, when the next message's tag differs from
/// `tag` (both tags), when its count differs from data.size() (both sizes), or when its
/// header has the wrong magic (the stream is out of step). In every such case the payload
/// is left unread: the connection can no longer be trusted (tcp_comm.h aborts it).
/// Throws TimeoutError, PeerClosedError or NetworkError like ByteStream::recv_all.
void recv_message(ByteStream& sock, std::span<float> data, int tag, int src, int dst,
                  Millis timeout = default_timeout());

}  // namespace course
