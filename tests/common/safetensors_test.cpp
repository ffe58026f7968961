// safetensors_test.cpp: common/data/safetensors.h: the format byte by byte, bit-exact round
// trips (NaN payloads, -0, denormals), atomic replacement, and clear errors on damaged
// files.
//
//   ./build/solutions/tests/common/test_common --gtest_filter='Safetensors*'
#include "safetensors.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "../support/temp_dir.h"
#include "error.h"

namespace course {
namespace {

namespace fs = std::filesystem;

using Safetensors = test::TempDir;

std::vector<uint8_t> read_bytes(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}
void write_bytes(const std::string& p, const std::vector<uint8_t>& bytes) {
  std::ofstream(p, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
}

Tensor bits(const Shape& shape, uint32_t seed) {
  Tensor t = Tensor::empty(shape);
  for (int64_t i = 0; i < t.numel(); ++i) {
    const uint32_t b = (static_cast<uint32_t>(i) * 2654435761u) ^ seed;  // every bit pattern
    std::memcpy(&t.data()[i], &b, 4);
  }
  return t;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  // An empty tensor may have no storage at all: memcmp must not see its null pointer.
  return a.shape() == b.shape() &&
         (a.numel() == 0 ||
          std::memcmp(a.data(), b.data(), static_cast<size_t>(a.numel()) * 4) == 0);
}

TEST_F(Safetensors, RoundTripIsBitExactAndKeepsOrderAndMetadata) {
  Tensor special = Tensor::from_vector(
      {6},
      {-0.0f, std::numeric_limits<float>::denorm_min(), std::numeric_limits<float>::infinity(),
       -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(), 1.0f});
  const NamedTensors saved{{"z.weight", bits({3, 5}, 1)},
                           {"a.bias", bits({5}, 2)},
                           {"special", special},
                           {"scalar", Tensor::scalar(3.5f)},
                           {"empty", Tensor::zeros({0, 4})}};
  save_safetensors(path("m.safetensors"), saved, {{"epoch", "3"}, {"note", "héllo"}});
  const SafetensorsFile f = load_safetensors(path("m.safetensors"));
  ASSERT_EQ(f.tensors.size(), saved.size());
  for (size_t i = 0; i < saved.size(); ++i) {
    EXPECT_EQ(f.tensors[i].first, saved[i].first);
    EXPECT_TRUE(same_bits(f.tensors[i].second, saved[i].second)) << saved[i].first;
  }
  EXPECT_EQ(f.metadata.at("epoch"), "3");
  EXPECT_EQ(f.metadata.at("note"), "héllo");
  EXPECT_TRUE(f.contains("special"));
  EXPECT_TRUE(same_bits(f.at("a.bias"), saved[1].second));
  EXPECT_THROW(f.at("nope"), ConfigError);
}

// The layout of the spec: u64 header length, JSON, then the buffer, 8-byte aligned.
TEST_F(Safetensors, FileLayoutFollowsTheSpec) {
  const Tensor w = Tensor::from_vector({2, 2}, {1, 2, 3, 4});
  save_safetensors(path("w.safetensors"), {{"w", w}, {"b", Tensor::from_vector({1}, {5})}});
  const std::vector<uint8_t> bytes = read_bytes(path("w.safetensors"));
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ((8 + n) % 8, 0u);
  ASSERT_EQ(bytes.size(), 8 + n + 5 * 4);
  const auto header = nlohmann::json::parse(std::string(bytes.begin() + 8, bytes.begin() + 8 + n));
  EXPECT_EQ(header["w"]["dtype"], "F32");
  EXPECT_EQ(header["w"]["shape"], nlohmann::json({2, 2}));
  EXPECT_EQ(header["w"]["data_offsets"], nlohmann::json({0, 16}));
  EXPECT_EQ(header["b"]["data_offsets"], nlohmann::json({16, 20}));
  float third;
  std::memcpy(&third, bytes.data() + 8 + n + 8, 4);
  EXPECT_EQ(third, 3.0f);
}

TEST_F(Safetensors, SavingReplacesAtomicallyAndLeavesNoTemporaryFile) {
  save_safetensors(path("c.safetensors"), {{"x", bits({100}, 3)}});
  save_safetensors(path("c.safetensors"), {{"y", bits({7}, 4)}});
  const SafetensorsFile f = load_safetensors(path("c.safetensors"));
  ASSERT_EQ(f.tensors.size(), 1u);
  EXPECT_EQ(f.tensors[0].first, "y");
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir())) {
    ++files;
    EXPECT_EQ(entry.path().filename(), "c.safetensors");
  }
  EXPECT_EQ(files, 1);
  EXPECT_THROW(save_safetensors(path("missing-dir/c.safetensors"), {{"x", bits({1}, 0)}}),
               SystemError);
}

TEST_F(Safetensors, BadNamesAreRejected) {
  EXPECT_THROW(save_safetensors(path("d"), {{"a", bits({1}, 0)}, {"a", bits({1}, 1)}}),
               ConfigError);
  EXPECT_THROW(save_safetensors(path("d"), {{"__metadata__", bits({1}, 0)}}), ConfigError);
  EXPECT_THROW(save_safetensors(path("d"), {{"", bits({1}, 0)}}), ConfigError);
}

TEST_F(Safetensors, DamagedFilesAreConfigErrors) {
  save_safetensors(path("ok"), {{"w", bits({4, 4}, 5)}});
  const std::vector<uint8_t> good = read_bytes(path("ok"));
  std::vector<uint8_t> cut(good.begin(), good.end() - 4);
  write_bytes(path("cut"), cut);
  EXPECT_THROW(load_safetensors(path("cut")), ConfigError);

  write_bytes(path("tiny"), {1, 2, 3});
  EXPECT_THROW(load_safetensors(path("tiny")), ConfigError);

  const auto with_header = [&](const std::string& h, size_t buffer) {
    std::vector<uint8_t> b(8 + h.size() + buffer, 0);
    const uint64_t len = h.size();
    std::memcpy(b.data(), &len, 8);
    std::memcpy(b.data() + 8, h.data(), h.size());
    return b;
  };
  write_bytes(path("json"), with_header("{not json", 0));
  EXPECT_THROW(load_safetensors(path("json")), ConfigError);
  write_bytes(path("f16"),
              with_header(R"({"w":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})", 4));
  EXPECT_THROW(load_safetensors(path("f16")), ConfigError);
  write_bytes(path("size"),
              with_header(R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8));
  EXPECT_THROW(load_safetensors(path("size")), ConfigError);
  write_bytes(path("hole"), with_header(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                        R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                                        12));
  EXPECT_THROW(load_safetensors(path("hole")), ConfigError);
  write_bytes(path("overlap"),
              with_header(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                          R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                          8));
  EXPECT_THROW(load_safetensors(path("overlap")), ConfigError);
  EXPECT_THROW(load_safetensors(path("absent")), SystemError);
}

}  // namespace
}  // namespace course
