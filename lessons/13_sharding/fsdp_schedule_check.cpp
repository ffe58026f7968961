// fsdp_schedule_check.cpp: lesson 13, given: the watch on the schedule of fsdp.h
// (ShardedModel::schedule_problem): which units are gathered when each unit runs forward
// and when its pre_backward returns, and the ledger's peak against the model.
#include <string>
#include <vector>

#include "fsdp.h"

namespace course {

namespace {

// "units 0 and 2", "unit 1", "no unit".
std::string list_units(const std::vector<size_t>& units) {
  if (units.empty()) return "no unit";
  std::string text = units.size() == 1 ? "unit " : "units ";
  for (size_t k = 0; k < units.size(); ++k) {
    if (k > 0) text += k + 1 == units.size() ? " and " : ", ";
    text += std::to_string(units[k]);
  }
  return text;
}

}  // namespace

void ShardedModel::check_held(size_t i, bool backward) {
  if (options_.stage != 3 || !schedule_problem_.empty()) return;
  std::vector<size_t> held, expected;
  for (size_t j = 0; j < units_.size(); ++j) {
    if (units_[j].gathered || units_[j].gathering) held.push_back(j);
  }
  const bool prefetch = options_.prefetch;
  if (!backward) {
    expected.push_back(i);
    if (prefetch && i + 1 < units_.size()) expected.push_back(i + 1);
    if (held == expected && units_[i].gathered) return;
    schedule_problem_ =
        "forward: unit " + std::to_string(i) + "'s layers ran with " + list_units(held) +
        " gathered or being gathered" +
        (units_[i].gathered ? "" : " (unit " + std::to_string(i) + " not waited for)") +
        "; the schedule (fsdp.h) has " + list_units(expected) +
        (prefetch ? ": unshard unit i, prefetch unit i+1, wait for unit i"
                  : ": without prefetch, unit i alone") +
        ", and reshard each unit after its layers";
    return;
  }
  if (i > 0 && prefetch) expected.push_back(i - 1);
  expected.push_back(i);
  std::vector<size_t> allowed = expected;
  if (i + 1 < units_.size()) allowed.push_back(i + 1);  // resharded by its post_backward
  std::vector<size_t> before;
  bool beyond = false;
  for (size_t j : held) {
    if (j <= i) before.push_back(j);
    beyond = beyond || j > i + 1;
  }
  if (before == expected && !beyond && units_[i].gathered) return;
  schedule_problem_ =
      "pre_backward(" + std::to_string(i) + ") left " + list_units(held) +
      " gathered or being gathered" +
      (units_[i].gathered ? "" : " (unit " + std::to_string(i) + " not waited for)") +
      "; the schedule (fsdp.h) has " + list_units(expected) +
      (prefetch ? ": unshard unit i, prefetch unit i-1 (backward runs last to "
                  "first), wait for unit i"
                : ": without prefetch, unit i alone");
}

std::string ShardedModel::schedule_problem() const {
  if (!schedule_problem_.empty()) return schedule_problem_;
  const double modelled =
      modelled_bytes_per_rank(options_.stage, padded_count(), world_, options_.optimizer_slots,
                              largest_unit(), options_.stage == 3 && options_.prefetch ? 2 : 1);
  const auto peak = static_cast<double>(ledger_.peak_bytes());
  if (peak > 1.1 * modelled) {
    return "the ledger's peak, " + format_mib(peak) + " of model state, is more than 10% above " +
           "the model's " + format_mib(modelled) + " for stage " + std::to_string(options_.stage) +
           " (fsdp.h, MEMORY): a buffer lives longer than the schedule says (" +
           ledger_.describe_live() + " live now)";
  }
  return "";
}

}  // namespace course
