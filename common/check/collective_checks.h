// collective_checks.h: the argument checks every collective starts with, written once.
//
// The lessons' algorithms (and the backends) call these before moving a byte, so a wrong
// root or an inconsistent size on this rank is a ConfigError naming the operation and the
// numbers, not a hang. Mismatches *between* ranks cannot be seen here: the wire catches
// them (lesson 02's message header carries the count).
//
// What this is not: validation of what other ranks passed.
#pragma once

#include <cstddef>
#include <string>

namespace course {

/// Throws ConfigError unless 0 <= root < world.
void check_root(const char* op, int root, int world);

/// Throws ConfigError unless 0 <= peer < world and peer != rank (point to point).
void check_peer(const char* op, int peer, int rank, int world);

/// Throws ConfigError unless `whole` == world * `part`, e.g.
///   check_world_multiple("scatter", "input", input.size(), "output", output.size(), world)
/// "scatter: input has 10 elements, but it must be world (3) x output (4) = 12".
void check_world_multiple(const char* op, const char* whole_name, size_t whole,
                          const char* part_name, size_t part, int world);

}  // namespace course
