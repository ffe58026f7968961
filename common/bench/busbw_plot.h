// busbw_plot.h: the benchmark's picture: busbw against size, one line per algorithm and
// number of ranks, drawn by gnuplot from the CSV files CollectiveBenchTable writes.
//
//   plot_busbw_svg({"bench-results/lesson05_np2.csv", "bench-results/lesson05_np4.csv"},
//                  "bench-results/lesson05_busbw.svg", "all-reduce busbw");
//
// What this is not: a measurement. collective_bench.h measures; this only draws.
#pragma once

#include <string>
#include <vector>

namespace course {

/// Plots busbw (GB/s) against size (log scale) from CSV files written by
/// CollectiveBenchTable: one line per (algorithm, ranks), one colour per algorithm, one
/// dash pattern per number of ranks; rows whose algorithm is in `ceilings` ("link",
/// "link-mem") become horizontal lines, other link rows are left out. Writes `svg_path`,
/// and beside it the gnuplot script and data it used (svg_path with .gp and .dat), so the
/// plot can be regenerated or restyled.
/// Returns false (after a warning) when gnuplot is not installed or fails.
bool plot_busbw_svg(const std::vector<std::string>& csv_paths, const std::string& svg_path,
                    const std::string& title, const std::vector<std::string>& ceilings = {"link"});

}  // namespace course
