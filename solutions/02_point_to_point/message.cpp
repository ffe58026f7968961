// message.cpp: lesson 02, part 1: the message header on the wire (see message.h).
#include "message.h"

#include <cstring>
#include <string>

#include "error.h"
#include "tags.h"

namespace course {

void send_message(ByteStream& sock, std::span<const float> data, int tag, Millis timeout) {
  // BEGIN SOLUTION: send the 16-byte header, then the payload (small ones in one send)
  const MessageHeader header{kMessageMagic, tag, data.size()};
  const size_t bytes = data.size_bytes();
  if (bytes <= kSmallMessageBytes) {
    // One buffer, one send(): the receiver wakes once, and a ping-pong costs what the raw
    // socket's does. Sent as two pieces, the header would wake the receiver, which would
    // then sleep again until the payload arrives: copying up to 64 KiB costs less than
    // that second wake-up.
    char buffer[sizeof(MessageHeader) + kSmallMessageBytes];
    std::memcpy(buffer, &header, sizeof(header));
    if (bytes > 0) std::memcpy(buffer + sizeof(header), data.data(), bytes);
    sock.send_all(buffer, sizeof(header) + bytes, timeout);
  } else {
    // Large: the second wake-up is nothing next to the transfer, and the payload goes
    // from the caller's buffer to the kernel with no copy of our own.
    sock.send_all(&header, sizeof(header), timeout);
    sock.send_all(data.data(), bytes, timeout);
  }
  // END SOLUTION
}

void recv_message(ByteStream& sock, std::span<float> data, int tag, int src, int dst,
                  Millis timeout) {
  // BEGIN SOLUTION: check the header (magic, tag, count: name both ranks), read the payload
  MessageHeader header;
  sock.recv_all(&header, sizeof(header), timeout);
  const std::string route = "rank " + std::to_string(src) + " -> rank " + std::to_string(dst);
  if (header.magic != kMessageMagic) {
    throw ProtocolError("recv " + route + ": the next bytes are not a message header (magic " +
                        std::to_string(header.magic) + "): the stream is out of step, so an " +
                        "earlier send and recv disagreed on a message's length");
  }
  if (header.tag != tag) {
    throw ProtocolError("recv " + route + ": expected a message with " + tags::tag_name(tag) +
                        " but the next message from rank " + std::to_string(src) + " has " +
                        tags::tag_name(header.tag) + " (" + std::to_string(header.count) +
                        " elements). Messages between two ranks are matched in the order they " +
                        "were sent: post receives in the sender's order, and call collectives " +
                        "in the same order on every rank");
  }
  if (header.count != data.size()) {
    throw ProtocolError("recv " + route + " (" + tags::tag_name(tag) + "): rank " +
                        std::to_string(src) + " sent " + std::to_string(header.count) +
                        " elements (" + std::to_string(header.count * sizeof(float)) +
                        " bytes) but rank " + std::to_string(dst) + "'s receive buffer holds " +
                        std::to_string(data.size()) + " elements (" +
                        std::to_string(data.size_bytes()) + " bytes). Both sides must use " +
                        "the same count: check the sizes each rank passes");
  }
  if (!data.empty()) sock.recv_all(data.data(), data.size_bytes(), timeout);
  // END SOLUTION
}

}  // namespace course
