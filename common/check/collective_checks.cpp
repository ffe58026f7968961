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

}  // namespace course
