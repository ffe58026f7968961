// safetensors.h: named tensors in a file, in Hugging Face's safetensors format.
//
//   save_safetensors("model.safetensors", {{"0.weight", w}, {"0.bias", b}}, {{"epoch", "3"}});
//   SafetensorsFile f = load_safetensors("model.safetensors");
//   Tensor w2 = f.at("0.weight");                    // bit-for-bit the tensor saved
//
// The format (https://huggingface.co/docs/safetensors), all integers little-endian:
//
//   +----------+----------------------------+--------------------------------------+
//   | u64  N   | N bytes of JSON header     | byte buffer: the tensors' raw data   |
//   +----------+----------------------------+--------------------------------------+
//   header: {"__metadata__": {"epoch": "3"},
//            "0.weight": {"dtype": "F32", "shape": [512, 784], "data_offsets": [0, 1605632]},
//            ...}
//
// data_offsets are [begin, end) byte offsets into the buffer; the tensors tile the buffer
// with no holes and no overlaps. The header is padded with spaces so that the buffer
// starts 8-byte aligned. Metadata values are strings. Only F32 is read or written here.
//
// Writes are atomic: the file is written to "<path>.tmp.<pid>", flushed to disk (fsync),
// then renamed over `path`, and the directory is synced. A crash leaves either the old
// file or the new one, never half of one: what a training job needs from a checkpoint.
//
// Errors: ConfigError for a file that is not valid safetensors (naming what is wrong),
// SystemError when the file system fails.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tensor.h"

namespace course {

using NamedTensors = std::vector<std::pair<std::string, Tensor>>;

/// The tensor of `name` in `state` (a state dict); ConfigError naming it when it is missing.
const Tensor& find_tensor(const NamedTensors& state, const std::string& name);

/// What load_safetensors returns: the named tensors and the metadata.
struct SafetensorsFile {
  NamedTensors tensors;                         ///< in the file's order, on the CPU
  std::map<std::string, std::string> metadata;  ///< the "__metadata__" entry

  /// The tensor called `name`. Throws ConfigError listing what the file holds.
  const Tensor& at(const std::string& name) const;
  /// True when the file holds a tensor called `name`.
  bool contains(const std::string& name) const;
};

/// Writes `tensors` (any device; copied to the host) in this order, atomically.
/// REQUIRES: names are unique, non-empty and not "__metadata__" (ConfigError otherwise).
void save_safetensors(const std::string& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata = {});

/// Reads a whole safetensors file of F32 tensors into CPU tensors.
SafetensorsFile load_safetensors(const std::string& path);

}  // namespace course
