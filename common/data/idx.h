// idx.h: the IDX file format of MNIST and Fashion-MNIST, read and written.
//
// An IDX file is a big-endian header followed by raw data (LeCun et al., 1998):
//
//   bytes 0-1   0x00 0x00
//   byte  2     element type: 0x08 = unsigned byte (the only type these data sets use)
//   byte  3     number of dimensions d (images: 3, labels: 1)
//   d x u32     the size of each dimension, big-endian
//   ...         prod(dims) elements, row-major
//
// so an images file starts with the magic number 0x00000803 and a labels file with
// 0x00000801. Files may be gzip-compressed (Debian's dataset-fashion-mnist ships .gz);
// zlib reads compressed and plain files alike, so both work.
//
// What this is not: a general IDX library; only unsigned bytes are supported.
//
// Errors: ConfigError naming the file, what was found, what was expected and what to do
// (missing file, wrong magic, wrong number of dimensions, truncated data, extra bytes).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace course {

/// The contents of an IDX file: its dimensions and its bytes.
struct IdxArray {
  std::vector<int64_t> dims;  ///< e.g. {60000, 28, 28}
  std::vector<uint8_t> data;  ///< prod(dims) bytes, row-major
};

/// Reads an unsigned-byte IDX file with `expected_dims` dimensions (3 for images, 1 for
/// labels), gzip-compressed or not.
IdxArray read_idx(const std::string& path, int expected_dims);

/// Writes `array` as an IDX file, gzip-compressed when `path` ends in ".gz". Used by the
/// tests to make small data sets. REQUIRES: data.size() == prod(dims).
void write_idx(const std::string& path, const IdxArray& array);

}  // namespace course
