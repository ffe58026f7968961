// sync_check.cpp: lesson 09, given: the self-checks' shared reading of gradients (see
// sync_check.h).
#include "sync_check.h"

#include <cmath>
#include <sstream>

#include "bench_table.h"

namespace course {
namespace {

// Every element of `got` is within a relative 1e-5 of factor * `want`.
bool all_near(std::span<const float> got, std::span<const float> want, double factor) {
  for (size_t i = 0; i < got.size(); ++i) {
    const double w = factor * static_cast<double>(want[i]);
    if (std::fabs(static_cast<double>(got[i]) - w) > 1e-5 * std::max(1.0, std::fabs(w))) {
      return false;
    }
  }
  return true;
}

}  // namespace

float self_check_gradient_base(size_t param, size_t element) {
  return 1.0f + 0.25f * static_cast<float>(param) + 0.125f * static_cast<float>(element % 8);
}

std::string describe_gradient_error(const std::string& name, int rank, int world,
                                    std::span<const float> got, std::span<const float> mean,
                                    std::span<const float> own) {
  if (all_near(got, mean, 1.0)) return "";
  const std::string who = "\"" + name + "\" on rank " + std::to_string(rank);
  const double n = world;
  if (world > 1 && all_near(got, mean, n)) {
    return who + " is " + std::to_string(world) +
           " times the mean over ranks: the sum, not the mean (all_reduce(SUM) sums; multiply "
           "by 1/N once)";
  }
  if (world > 1 && all_near(got, mean, 1.0 / n)) {
    return who + " is the mean over ranks divided by " + std::to_string(world) +
           " again: divide by N once (SUM then 1/N, or AVG; not both)";
  }
  if (all_near(got, own, 1.0)) {
    return who +
           " is still this rank's own gradient: the mean over ranks never reached "
           "p.grad() (averaged in a copy, or not written back)";
  }
  if (world > 1 && all_near(got, own, 1.0 / n)) {
    return who + " is this rank's own gradient divided by " + std::to_string(world) +
           ": divided, but the all-reduce's result never reached it (read before the "
           "all-reduce finished: wait for its Work first; or never all-reduced)";
  }
  if (all_near(got, mean, 0.0)) {
    return who + " is zero, not the mean over ranks: the result was not written back";
  }
  size_t first = 0;
  while (first + 1 < got.size() && all_near(got.subspan(first, 1), mean.subspan(first, 1), 1.0)) {
    ++first;
  }
  return who + " is not the mean over ranks: element " + std::to_string(first) + " is " +
         format_fixed(got[first], 6) + ", expected " + format_fixed(mean[first], 6) +
         " (this rank's own gradient there: " + format_fixed(own[first], 6) + ")";
}

std::string first_problem_on_any_rank(const std::string& problem, ProcessGroup& pg) {
  std::vector<float> length{static_cast<float>(problem.size())};
  std::vector<float> lengths(static_cast<size_t>(pg.size()));
  pg.all_gather(length, lengths);
  for (int r = 0; r < pg.size(); ++r) {
    const auto n = static_cast<size_t>(lengths[static_cast<size_t>(r)]);
    if (n == 0) continue;
    std::vector<float> text(n);
    if (r == pg.rank()) {
      for (size_t i = 0; i < n; ++i) text[i] = static_cast<unsigned char>(problem[i]);
    }
    pg.broadcast(text, r);
    std::string agreed(n, ' ');
    for (size_t i = 0; i < n; ++i) agreed[i] = static_cast<char>(static_cast<int>(text[i]));
    return agreed;
  }
  return "";
}

std::string format_list(const std::vector<size_t>& values) {
  std::ostringstream out;
  out << "{";
  for (size_t i = 0; i < values.size(); ++i) out << (i ? ", " : "") << values[i];
  out << "}";
  return out.str();
}

}  // namespace course
