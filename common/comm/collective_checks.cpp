// collective_checks.cpp: see collective_checks.h.
#include "collective_checks.h"

#include "error.h"

namespace course {

void check_root(const char* op, int root, int world) {
  if (root < 0 || root >= world) {
    throw ConfigError(std::string(op) + ": root " + std::to_string(root) +
                      " is not a rank of a world of " + std::to_string(world) +
                      ": pass a root in [0, " + std::to_string(world) +
                      "), the same on every rank");
  }
}

void check_peer(const char* op, int peer, int rank, int world) {
  if (peer < 0 || peer >= world || peer == rank) {
    throw ConfigError(std::string(op) + ": rank " + std::to_string(peer) +
                      " is not a peer of rank " + std::to_string(rank) + " in a world of " +
                      std::to_string(world) + ": pass a rank in [0, " + std::to_string(world) +
                      ") other than your own");
  }
}

void check_world_multiple(const char* op, const char* whole_name, size_t whole,
                          const char* part_name, size_t part, int world) {
  if (whole != part * static_cast<size_t>(world)) {
    throw ConfigError(std::string(op) + ": " + whole_name + " has " + std::to_string(whole) +
                      " elements, but it must be world (" + std::to_string(world) + ") x " +
                      part_name + " (" + std::to_string(part) +
                      ") = " + std::to_string(part * static_cast<size_t>(world)));
  }
}

void check_rooted_blocks(const char* op, const char* whole_name, size_t whole,
                         const char* block_name, size_t block, int root, int rank, int world) {
  check_root(op, root, world);
  if (rank == root) check_world_multiple(op, whole_name, whole, block_name, block, world);
}

void check_same_length(const std::string& op, const char* a_name, size_t a, const char* b_name,
                       size_t b) {
  if (a != b) {
    throw ConfigError(op + ": " + a_name + " has " + std::to_string(a) + " elements but " + b_name +
                      " has " + std::to_string(b));
  }
}

size_t check_all_to_all(std::span<const float> input, std::span<const float> output, int world) {
  const auto n = static_cast<size_t>(world);
  if (input.size() != output.size() || input.size() % n != 0) {
    throw ConfigError("all_to_all: input has " + std::to_string(input.size()) +
                      " elements and output " + std::to_string(output.size()) +
                      ": both must be N x k with N = " + std::to_string(world));
  }
  if (!input.empty() && input.data() < output.data() + output.size() &&
      output.data() < input.data() + input.size()) {
    throw ConfigError("all_to_all: input and output overlap; pass two separate buffers");
  }
  return input.size() / n;
}

}  // namespace course
