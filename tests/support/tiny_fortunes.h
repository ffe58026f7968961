// tiny_fortunes.h: a tiny text for the GPT's training tests (lessons 17-19): short rhyming
// "fortunes", each ended by "%\n" as the corpus's are, varied by index so that a model has
// structure to pick up in a few dozen steps.
//
//   const TextSplit text{tiny_fortunes(200, 0), tiny_fortunes(20, 3), 200, 20};
#pragma once

#include <string>
#include <vector>

namespace course::test {

/// Fortunes offset .. offset + count - 1: "the cat sat on the hat.\n%\n" and the like.
inline std::string tiny_fortunes(int count, int offset) {
  const std::vector<std::string> words = {"cat", "hat", "mat", "bat", "rat", "sat"};
  std::string text;
  for (int i = offset; i < offset + count; ++i) {
    text += "the " + words[i % 6] + " sat on the " + words[(i + 1) % 6] + ".\n%\n";
  }
  return text;
}

}  // namespace course::test
