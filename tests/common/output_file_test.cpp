// output_file_test.cpp: every benchmark's files go through output_file.h, which makes the
// folders they go in: a fresh clone has no bench-results/.
//
//   ./build/solutions/tests/common/test_common --gtest_filter='OutputFile.*'
#include "output_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "../support/temp_dir.h"
#include "bench_table.h"
#include "error.h"
#include "svg_canvas.h"

namespace course {
namespace {

class OutputFile : public test::TempDir {};

std::string read_back(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST_F(OutputFile, MakesTheMissingFoldersAboveTheFile) {
  const std::string json = path("bench-results/deeper/timeline.json");
  write_output_file(json, "{}\n");
  EXPECT_EQ(read_back(json), "{}\n");
  // Again into the folder that now exists: the file is replaced, not appended to.
  write_output_file(json, "[]\n");
  EXPECT_EQ(read_back(json), "[]\n");
  std::ofstream csv = open_output_file(path("other/run.csv"));
  csv << "a,b\n";
  csv.close();
  EXPECT_EQ(read_back(path("other/run.csv")), "a,b\n");
}

TEST_F(OutputFile, TablesAndPicturesWriteIntoAMissingFolder) {
  BenchTable table({{"size(B)", 8}});
  table.add_row({"1024"});
  table.write_csv(path("bench-results/table.csv"));
  EXPECT_EQ(read_back(path("bench-results/table.csv")), "size(B)\n1024\n");
  SvgCanvas svg(10, 10);
  svg.write(path("pictures/p.svg"));
  EXPECT_NE(read_back(path("pictures/p.svg")).find("</svg>"), std::string::npos);
}

TEST_F(OutputFile, FilesBesideACsvAreNamedAfterItsStem) {
  EXPECT_EQ(output_beside("out/lesson19.csv", "balance.csv"), "out/lesson19_balance.csv");
  EXPECT_EQ(output_beside("bench-results/lesson05_np4.csv", "busbw.svg"),
            "bench-results/lesson05_np4_busbw.svg");
  EXPECT_EQ(output_beside("table.csv", "np2.csv"), "table_np2.csv");  // no folder part
  EXPECT_EQ(output_beside("a.b/run.v2.csv", "x.csv"), "a.b/run.v2_x.csv");
}

TEST_F(OutputFile, NamesTheFolderItCannotMake) {
  write_output_file(path("plain"), "x");  // a file where a folder should be
  try {
    write_output_file(path("plain/inside.csv"), "y");
    FAIL() << "expected a SystemError";
  } catch (const SystemError& e) {
    EXPECT_NE(std::string(e.what()).find(path("plain")), std::string::npos) << e.what();
  }
}

TEST_F(OutputFile, WritesAFileWithNoFolderPart) {
  const std::filesystem::path here = std::filesystem::current_path();
  std::filesystem::current_path(dir());
  write_output_file("bare.txt", "z");
  std::filesystem::current_path(here);
  EXPECT_EQ(read_back(path("bare.txt")), "z");
}

}  // namespace
}  // namespace course
