// idx.cpp: see idx.h. zlib's gz* functions read gzip and plain files alike.
#include "idx.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "error.h"

namespace course {
namespace {

struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};
using GzFile = std::unique_ptr<gzFile_s, GzCloser>;

constexpr const char* kFixHint =
    "the file is damaged or is not an MNIST-format file: reinstall dataset-fashion-mnist "
    "(make setup), or point --data at a directory with intact "
    "{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz] files";

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08x", v);
  return buf;
}

// Reads up to n bytes; returns how many arrived. Throws on a zlib error (bad gzip data).
size_t read_some(gzFile f, const std::string& path, void* dst, size_t n) {
  size_t done = 0;
  auto* out = static_cast<uint8_t*>(dst);
  while (done < n) {
    const unsigned chunk = static_cast<unsigned>(std::min<size_t>(n - done, 1u << 30));
    const int got = gzread(f, out + done, chunk);
    if (got < 0) {
      int code = 0;
      const char* msg = gzerror(f, &code);
      throw ConfigError(path + ": cannot decompress (" + std::string(msg ? msg : "zlib error") +
                        "); " + kFixHint);
    }
    if (got == 0) break;
    done += static_cast<size_t>(got);
  }
  // A gzip stream cut short reads as end of file plus an error code.
  int code = Z_OK;
  gzerror(f, &code);
  if (code != Z_OK && code != Z_STREAM_END) {
    throw ConfigError(path + ": truncated or corrupt gzip data (zlib error " +
                      std::to_string(code) + "); " + kFixHint);
  }
  return done;
}

uint32_t big_endian_u32(const uint8_t* b) {
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
}

}  // namespace

IdxArray read_idx(const std::string& path, int expected_dims) {
  GzFile f(gzopen(path.c_str(), "rb"));
  if (!f) {
    throw ConfigError(path + ": cannot open (" + std::string(std::strerror(errno)) +
                      "); install dataset-fashion-mnist (make setup) or pass --data DIR");
  }
  uint8_t magic[4];
  if (read_some(f.get(), path, magic, 4) != 4) {
    throw ConfigError(path + ": truncated: shorter than the 4-byte IDX magic number; " + kFixHint);
  }
  const uint32_t expected_magic = 0x00000800u | static_cast<uint32_t>(expected_dims);
  const uint32_t found = big_endian_u32(magic);
  if (found != expected_magic) {
    const char* kind = expected_dims == 3 ? "images" : expected_dims == 1 ? "labels" : "IDX";
    throw ConfigError(path + ": magic number " + hex32(found) + ", expected " +
                      hex32(expected_magic) + " (unsigned-byte " + kind + " file with " +
                      std::to_string(expected_dims) + " dimension(s)); " + kFixHint);
  }
  IdxArray array;
  int64_t total = 1;
  for (int d = 0; d < expected_dims; ++d) {
    uint8_t size[4];
    if (read_some(f.get(), path, size, 4) != 4) {
      throw ConfigError(path + ": truncated inside the header (dimension " + std::to_string(d) +
                        " of " + std::to_string(expected_dims) + "); " + kFixHint);
    }
    array.dims.push_back(big_endian_u32(size));
    total *= array.dims.back();
    if (total > (int64_t{1} << 32)) {
      throw ConfigError(path + ": the header's dimensions promise more than 4 GiB; " + kFixHint);
    }
  }
  array.data.resize(static_cast<size_t>(total));
  const size_t got = read_some(f.get(), path, array.data.data(), array.data.size());
  if (got != array.data.size()) {
    throw ConfigError(path + ": truncated: the header promises " + std::to_string(total) +
                      " bytes of data, the file holds " + std::to_string(got) + "; " + kFixHint);
  }
  uint8_t extra;
  if (read_some(f.get(), path, &extra, 1) != 0) {
    throw ConfigError(path + ": more data than the header's " + std::to_string(total) + " bytes; " +
                      kFixHint);
  }
  return array;
}

void write_idx(const std::string& path, const IdxArray& array) {
  int64_t total = 1;
  for (int64_t d : array.dims) total *= d;
  if (static_cast<int64_t>(array.data.size()) != total) {
    throw ConfigError("write_idx " + path + ": " + std::to_string(array.data.size()) +
                      " bytes for dims totalling " + std::to_string(total));
  }
  const bool gz = path.size() > 3 && path.compare(path.size() - 3, 3, ".gz") == 0;
  GzFile f(gzopen(path.c_str(), gz ? "wb6" : "wbT"));  // T: plain, no compression
  if (!f) throw_system_error("write_idx: cannot create " + path);
  std::vector<uint8_t> header{0, 0, 0x08, static_cast<uint8_t>(array.dims.size())};
  for (int64_t d : array.dims) {
    const auto v = static_cast<uint32_t>(d);
    for (int shift = 24; shift >= 0; shift -= 8) header.push_back(static_cast<uint8_t>(v >> shift));
  }
  const auto put = [&](const std::vector<uint8_t>& bytes) {
    if (!bytes.empty() && gzwrite(f.get(), bytes.data(), static_cast<unsigned>(bytes.size())) !=
                              static_cast<int>(bytes.size())) {
      throw SystemError("write_idx: cannot write " + path);
    }
  };
  put(header);
  put(array.data);
  if (gzclose(f.release()) != Z_OK) throw SystemError("write_idx: cannot close " + path);
}

}  // namespace course
