// futex.cpp: the futex(2) system call behind futex.h (glibc has no wrapper).
#include "futex.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <ctime>

#include "error.h"

namespace course {

static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t) &&
                  std::atomic<uint32_t>::is_always_lock_free,
              "a futex word is a plain 32-bit word");

namespace {

long futex(std::atomic<uint32_t>& word, int op, uint32_t value, const timespec* timeout) {
  return ::syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), op, value, timeout, nullptr, 0);
}

}  // namespace

void futex_wait(std::atomic<uint32_t>& word, uint32_t expected, std::chrono::microseconds timeout) {
  if (timeout.count() <= 0) return;
  const timespec ts{static_cast<time_t>(timeout.count() / 1'000'000),
                    static_cast<long>(timeout.count() % 1'000'000) * 1000};
  if (futex(word, FUTEX_WAIT, expected, &ts) == 0) return;
  // EAGAIN: the word had already changed; ETIMEDOUT; EINTR: a signal. The caller re-checks.
  if (errno == EAGAIN || errno == ETIMEDOUT || errno == EINTR) return;
  throw_system_error("futex(FUTEX_WAIT)");
}

void futex_wake_all(std::atomic<uint32_t>& word) {
  if (futex(word, FUTEX_WAKE, INT_MAX, nullptr) < 0) throw_system_error("futex(FUTEX_WAKE)");
}

}  // namespace course
