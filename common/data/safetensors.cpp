// safetensors.cpp: see safetensors.h.
#include "safetensors.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "error.h"

namespace course {
namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors stores little-endian numbers; this code copies them as they are");

constexpr uint64_t kMaxHeader = 100u << 20;  // the reference implementation's limit

std::string directory_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

void write_all(int fd, const void* data, size_t n, const std::string& path) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = COURSE_CHECK_SYS(::write(fd, p, n), "write " + path);
    p += w;
    n -= static_cast<size_t>(w);
  }
}

[[noreturn]] void bad_file(const std::string& path, const std::string& what) {
  throw ConfigError(path + ": not a valid safetensors file: " + what +
                    ". Was it written by another program, or cut short? Save it again.");
}

}  // namespace

const Tensor& find_tensor(const NamedTensors& state, const std::string& name) {
  for (const auto& [key, tensor] : state) {
    if (key == name) return tensor;
  }
  throw ConfigError("the state dict has no \"" + name + "\" (a checkpoint of another model?)");
}

const Tensor& SafetensorsFile::at(const std::string& name) const {
  for (const auto& [n, t] : tensors) {
    if (n == name) return t;
  }
  std::string names;
  for (const auto& entry : tensors) names += (names.empty() ? "" : ", ") + entry.first;
  throw ConfigError("safetensors: no tensor named \"" + name + "\" (the file holds: " + names +
                    ")");
}

bool SafetensorsFile::contains(const std::string& name) const {
  return std::any_of(tensors.begin(), tensors.end(),
                     [&](const auto& e) { return e.first == name; });
}

void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> seen;
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    if (name.empty() || name == "__metadata__" || !seen.insert(name).second) {
      throw ConfigError("save_safetensors " + path + ": bad or repeated tensor name \"" + name +
                        "\"");
    }
    const uint64_t bytes = static_cast<uint64_t>(t.numel()) * sizeof(float);
    header[name] = {
        {"dtype", "F32"}, {"shape", t.shape()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - (8 + text.size()) % 8) % 8, ' ');  // the buffer starts 8-byte aligned
  const uint64_t header_size = text.size();

  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd =
      COURSE_CHECK_SYS(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), "create " + tmp);
  try {
    write_all(fd, &header_size, sizeof(header_size), tmp);
    write_all(fd, text.data(), text.size(), tmp);
    for (const auto& entry : tensors) {
      const std::vector<float> values = entry.second.to_vector();
      write_all(fd, values.data(), values.size() * sizeof(float), tmp);
    }
    COURSE_CHECK_SYS(::fsync(fd), "fsync " + tmp);
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  COURSE_CHECK_SYS(::close(fd), "close " + tmp);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    errno = err;
    throw_system_error("rename " + tmp + " to " + path);
  }
  // Make the rename itself durable.
  const int dir = ::open(directory_of(path).c_str(), O_RDONLY | O_DIRECTORY);
  if (dir >= 0) {
    ::fsync(dir);
    ::close(dir);
  }
}

SafetensorsFile load_safetensors(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw_system_error("open " + path, "check the checkpoint path");
  const auto file_size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  uint64_t header_size = 0;
  if (file_size < 8 || !in.read(reinterpret_cast<char*>(&header_size), 8)) {
    bad_file(path, "shorter than the 8-byte header length");
  }
  if (header_size > kMaxHeader || header_size > file_size - 8) {
    bad_file(path, "header length " + std::to_string(header_size) + " does not fit a file of " +
                       std::to_string(file_size) + " bytes");
  }
  std::string text(header_size, '\0');
  in.read(text.data(), static_cast<std::streamsize>(header_size));
  nlohmann::ordered_json header;
  try {
    header = nlohmann::ordered_json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    bad_file(path, std::string("header is not JSON (") + e.what() + ")");
  }
  if (!header.is_object()) bad_file(path, "header is not a JSON object");

  const uint64_t buffer_size = file_size - 8 - header_size;
  std::vector<char> buffer(buffer_size);
  if (!in.read(buffer.data(), static_cast<std::streamsize>(buffer_size))) {
    bad_file(path, "cannot read the " + std::to_string(buffer_size) + "-byte data buffer");
  }

  SafetensorsFile file;
  std::vector<std::pair<uint64_t, uint64_t>> extents;
  for (const auto& [name, info] : header.items()) {
    try {
      if (name == "__metadata__") {
        file.metadata = info.get<std::map<std::string, std::string>>();
        continue;
      }
      const std::string dtype = info.at("dtype").get<std::string>();
      if (dtype != "F32") {
        throw ConfigError(path + ": tensor \"" + name + "\" has dtype " + dtype +
                          "; this course reads only F32 tensors");
      }
      const Shape shape = info.at("shape").get<Shape>();
      const auto offsets = info.at("data_offsets").get<std::vector<uint64_t>>();
      const uint64_t bytes = static_cast<uint64_t>(shape_numel(shape)) * sizeof(float);
      if (offsets.size() != 2 || offsets[0] > offsets[1] || offsets[1] > buffer_size ||
          offsets[1] - offsets[0] != bytes) {
        bad_file(path, "tensor \"" + name + "\" of shape " + shape_str(shape) +
                           " has data_offsets that do not fit its size or the buffer");
      }
      Tensor t = Tensor::empty(shape);
      if (bytes > 0) std::memcpy(t.data(), buffer.data() + offsets[0], bytes);
      file.tensors.emplace_back(name, std::move(t));
      extents.emplace_back(offsets[0], offsets[1]);
    } catch (const nlohmann::json::exception& e) {
      bad_file(path, "entry \"" + name + "\": " + e.what());
    }
  }
  // The tensors must tile the buffer exactly: no holes, no overlaps.
  std::sort(extents.begin(), extents.end());
  uint64_t expected = 0;
  for (const auto& [begin, end] : extents) {
    if (begin != expected) bad_file(path, "tensors overlap or leave a hole in the data buffer");
    expected = end;
  }
  if (expected != buffer_size) bad_file(path, "bytes after the last tensor's data");
  return file;
}

}  // namespace course
