// memory_ledger.h: lesson 13, given: the bytes of model state one rank holds, by kind, and
// their peak; with a budget, the allocation that would not fit is refused by name.
//
//   MemoryLedger ledger(rank, /*budget_bytes=*/64 << 20);
//   ledger.add(MemoryKind::parameters, 4 * shard_numel, "unit 2's parameter shard");
//   ...
//   ledger.release(MemoryKind::gathered, 4 * unit.padded);
//   ledger.peak_bytes();  ledger.at_peak(MemoryKind::gradients);
//
// The kinds are the ZeRO paper's model states and what sharding adds to them:
//   parameters          persistent float32 parameters (all of them, or this rank's shards)
//   gradients           gradients this rank keeps (all of them, or its shards' means)
//   optimizer           optimizer state (SGD momentum: 1 float per parameter, Adam: 2)
//   gathered            full parameters of FSDP units gathered for forward or backward
//   communication       buffers a collective reads or writes, alive while it runs
// Activations and the batch are not model state and are not counted here; the process's
// every tensor is measured separately (Storage::peak_cpu_bytes in tensor.h).
//
// The sharded model (fsdp.h) calls add() before it allocates and release() after it frees,
// so the ledger follows its real allocations; it reserves the optimizer's state at
// construction (the optimizer allocates it lazily, at its first step).
//
// Errors: with a budget, add() throws MemoryBudgetError (a ConfigError) when the live total
// would exceed it, naming the rank, what was being allocated, what is already held by kind,
// and what to do.
//
// Thread safety: one thread (the training thread) calls it.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "error.h"

namespace course {

enum class MemoryKind { parameters, gradients, optimizer, gathered, communication };
inline constexpr int kMemoryKinds = 5;

/// "parameters", "gradients", "optimizer state", "gathered parameters", "communication".
const char* memory_kind_name(MemoryKind kind);

/// An allocation the per-rank budget (--memory-budget) has no room for.
class MemoryBudgetError : public ConfigError {
 public:
  using ConfigError::ConfigError;
};

class MemoryLedger {
 public:
  /// budget_bytes 0: no budget.
  explicit MemoryLedger(int rank, int64_t budget_bytes = 0);

  /// Counts `bytes` more of `kind`, allocated for `what`. Throws MemoryBudgetError when the
  /// live total would exceed the budget (nothing is counted then).
  void add(MemoryKind kind, int64_t bytes, const std::string& what);
  /// Counts `bytes` of `kind` freed. REQUIRES: at most live(kind).
  void release(MemoryKind kind, int64_t bytes);

  int64_t live(MemoryKind kind) const { return live_[static_cast<size_t>(kind)]; }
  int64_t live_bytes() const;
  /// The largest live total since construction or reset_peak().
  int64_t peak_bytes() const { return peak_; }
  /// `kind`'s bytes at that peak.
  int64_t at_peak(MemoryKind kind) const { return at_peak_[static_cast<size_t>(kind)]; }
  /// Starts a new peak from what is live now.
  void reset_peak();
  int64_t budget_bytes() const { return budget_; }
  /// "parameters 12.0 MiB, gradients 3.0 MiB, ..." of what is live now.
  std::string describe_live() const;

 private:
  int rank_;
  int64_t budget_;
  std::array<int64_t, kMemoryKinds> live_{};
  std::array<int64_t, kMemoryKinds> at_peak_{};
  int64_t peak_ = 0;
};

/// "12.3 MiB"; below 1 MiB "51.2 KiB", below 1 KiB "1000 bytes" (never a "0.0 MiB" that
/// is not 0).
std::string format_mib(double bytes);

}  // namespace course
