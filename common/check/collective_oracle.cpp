// collective_oracle.cpp: see collective_oracle.h.
#include "collective_oracle.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>

namespace course {

float data_value(int rank, size_t index) {
  return static_cast<float>(65536.0 * rank + static_cast<double>(index % 65521));
}

float reduce_value(int rank, size_t index) {
  // A small integer hash of (rank, index): no period a chunked algorithm could line up with.
  uint64_t h = (static_cast<uint64_t>(rank) + 1) * 0x9E3779B97F4A7C15ull ^
               (static_cast<uint64_t>(index) + 7) * 0xC2B2AE3D27D4EB4Full;
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  h ^= h >> 32;
  const int exponent = static_cast<int>(h % 5) - 2;  // -2 .. 2
  const float sign = ((h >> 8) & 1) ? -1.0f : 1.0f;
  return sign * std::ldexp(1.0f, exponent);
}

std::vector<float> data_values(int rank, size_t count, size_t offset) {
  std::vector<float> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = data_value(rank, offset + i);
  return v;
}

std::vector<float> reduce_values(int rank, size_t count, size_t offset) {
  std::vector<float> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = reduce_value(rank, offset + i);
  return v;
}

std::vector<float> expected_reduce(ReduceOp op, int world, size_t count, size_t offset) {
  std::vector<float> out(count);
  for (size_t i = 0; i < count; ++i) {
    float acc = reduce_value(0, offset + i);
    for (int r = 1; r < world; ++r) {
      const float x = reduce_value(r, offset + i);
      switch (op) {
        case ReduceOp::SUM:
        case ReduceOp::AVG:
          acc = acc + x;
          break;
        case ReduceOp::PRODUCT:
          acc = acc * x;
          break;
        case ReduceOp::MIN:
          acc = x < acc ? x : acc;
          break;
        case ReduceOp::MAX:
          acc = x > acc ? x : acc;
          break;
      }
    }
    out[i] = op == ReduceOp::AVG ? acc / static_cast<float>(world) : acc;
  }
  return out;
}

std::vector<float> expected_broadcast(int root, size_t count) {
  return data_values(root, count);
}

std::vector<float> expected_scatter(int root, int rank, size_t k) {
  return data_values(root, k, rank * k);
}

std::vector<float> expected_gather(int world, size_t k) {
  std::vector<float> out;
  out.reserve(world * k);
  for (int r = 0; r < world; ++r) {
    const std::vector<float> block = data_values(r, k);
    out.insert(out.end(), block.begin(), block.end());
  }
  return out;
}

std::vector<float> expected_all_to_all(int world, int rank, size_t k) {
  std::vector<float> out;
  out.reserve(world * k);
  for (int j = 0; j < world; ++j) {
    const std::vector<float> block = data_values(j, k, rank * k);  // rank j's block `rank`
    out.insert(out.end(), block.begin(), block.end());
  }
  return out;
}

std::vector<float> expected_reduce_scatter(ReduceOp op, int world, int rank, size_t k) {
  return expected_reduce(op, world, k, rank * k);
}

float tolerance(ReduceOp op) {
  return op == ReduceOp::AVG ? 1e-6f : 0.0f;
}

namespace {
bool differs(float a, float e, float tol) {
  if (std::isnan(a) || std::isnan(e)) return true;
  if (tol == 0.0f) return a != e;
  return std::fabs(a - e) > tol * std::max(1.0f, std::fabs(e));
}
}  // namespace

size_t count_wrong(std::span<const float> actual, std::span<const float> expected, float tol) {
  const size_t n = std::min(actual.size(), expected.size());
  size_t wrong = std::max(actual.size(), expected.size()) - n;
  for (size_t i = 0; i < n; ++i) wrong += differs(actual[i], expected[i], tol) ? 1 : 0;
  return wrong;
}

std::string describe_wrong(std::span<const float> actual, std::span<const float> expected,
                           float tol) {
  const size_t wrong = count_wrong(actual, expected, tol);
  if (wrong == 0) return "";
  std::ostringstream out;
  if (actual.size() != expected.size()) {
    out << "got " << actual.size() << " elements, expected " << expected.size() << "; ";
  }
  out << wrong << " of " << expected.size() << " elements differ";
  const size_t n = std::min(actual.size(), expected.size());
  for (size_t i = 0; i < n; ++i) {
    if (differs(actual[i], expected[i], tol)) {
      out << "; first at [" << i << "]: got " << actual[i] << ", expected " << expected[i];
      break;
    }
  }
  return out.str();
}

}  // namespace course
