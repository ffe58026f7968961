// activity.cpp: see activity.h.
#include "activity.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>

namespace course {
namespace {
std::atomic<char*> g_slot{nullptr};
std::atomic<size_t> g_size{0};

// One writer at a time within the process: the rank's own threads (a sender thread beside
// the main one) would otherwise interleave their copies and garble the description.
std::mutex g_write_mutex;

void write_slot(const std::string& text) {
  if (g_slot.load(std::memory_order_acquire) == nullptr) return;  // detached: no lock taken
  std::lock_guard<std::mutex> lock(g_write_mutex);
  char* slot = g_slot.load(std::memory_order_acquire);
  const size_t size = g_size.load(std::memory_order_acquire);
  if (slot == nullptr || size == 0) return;
  const size_t n = std::min(text.size(), size - 1);
  slot[0] = '\0';  // a reader never sees the old tail glued to the new head
  std::memcpy(slot + 1, text.data() + std::min<size_t>(1, n), n > 0 ? n - 1 : 0);
  slot[n] = '\0';
  if (n > 0) slot[0] = text[0];
}
}  // namespace

void activity_attach(char* slot, size_t size) {
  g_size.store(0, std::memory_order_release);
  g_slot.store(slot, std::memory_order_release);
  if (slot != nullptr && size > 0) {
    slot[0] = '\0';
    g_size.store(size, std::memory_order_release);
  }
}

std::string activity_read(const char* slot, size_t size) {
  if (slot == nullptr || size == 0) return "";
  return std::string(slot, strnlen(slot, size));
}

thread_local std::string t_current;
thread_local std::string t_label;    // ActivityLabel's algorithm, "" when none
thread_local std::string t_context;  // ActivityContext's operation, "" when none
thread_local bool t_ignored = false;

void activity_ignore_this_thread() {
  t_ignored = true;
}

bool activity_recorded() {
  return !t_ignored && g_slot.load(std::memory_order_acquire) != nullptr;
}

ActivityScope::ActivityScope(const std::string& what) {
  if (!activity_recorded()) return;
  active_ = true;
  previous_ = t_current;
  t_current = t_label.empty() ? what : t_label + ": " + what;
  if (!t_context.empty()) t_current = t_context + ": " + t_current;
  write_slot(t_current);
}

ActivityScope::~ActivityScope() {
  if (!active_) return;
  t_current = previous_;
  write_slot(previous_);
}

ActivityLabel::ActivityLabel(const std::string& algorithm) {
  if (!activity_recorded()) return;
  active_ = true;
  previous_ = t_label;
  t_label = algorithm;
}

ActivityLabel::~ActivityLabel() {
  if (active_) t_label = previous_;
}

ActivityContext::ActivityContext(const std::string& operation) {
  if (!activity_recorded()) return;
  active_ = true;
  previous_ = t_context;
  t_context = operation;
}

ActivityContext::~ActivityContext() {
  if (active_) t_context = previous_;
}

}  // namespace course
