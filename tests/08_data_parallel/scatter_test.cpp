// scatter_test.cpp: lesson 08, part 1: torch.chunk's sizes and the chunks' rows.
//
//   ./build/solutions/test_08 --gtest_filter='Scatter*'
#include "scatter.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "error.h"

namespace course {
namespace {

TEST(Scatter, ChunkSizesAreTorchChunks) {
  EXPECT_EQ(scatter_chunk_sizes(10, 4), (std::vector<int64_t>{3, 3, 3, 1}));
  EXPECT_EQ(scatter_chunk_sizes(6, 4), (std::vector<int64_t>{2, 2, 2}));  // device 3 idle
  EXPECT_EQ(scatter_chunk_sizes(2, 4), (std::vector<int64_t>{1, 1}));     // fewer rows than devices
  EXPECT_EQ(scatter_chunk_sizes(7, 3), (std::vector<int64_t>{3, 3, 1}));
  EXPECT_EQ(scatter_chunk_sizes(512, 2), (std::vector<int64_t>{256, 256}));
  EXPECT_EQ(scatter_chunk_sizes(5, 1), (std::vector<int64_t>{5}));
  EXPECT_EQ(scatter_chunk_sizes(1, 3), (std::vector<int64_t>{1}));
}

// The closed form for every batch and device count up to 40 x 9: c = ceil(B / K) rows per
// chunk, ceil(B / c) chunks, the last one B - c (chunks - 1).
TEST(Scatter, ChunkSizesFollowTheClosedForm) {
  for (int64_t b = 1; b <= 40; ++b) {
    for (int k = 1; k <= 9; ++k) {
      const std::vector<int64_t> sizes = scatter_chunk_sizes(b, k);
      const int64_t c = (b + k - 1) / k;
      const int64_t chunks = (b + c - 1) / c;
      ASSERT_EQ(static_cast<int64_t>(sizes.size()), chunks) << "B=" << b << " K=" << k;
      ASSERT_LE(chunks, k);
      for (int64_t i = 0; i + 1 < chunks; ++i) ASSERT_EQ(sizes[i], c) << "B=" << b << " K=" << k;
      ASSERT_EQ(sizes.back(), b - c * (chunks - 1)) << "B=" << b << " K=" << k;
    }
  }
}

TEST(Scatter, ChunksAreTheBatchRowsInOrder) {
  const int64_t rows = 11, cols = 3;
  Tensor batch = Tensor::empty({rows, cols});
  for (int64_t i = 0; i < rows * cols; ++i) {
    const int64_t row = i / cols, col = i % cols;  // element 100 * row + col
    batch.data()[i] = static_cast<float>(100 * row + col);
  }
  for (int k = 1; k <= 5; ++k) {
    const std::vector<Tensor> chunks = scatter(batch, k);
    const std::vector<int64_t> sizes = scatter_chunk_sizes(rows, k);
    ASSERT_EQ(chunks.size(), sizes.size());
    int64_t row = 0;
    for (size_t d = 0; d < chunks.size(); ++d) {
      ASSERT_EQ(chunks[d].shape(), (Shape{sizes[d], cols}));
      EXPECT_TRUE(chunks[d].shares_storage_with(batch)) << "chunk " << d << " should be a view";
      for (int64_t r = 0; r < sizes[d]; ++r, ++row) {
        for (int64_t c = 0; c < cols; ++c) {
          ASSERT_EQ(chunks[d].data()[r * cols + c], static_cast<float>(100 * row + c))
              << "K=" << k << " chunk " << d << " row " << r;
        }
      }
    }
    EXPECT_EQ(row, rows);
  }
}

TEST(Scatter, EmptyBatchesAndNoDevicesAreConfigErrors) {
  EXPECT_THROW(scatter_chunk_sizes(0, 2), ConfigError);
  EXPECT_THROW(scatter_chunk_sizes(4, 0), ConfigError);
  EXPECT_THROW(scatter(Tensor::empty({0, 3}), 2), ConfigError);
  EXPECT_THROW(scatter(Tensor::scalar(1.0f), 2), ConfigError);
}

}  // namespace
}  // namespace course
