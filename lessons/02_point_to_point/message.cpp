// message.cpp: lesson 02, part 1: the message header on the wire (see message.h).
#include "message.h"

#include <cstring>
#include <string>

#include "error.h"
#include "tags.h"

namespace course {

void send_message(ByteStream& sock, std::span<const float> data, int tag, Millis timeout) {
  // TODO(lesson02): send the 16-byte header, then the payload (small ones in one send)
  COURSE_TODO();
}

void recv_message(ByteStream& sock, std::span<float> data, int tag, int src, int dst,
                  Millis timeout) {
  // TODO(lesson02): check the header (magic, tag, count: name both ranks), read the payload
  COURSE_TODO();
}

}  // namespace course
