// flag_agreement.cpp: see flag_agreement.h.
#include "flag_agreement.h"

#include <sstream>
#include <vector>

#include "error.h"
#include "flags_across_ranks.h"

namespace course {
namespace {

// "flag\tvalue\n" per flag; strings travel as one float per byte (exact: 0..255).
std::string encode(const std::map<std::string, std::string>& flags) {
  std::string text;
  for (const auto& [flag, value] : flags) text += flag + "\t" + value + "\n";
  return text;
}

std::map<std::string, std::string> decode(const std::string& text) {
  std::map<std::string, std::string> flags;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t tab = line.find('\t');
    if (tab != std::string::npos) flags[line.substr(0, tab)] = line.substr(tab + 1);
  }
  return flags;
}

}  // namespace

void check_same_flags(const std::map<std::string, std::string>& flags, ProcessGroup& pg) {
  const int world = pg.size();
  if (world == 1) return;
  std::vector<FlagValues> all(static_cast<size_t>(world));
  const std::string mine = encode(flags);
  for (int root = 0; root < world; ++root) {
    std::vector<float> length{root == pg.rank() ? static_cast<float>(mine.size()) : 0.0f};
    pg.broadcast(length, root);
    std::vector<float> text(static_cast<size_t>(length[0]));
    if (root == pg.rank()) text.assign(mine.begin(), mine.end());
    pg.broadcast(text, root);
    std::string s(text.size(), '\0');
    for (size_t i = 0; i < text.size(); ++i) {
      s[i] = static_cast<char>(static_cast<unsigned char>(text[i]));
    }
    all[static_cast<size_t>(root)] = decode(s);
  }
  const std::string differs = flag_differences(all);
  if (!differs.empty()) {
    throw ConfigError(differs);
  }
}

}  // namespace course
