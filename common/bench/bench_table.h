// bench_table.h: a benchmark table that prints row by row, nccl-tests style, and saves
// itself as CSV.
//
//   BenchTable table({{"size(B)", 12}, {"time(us)", 10}, {"GB/s", 8}});
//   table.print_header(std::cout);                    // "#     size(B)   time(us)     GB/s"
//   table.add_row({"1048576", format_fixed(101.5, 1), format_fixed(10.33, 2)}, &std::cout);
//   table.write_csv("bench-results/lesson02.csv");
//
// Cells are strings, formatted by the caller (format_fixed, format_bytes below), so one
// table class serves every benchmark: lesson 02's latency and bandwidth sweep, lesson
// 05's nccl-tests columns (size, count, type, redop, time, algbw, busbw, #wrong).
// Columns are right-aligned to their width (wider cells push the row, never truncate).
//
// What this is not: a timer or a statistics package. The benchmark measures; this prints.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace course {

/// A table of string cells printed row by row and saved as CSV (see the top of this file).
class BenchTable {
 public:
  /// One column: its name and its printed width.
  struct Column {
    std::string name;  ///< the header, also the CSV column name
    int width = 10;    ///< characters; wider cells push the row
  };

  /// A table with these columns, in this order.
  explicit BenchTable(std::vector<Column> columns);

  /// The column names, right-aligned, on one line starting with '#'.
  void print_header(std::ostream& os) const;
  /// Appends a row (REQUIRES: one cell per column, else ConfigError) and prints it to
  /// `os` when given, so a long sweep shows its progress.
  void add_row(std::vector<std::string> cells, std::ostream* os = nullptr);
  /// A free-text line printed under the table, e.g. "# avg bus bandwidth: 3.2 GB/s".
  /// Kept in the CSV as a comment.
  void add_note(const std::string& note, std::ostream* os = nullptr);

  /// The columns, as constructed.
  const std::vector<Column>& columns() const { return columns_; }
  /// Every row added so far.
  const std::vector<std::vector<std::string>>& rows() const { return rows_; }

  /// The table as CSV: one header line of column names, then one line per row, then
  /// the notes as "# ..." lines. Cells containing a comma or a quote are quoted.
  std::string to_csv() const;
  /// Writes to_csv() to `path`, creating its directory. Throws SystemError.
  void write_csv(const std::string& path) const;

 private:
  std::string format_row(const std::vector<std::string>& cells) const;

  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<std::string> notes_;
};

/// `value` with `decimals` digits after the point: format_fixed(3.14159, 2) == "3.14".
std::string format_fixed(double value, int decimals);
/// A byte count as people read it: "8 B", "4 KiB", "1 MiB", "1.5 MiB".
std::string format_bytes(uint64_t bytes);

}  // namespace course
