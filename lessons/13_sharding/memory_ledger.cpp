// memory_ledger.cpp: see memory_ledger.h.
#include "memory_ledger.h"

#include <cmath>
#include <cstdio>
#include <numeric>

namespace course {

const char* memory_kind_name(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::parameters:
      return "parameters";
    case MemoryKind::gradients:
      return "gradients";
    case MemoryKind::optimizer:
      return "optimizer state";
    case MemoryKind::gathered:
      return "gathered parameters";
    case MemoryKind::communication:
      return "communication";
  }
  return "?";
}

std::string format_mib(double bytes) {
  char text[32];
  if (std::fabs(bytes) >= (1 << 20) || bytes == 0) {
    std::snprintf(text, sizeof(text), "%.1f MiB", bytes / (1 << 20));
  } else if (std::fabs(bytes) >= 1024) {  // a budget of 0.05 MiB is not "0.0 MiB"
    std::snprintf(text, sizeof(text), "%.1f KiB", bytes / 1024);
  } else {
    std::snprintf(text, sizeof(text), "%.0f bytes", bytes);
  }
  return text;
}

MemoryLedger::MemoryLedger(int rank, int64_t budget_bytes) : rank_(rank), budget_(budget_bytes) {
  if (budget_bytes < 0) {
    throw ConfigError("rank " + std::to_string(rank) + ": a memory budget of " +
                      std::to_string(budget_bytes) + " bytes");
  }
}

int64_t MemoryLedger::live_bytes() const {
  return std::accumulate(live_.begin(), live_.end(), int64_t{0});
}

void MemoryLedger::add(MemoryKind kind, int64_t bytes, const std::string& what) {
  const int64_t total = live_bytes() + bytes;
  if (budget_ > 0 && total > budget_) {
    throw MemoryBudgetError(
        "rank " + std::to_string(rank_) + ": no room for " + what + " (" + memory_kind_name(kind) +
        ", " + format_mib(static_cast<double>(bytes)) + ") in the memory budget of " +
        format_mib(static_cast<double>(budget_)) + ": already held " + describe_live() +
        ". Raise --memory-budget, use more ranks, or shard more (--stage 3 holds 16/N bytes "
        "per parameter; smaller units gather less at a time)");
  }
  live_[static_cast<size_t>(kind)] += bytes;
  if (total > peak_) {
    peak_ = total;
    at_peak_ = live_;
  }
}

void MemoryLedger::release(MemoryKind kind, int64_t bytes) {
  int64_t& live = live_[static_cast<size_t>(kind)];
  if (bytes > live) {
    throw Error("rank " + std::to_string(rank_) + ": the memory ledger releases " +
                std::to_string(bytes) + " bytes of " + memory_kind_name(kind) + " but holds " +
                std::to_string(live));
  }
  live -= bytes;
}

void MemoryLedger::reset_peak() {
  peak_ = live_bytes();
  at_peak_ = live_;
}

std::string MemoryLedger::describe_live() const {
  std::string text;
  for (int k = 0; k < kMemoryKinds; ++k) {
    if (!text.empty()) text += ", ";
    text += memory_kind_name(static_cast<MemoryKind>(k));
    text += " ";
    text += format_mib(static_cast<double>(live_[static_cast<size_t>(k)]));
  }
  return text;
}

}  // namespace course
