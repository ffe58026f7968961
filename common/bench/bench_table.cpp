// bench_table.cpp: see bench_table.h.
#include "bench_table.h"

#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "error.h"
#include "output_file.h"

namespace course {

BenchTable::BenchTable(std::vector<Column> columns) : columns_(std::move(columns)) {}

std::string BenchTable::format_row(const std::vector<std::string>& cells) const {
  std::string line;
  for (size_t i = 0; i < cells.size(); ++i) {
    const int width = columns_[i].width;
    const std::string& cell = cells[i];
    line += ' ';
    if (static_cast<int>(cell.size()) < width) line.append(width - cell.size(), ' ');
    line += cell;
  }
  return line;
}

void BenchTable::print_header(std::ostream& os) const {
  std::vector<std::string> names;
  for (const Column& c : columns_) names.push_back(c.name);
  std::string line = format_row(names);
  line[0] = '#';
  os << line << '\n' << std::flush;
}

void BenchTable::add_row(std::vector<std::string> cells, std::ostream* os) {
  if (cells.size() != columns_.size()) {
    throw ConfigError("BenchTable::add_row: " + std::to_string(cells.size()) +
                      " cells for a table of " + std::to_string(columns_.size()) + " columns");
  }
  if (os) *os << format_row(cells) << '\n' << std::flush;
  rows_.push_back(std::move(cells));
}

void BenchTable::add_note(const std::string& note, std::ostream* os) {
  if (os) *os << "# " << note << '\n' << std::flush;
  notes_.push_back(note);
}

namespace {
std::string csv_cell(const std::string& cell) {
  if (cell.find_first_of(",\"\n") == std::string::npos) return cell;
  std::string quoted = "\"";
  for (char c : cell) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}
}  // namespace

std::string BenchTable::to_csv() const {
  std::ostringstream out;
  for (size_t i = 0; i < columns_.size(); ++i) {
    out << (i ? "," : "") << csv_cell(columns_[i].name);
  }
  out << '\n';
  for (const auto& row : rows_) {
    for (size_t i = 0; i < row.size(); ++i) out << (i ? "," : "") << csv_cell(row[i]);
    out << '\n';
  }
  for (const std::string& note : notes_) out << "# " << note << '\n';
  return out.str();
}

void BenchTable::write_csv(const std::string& path) const {
  std::ofstream file = open_output_file(path);
  file << to_csv();
  if (!file) throw_system_error("writing the CSV file " + path);
}

std::string format_fixed(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, value);
  return buf;
}

std::string format_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) value /= 1024, ++unit;
  if (unit == 0) return std::to_string(bytes) + " B";
  const bool whole = value == static_cast<double>(static_cast<uint64_t>(value));
  return format_fixed(value, whole ? 0 : 1) + " " + units[unit];
}

}  // namespace course
