// gloo_store.cpp: see gloo_store.h.
#include "gloo_store.h"

namespace course {

void GlooStore::set(const std::string& key, const std::vector<char>& data) {
  store_.set(prefix_ + key, std::string(data.begin(), data.end()));
}

std::vector<char> GlooStore::get(const std::string& key) {
  const std::string value = store_.get(prefix_ + key, timeout_);
  return {value.begin(), value.end()};
}

void GlooStore::wait(const std::vector<std::string>& keys,
                     const std::chrono::milliseconds& timeout) {
  std::vector<std::string> full;
  full.reserve(keys.size());
  for (const auto& k : keys) full.push_back(prefix_ + k);
  store_.wait(full, timeout);
}

}  // namespace course
