// bench_table_test.cpp: the benchmark table (bench_table.h): alignment, CSV, formatting.
//
//   ./build/solutions/tests/common/test_common --gtest_filter='BenchTable.*'
#include "bench_table.h"

#include <gtest/gtest.h>

#include <sstream>

#include "collective_bench.h"
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

// A figure above its ceiling means the ceiling was measured on a busy machine: flagged,
// naming both figures; within 5% of it (noise) or below, nothing.
TEST(BenchTable, FlagsAFigureAboveItsCeilingAsABusyMachine) {
  EXPECT_EQ(busy_machine_note("ring busbw", 0.8, 1.0), "");
  EXPECT_EQ(busy_machine_note("ring busbw", 1.04, 1.0), "");
  const std::string note = busy_machine_note("ring busbw", 1.059, 1.0);
  EXPECT_NE(note.find("BUSY MACHINE"), std::string::npos) << note;
  EXPECT_NE(note.find("1.059"), std::string::npos) << note;
  EXPECT_NE(note.find("1.000"), std::string::npos) << note;
  EXPECT_EQ(busy_machine_note("ratio", 2.7, 0.0), "") << "no ceiling measured: nothing to say";
}

}  // namespace
}  // namespace course
