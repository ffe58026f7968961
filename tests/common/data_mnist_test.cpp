// data_mnist_test.cpp: the IDX reader (idx.h), the MNIST loader (mnist.h) and the data
// set helpers (dataset.h), on small IDX files the tests write themselves (gzip and plain),
// and on broken ones: wrong magic, truncated, a label count that does not match.
//
//   ./build/solutions/tests/common/test_common --gtest_filter='Idx*:Mnist*:Dataset*'
#include <gtest/gtest.h>
#include <stdlib.h>
#include <zlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "../support/temp_dir.h"
#include "dataset.h"
#include "error.h"
#include "idx.h"
#include "mnist.h"

namespace course {
namespace {

namespace fs = std::filesystem;

using test::TempDir;

// n images of rows x cols with pixel (k, r, c) = (7k + 3r + c) mod 256, labels (k * 3) mod 10.
IdxArray images(int64_t n, int64_t rows = 4, int64_t cols = 3) {
  IdxArray a{{n, rows, cols}, {}};
  for (int64_t k = 0; k < n; ++k) {
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c)
        a.data.push_back(static_cast<uint8_t>((7 * k + 3 * r + c) % 256));
    }
  }
  return a;
}
IdxArray labels(int64_t n) {
  IdxArray a{{n}, {}};
  for (int64_t k = 0; k < n; ++k) a.data.push_back(static_cast<uint8_t>((k * 3) % 10));
  return a;
}

std::vector<uint8_t> read_bytes(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}
void write_bytes(const std::string& p, const std::vector<uint8_t>& bytes) {
  std::ofstream(p, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
}

// EXPECT_THROW plus a check that the message names what is wrong.
void expect_config_error(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no ConfigError; expected one mentioning \"" << needle << "\"";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

using Idx = TempDir;
using Mnist = TempDir;

TEST_F(Idx, RoundTripsGzipAndPlainFiles) {
  const IdxArray a = images(5);
  for (const char* name : {"a-idx3-ubyte.gz", "a-idx3-ubyte"}) {
    write_idx(path(name), a);
    const IdxArray b = read_idx(path(name), 3);
    EXPECT_EQ(b.dims, a.dims);
    EXPECT_EQ(b.data, a.data);
  }
  // The plain file is exactly the format: magic 0x00000803, dims big-endian, then bytes.
  const std::vector<uint8_t> bytes = read_bytes(path("a-idx3-ubyte"));
  ASSERT_EQ(bytes.size(), 16u + a.data.size());
  EXPECT_EQ(std::vector<uint8_t>(bytes.begin(), bytes.begin() + 8),
            (std::vector<uint8_t>{0, 0, 8, 3, 0, 0, 0, 5}));
  // ... and gzip really is compressed.
  EXPECT_EQ(read_bytes(path("a-idx3-ubyte.gz"))[0], 0x1f);
}

TEST_F(Idx, WrongMagicSaysWhatWasFoundAndExpected) {
  write_idx(path("labels.gz"), labels(4));
  expect_config_error([&] { read_idx(path("labels.gz"), 3); },
                      "magic number 0x00000801, expected 0x00000803");
}

TEST_F(Idx, TruncatedFilesAreRejected) {
  write_idx(path("plain"), images(6));
  std::vector<uint8_t> bytes = read_bytes(path("plain"));
  bytes.resize(bytes.size() - 5);
  write_bytes(path("plain"), bytes);
  expect_config_error([&] { read_idx(path("plain"), 3); }, "truncated");

  write_idx(path("short.gz"), images(200));
  bytes = read_bytes(path("short.gz"));
  bytes.resize(bytes.size() / 2);  // cut the gzip stream in the middle
  write_bytes(path("short.gz"), bytes);
  expect_config_error([&] { read_idx(path("short.gz"), 3); }, "truncated");

  write_bytes(path("tiny"), {0, 0});
  expect_config_error([&] { read_idx(path("tiny"), 1); }, "truncated");
  write_bytes(path("header"), {0, 0, 8, 3, 0, 0, 0, 2, 0, 0});
  expect_config_error([&] { read_idx(path("header"), 3); }, "truncated inside the header");
}

TEST_F(Idx, ExtraBytesAndMissingFilesAreRejected) {
  write_idx(path("extra"), labels(3));
  std::vector<uint8_t> bytes = read_bytes(path("extra"));
  bytes.push_back(9);
  write_bytes(path("extra"), bytes);
  expect_config_error([&] { read_idx(path("extra"), 1); }, "more data than the header");
  expect_config_error([&] { read_idx(path("nothing-here"), 1); }, "cannot open");
}

TEST_F(Mnist, LoadsScaledImagesAndLabelsFromEitherForm) {
  write_idx(path("train-images-idx3-ubyte.gz"), images(6));
  write_idx(path("train-labels-idx1-ubyte.gz"), labels(6));
  write_idx(path("t10k-images-idx3-ubyte"), images(2));  // uncompressed test split
  write_idx(path("t10k-labels-idx1-ubyte"), labels(2));
  const Dataset train = load_mnist(dir(), MnistSplit::train);
  ASSERT_EQ(train.inputs.shape(), (Shape{6, 12}));
  ASSERT_EQ(train.targets.shape(), (Shape{6}));
  EXPECT_EQ(train.classes, 10);
  for (int64_t k = 0; k < 6; ++k) {
    EXPECT_EQ(train.targets.data()[k], static_cast<float>((k * 3) % 10));
    for (int64_t p = 0; p < 12; ++p) {
      const int pixel = static_cast<int>((7 * k + 3 * (p / 3) + p % 3) % 256);
      EXPECT_FLOAT_EQ(train.inputs.data()[k * 12 + p], pixel / 255.0f);
    }
  }
  EXPECT_EQ(load_mnist(dir(), MnistSplit::test).size(), 2);
}

TEST_F(Mnist, MismatchedCountsBadLabelsAndMissingFilesAreClear) {
  write_idx(path("train-images-idx3-ubyte.gz"), images(6));
  write_idx(path("train-labels-idx1-ubyte.gz"), labels(5));
  expect_config_error([&] { load_mnist(dir(), MnistSplit::train); }, "holds 5 labels but");
  IdxArray bad = labels(6);
  bad.data[4] = 10;
  write_idx(path("train-labels-idx1-ubyte.gz"), bad);
  expect_config_error([&] { load_mnist(dir(), MnistSplit::train); }, "label 10 at index 4");
  expect_config_error([&] { load_mnist(dir(), MnistSplit::test); }, "t10k-images-idx3-ubyte");
}

TEST(Dataset, HeadStatisticsAndStandardisation) {
  Dataset d;
  d.classes = 2;
  d.inputs = Tensor::from_vector({4, 2}, {0, 2, 4, 6, 8, 10, 12, 14});
  d.targets = Tensor::from_vector({4}, {0, 1, 1, 0});
  const Dataset head = dataset_head(d, 3);
  EXPECT_EQ(head.size(), 3);
  EXPECT_TRUE(head.inputs.shares_storage_with(d.inputs));
  EXPECT_THROW(dataset_head(d, 5), ConfigError);
  const Standardization s = input_statistics(d);
  EXPECT_FLOAT_EQ(s.mean, 7.0f);
  EXPECT_FLOAT_EQ(s.stddev, std::sqrt(21.0f));
  standardize_(d, s);
  EXPECT_FLOAT_EQ(d.inputs.data()[0], -7.0f / std::sqrt(21.0f));
  const Standardization after = input_statistics(d);
  EXPECT_NEAR(after.mean, 0.0f, 1e-6);
  EXPECT_NEAR(after.stddev, 1.0f, 1e-6);
  EXPECT_THROW(standardize_(d, {0.0f, 0.0f}), ConfigError);
}

// The installed data set, when it is there (Debian's dataset-fashion-mnist).
TEST(MnistInstalled, FashionMnistHasTheKnownShape) {
  if (!fs::exists(std::string(kFashionMnistDir) + "/t10k-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }
  const Dataset test = load_mnist(kFashionMnistDir, MnistSplit::test);
  EXPECT_EQ(test.inputs.shape(), (Shape{10000, 784}));
  std::vector<int> counts(10, 0);
  for (float t : test.targets.span()) ++counts[static_cast<int>(t)];
  for (int c : counts) EXPECT_EQ(c, 1000);  // the test split is balanced
  EXPECT_STREQ(fashion_mnist_class_name(9), "Ankle boot");
}

}  // namespace
}  // namespace course
