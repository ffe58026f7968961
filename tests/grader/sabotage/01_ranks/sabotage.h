// sabotage.h: lesson 01 written to fail the way learners' code fails, for the grader's tests.
//
// COURSE_SABOTAGE picks the failure at run time, so one build serves every case:
//   deadlock  the mesh accepts before it dials (every rank waits in accept); the rank
//             arithmetic waits for a value nobody ever sets
//   loop      spins forever
//   segfault  writes through a null pointer
//   exit      calls exit(0) in the middle of the test
//   memory    rank 0 (or the only process) leaks: writes 1 GiB, 64 MiB at a time, keeps
//             it, then waits; the grader must stop it at its memory limit
// tests/grader/test_grader.py writes lesson 01's answers, with a call to strike() added
// (its SABOTAGE), and this file into lessons/01_ranks/ of a learner's copy.
//
// What this is not: an example to follow.
#pragma once

#include <cstdlib>
#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "error.h"

namespace course::sabotage {

inline std::string mode() {
  const char* m = std::getenv("COURSE_SABOTAGE");
  return m ? m : "";
}

/// Fails as COURSE_SABOTAGE says; returns only for "deadlock" in the mesh (it deadlocks
/// on its own there) or when no mode is set.
inline void strike(bool mesh) {
  const std::string m = mode();
  if (m == "loop") {
    volatile unsigned long spins = 0;
    for (;;) spins = spins + 1;
  }
  if (m == "segfault") {
    static int* volatile bad = nullptr;
    *bad = 42;
  }
  if (m == "exit") std::exit(0);
  if (m == "memory" && process_rank() <= 0) {
    static std::vector<std::unique_ptr<char[]>> leak;
    for (int i = 0; i < 16; ++i) {
      leak.emplace_back(new char[64 << 20]);
      std::memset(leak.back().get(), i + 1, 64 << 20);  // written: resident, not just reserved
    }
    std::promise<int> never;
    never.get_future().wait();
  }
  if (m == "deadlock" && !mesh) {
    std::promise<int> never;
    never.get_future().wait();
  }
}

}  // namespace course::sabotage
