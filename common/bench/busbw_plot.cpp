// busbw_plot.cpp: see busbw_plot.h.
#include "busbw_plot.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "collective_bench.h"
#include "error.h"
#include "output_file.h"

namespace course {

bool plot_busbw_svg(const std::vector<std::string>& csv_paths, const std::string& svg_path,
                    const std::string& title, const std::vector<std::string>& ceiling_rows) {
  // Read every CSV into series "algorithm (N ranks)" -> [(size, busbw)].
  // (algorithm, ranks) -> [(size, busbw)]; link rows -> one busbw each.
  std::map<std::pair<std::string, int>, std::vector<std::pair<double, double>>> series;
  std::map<std::pair<std::string, int>, double> ceilings;
  std::vector<double> all_sizes;
  for (const std::string& path : csv_paths) {
    std::ifstream file(path);
    if (!file) {
      log_warning("plot_busbw_svg: cannot read " + path + "; skipping it");
      continue;
    }
    std::string line;
    std::map<std::string, size_t> column;
    while (std::getline(file, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::vector<std::string> cells;
      std::stringstream ss(line);
      for (std::string cell; std::getline(ss, cell, ',');) cells.push_back(cell);
      if (column.empty()) {
        for (size_t i = 0; i < cells.size(); ++i) column[cells[i]] = i;
        if (!column.count("algorithm") || !column.count("ranks") || !column.count("size") ||
            !column.count("busbw(GB/s)")) {
          log_warning("plot_busbw_svg: " + path + " lacks the columns of CollectiveBenchTable");
          break;
        }
        continue;
      }
      const std::pair<std::string, int> key{cells[column["algorithm"]],
                                            std::stoi(cells[column["ranks"]])};
      const double size = std::stod(cells[column["size"]]);
      const double busbw = std::stod(cells[column["busbw(GB/s)"]]);
      if (std::find(ceiling_rows.begin(), ceiling_rows.end(), key.first) != ceiling_rows.end()) {
        ceilings[key] = busbw;
      } else if (key.first.rfind("link", 0) != 0) {
        series[key].emplace_back(size, busbw);
        all_sizes.push_back(size);
      }
    }
  }
  if (series.empty()) {
    log_warning("plot_busbw_svg: no rows to plot in the given CSV files");
    return false;
  }
  std::sort(all_sizes.begin(), all_sizes.end());
  all_sizes.erase(std::unique(all_sizes.begin(), all_sizes.end()), all_sizes.end());

  const std::filesystem::path svg(svg_path);
  std::filesystem::path dat = svg, gp = svg;
  dat.replace_extension(".dat");
  gp.replace_extension(".gp");
  {
    std::ofstream out = open_output_file(dat.string());
    for (const auto& [key, points] : series) {
      out << "# " << key.first << ", " << key.second << " ranks\n";
      for (const auto& [size, busbw] : points) out << size << ' ' << busbw << '\n';
      out << "\n\n";
    }
  }
  {
    std::ofstream out = open_output_file(gp.string());
    out << "# " << gp.filename().string() << ": written by plot_busbw_svg "
        << "(common/bench/busbw_plot.cpp); run: gnuplot " << gp.filename().string() << "\n"
        << "set terminal svg size 960,540 dynamic noenhanced font 'sans,13' background rgb "
           "'white'\n"
        << "set output '" << svg.filename().string() << "'\n"
        << "set title '" << title << "'\n"
        << "set logscale x 2\n"
        << "set xlabel 'message size (bytes)'\n"
        << "set ylabel 'bus bandwidth (GB/s, 1e9 bytes/s)'\n"
        << "set yrange [0:*]\n"
        << "set grid\n"
        << "set key outside right top\n"
        << "set xtics (";
    for (size_t i = 0; i < all_sizes.size(); ++i) {
      out << (i ? ", " : "") << '"' << short_size(static_cast<size_t>(all_sizes[i])) << "\" "
          << static_cast<size_t>(all_sizes[i]);
    }
    out << ")\n";
    // One colour per algorithm, one dash pattern per number of ranks.
    const std::map<std::string, std::string> colours = {{"naive", "#d95f02"},
                                                        {"ring", "#0072b2"},
                                                        {"gloo", "#009e73"},
                                                        {"link", "#000000"},
                                                        {"link-mem", "#888888"}};
    std::map<int, int> dash;
    for (const auto& [key, points] : series) dash.emplace(key.second, int(dash.size()) + 1);
    const auto style = [&](const std::pair<std::string, int>& key) {
      const auto c = colours.find(key.first);
      const auto d = dash.find(key.second);
      return std::string(c == colours.end() ? "" : " lc rgb '" + c->second + "'") + " dt " +
             std::to_string(d == dash.end() ? 1 : d->second);
    };
    out << "plot ";
    int index = 0;
    for (const auto& [key, points] : series) {
      out << (index ? ", \\\n     " : "") << "'" << dat.filename().string() << "' index " << index
          << " using 1:2 with linespoints lw 2 pt 7 ps 0.5" << style(key) << " title '" << key.first
          << ", " << key.second << " ranks'";
      ++index;
    }
    for (const auto& [key, gbs] : ceilings) {
      out << ", \\\n     " << gbs << " with lines lw 1" << style(key) << " title '" << key.first
          << " (" << key.second << "-rank run)'";
    }
    out << "\n";
  }
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    log_warning(
        "plot_busbw_svg: gnuplot is not installed (apt-get install gnuplot-nox); "
        "the data and script are in " +
        dat.string() + " and " + gp.string());
    return false;
  }
  const std::string dir = svg.has_parent_path() ? svg.parent_path().string() : ".";
  const std::string command = "cd '" + dir + "' && gnuplot '" + gp.filename().string() + "' 2>&1";
  if (std::system(command.c_str()) != 0) {
    log_warning("plot_busbw_svg: gnuplot failed on " + gp.string());
    return false;
  }
  return true;
}

}  // namespace course
