// channel_self_check.h: lesson 12, given: the driver's self-check of ShmChannel, in one
// process, before any rank connects: a ring of 4 slots of 64 bytes filled to the brim and
// drained in pieces that cut slots in half. A run of the streams between ranks rarely
// fills a ring exactly or reads it to empty at the moment a bug would show, and a wrong
// answer there is seen only as a timeout minutes later.
//
//   try_write 1000 bytes   -> 256 (four slots), then 0 (full); can_write() false
//   try_read 100, 1000     -> 100, 156, in order; then 0 (empty); can_read() false
//   can_write() true again; four writes of 1 byte fill the ring (a slot each)
//   drain them, move head to slot 1; a 200-byte message fills slots 1, 2, 3 and wraps to
//   slot 0: nothing written past the ring's last slot (the check keeps a guard region
//   there, so a write that does not wrap is reported, not a crash), 200 bytes read back
//
// What this is not: a test of the doorbell or of two processes (make grade-lesson12 has
// those: streams across slot boundaries, slow consumers and producers, a dead peer).
#pragma once

#include <string>

namespace course {

/// "" or the first call that answered wrong. Local: no other rank is involved.
std::string self_check_shm_channel();

}  // namespace course
