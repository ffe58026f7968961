// full_mesh_given.cpp: lesson 01, given: split_address. The mesh itself is the exercise
// (full_mesh.cpp).
#include <string>
#include <utility>

#include "error.h"
#include "full_mesh.h"

namespace course {

std::pair<std::string, int> split_address(const std::string& address) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos) {
    throw ProtocolError("bad address '" + address + "' in the store: expected host:port");
  }
  return {address.substr(0, colon), std::stoi(address.substr(colon + 1))};
}

}  // namespace course
