// tags.h: lesson 02: who owns which message tag.
//
//   tag >= 0   the user's point-to-point messages (ProcessGroup::send/recv/isend/irecv)
//   tag <  0   the collectives, one tag each; lessons 03 and 04 here, later lessons in
//              the range below, each defining its own tags in its own header
//
// Every message carries its tag (message.h), and a receive checks it. Since messages
// between two ranks are matched in order, a rank that calls collectives in another order
// than its peers (a broadcast where they call a gather) gets a ProtocolError naming both
// tags instead of silently taking a gather's bytes for a broadcast's. Negative tags keep
// a user's message from ever being mistaken for part of a collective.
//
// What this is not: a matching engine. Tags are checked, not used to pick a message.
#pragma once

#include <string>

namespace course::tags {

// Lesson 03
inline constexpr int kBroadcast = -1;
inline constexpr int kScatter = -2;
inline constexpr int kGather = -3;
inline constexpr int kBarrier = -4;
// Lesson 04
inline constexpr int kReduce = -5;
inline constexpr int kAllToAll = -6;
// Lesson 05's ring all-reduce: -10 .. -19 (all_reduce_ring.h). Later lessons: -20 and
// below, ten tags each, named in tag_name.
inline constexpr int kFirstRingTag = -10;
inline constexpr int kLastRingTag = -19;

/// "tag 3" for a user tag; "tag -1 (broadcast)" for a collective's.
inline std::string tag_name(int tag) {
  const char* owner = nullptr;
  switch (tag) {
    case kBroadcast:
      owner = "broadcast";
      break;
    case kScatter:
      owner = "scatter";
      break;
    case kGather:
      owner = "gather";
      break;
    case kBarrier:
      owner = "barrier";
      break;
    case kReduce:
      owner = "reduce";
      break;
    case kAllToAll:
      owner = "all_to_all";
      break;
    default:
      if (tag <= kFirstRingTag && tag >= kLastRingTag) owner = "ring all-reduce";
      break;
  }
  std::string name = "tag " + std::to_string(tag);
  if (owner)
    name += std::string(" (") + owner + ")";
  else if (tag < 0)
    name += " (a collective's)";
  return name;
}

}  // namespace course::tags
