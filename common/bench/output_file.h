// output_file.h: where every benchmark and picture writes its files: the one place that
// makes an output file's missing folders, so `./lesson16 --bench` works on a fresh clone
// where no bench-results/ exists yet.
//
//   write_output_file("bench-results/lesson16_timeline_gpipe.json", json);
//   std::ofstream csv = open_output_file("bench-results/lesson14_hooks.csv");
//
// A flag naming such a file is checked at start-up with writable(OutputPath::
// kFileInNewDirectory) (flag_checks.h), which accepts a folder that does not exist yet
// as long as it can be made; these functions then make it.
//
// What this is not: for checkpoints, whose folder must exist (OutputPath::kFile), nor
// atomic (safetensors.h writes checkpoints through a temporary file).
#pragma once

#include <fstream>
#include <string>

namespace course {

/// Makes the missing folders above `path` (none when it has no folder part). Throws
/// SystemError naming the folder when one cannot be made.
void ensure_parent_directory(const std::string& path);

/// `path` opened for writing (truncated; binary when `binary`), its missing folders made
/// first. Throws SystemError naming the path when it cannot be opened.
std::ofstream open_output_file(const std::string& path, bool binary = false);

/// The file named `name` beside `path`, after its stem: output_beside("out/lesson19.csv",
/// "balance.csv") is "out/lesson19_balance.csv". How a bench with several tables names them
/// after the one --csv its driver takes (driver.h).
std::string output_beside(const std::string& path, const std::string& name);

/// Writes `text` to `path` (open_output_file, binary). Throws SystemError naming the path
/// when it cannot be opened or written.
void write_output_file(const std::string& path, const std::string& text);

}  // namespace course
