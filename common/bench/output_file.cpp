// output_file.cpp: see output_file.h.
#include "output_file.h"

#include <filesystem>
#include <system_error>

#include "error.h"

namespace course {

void ensure_parent_directory(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (parent.empty()) return;
  std::error_code made, found;
  std::filesystem::create_directories(parent, made);
  if (!std::filesystem::is_directory(parent, found)) {
    throw SystemError("cannot make the folder " + parent.string() + " for " + path + ": " +
                      (made ? made.message() : "a file of that name is in the way"));
  }
}

std::ofstream open_output_file(const std::string& path, bool binary) {
  ensure_parent_directory(path);
  std::ofstream out(path, binary ? std::ios::out | std::ios::binary : std::ios::out);
  if (!out) throw_system_error("cannot write " + path, "check that its folder is writable");
  return out;
}

std::string output_beside(const std::string& path, const std::string& name) {
  const std::filesystem::path p(path);
  return (p.parent_path() / (p.stem().string() + "_" + name)).string();
}

void write_output_file(const std::string& path, const std::string& text) {
  std::ofstream out = open_output_file(path, /*binary=*/true);
  out << text;
  out.close();
  if (!out) throw_system_error("writing " + path);
}

}  // namespace course
