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
#include <span>
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

/// The checks of a gather or a scatter: check_root, and on the root only (the others'
/// `whole` buffer is not used) check_world_multiple of its whole buffer against the block.
void check_rooted_blocks(const char* op, const char* whole_name, size_t whole,
                         const char* block_name, size_t block, int root, int rank, int world);

/// Throws ConfigError unless two buffers combined element by element have one length:
/// "<op>: <a_name> has 3 elements but <b_name> has 4".
void check_same_length(const std::string& op, const char* a_name, size_t a, const char* b_name,
                       size_t b);

/// The checks of an all-to-all: input and output both world x k elements, and apart (every
/// block of the input is read while the output is written). Returns k.
size_t check_all_to_all(std::span<const float> input, std::span<const float> output, int world);

}  // namespace course
