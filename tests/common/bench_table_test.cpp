// bench_table_test.cpp: the benchmark table (bench_table.h): alignment, CSV, formatting.
//
//   ./build/solutions/tests/common/test_common --gtest_filter='BenchTable.*'
#include "bench_table.h"

#include <gtest/gtest.h>

#include <sstream>

#include "error.h"

namespace course {
namespace {

TEST(BenchTable, PrintsAlignedRowsAndWritesCsv) {
  BenchTable table({{"size(B)", 8}, {"GB/s", 6}});
  std::ostringstream out;
  table.print_header(out);
  table.add_row({"1024", format_fixed(1.23456, 2)}, &out);
  table.add_row({"8", "a,\"b\""});
  table.add_note("done", &out);
  EXPECT_EQ(out.str(), "# size(B)   GB/s\n     1024   1.23\n# done\n");
  EXPECT_EQ(table.to_csv(), "size(B),GB/s\n1024,1.23\n8,\"a,\"\"b\"\"\"\n# done\n");
  EXPECT_THROW(table.add_row({"1"}), ConfigError);
}

TEST(BenchTable, FormatsBytes) {
  EXPECT_EQ(format_bytes(8), "8 B");
  EXPECT_EQ(format_bytes(4096), "4 KiB");
  EXPECT_EQ(format_bytes(64u << 20), "64 MiB");
  EXPECT_EQ(format_bytes(3u << 19), "1.5 MiB");
}

}  // namespace
}  // namespace course
