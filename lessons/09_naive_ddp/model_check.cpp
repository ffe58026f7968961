// model_check.cpp: lesson 09, the collective model and gradient checks (see model_check.h).
#include "model_check.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "error.h"

namespace course {
namespace {

std::string shape_text(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// One parameter as it came out of the all_gather: name and shape back from the floats.
struct Described {
  std::string name;
  Shape shape;
  bool operator==(const Described& o) const { return name == o.name && shape == o.shape; }
  std::string text() const { return "\"" + name + "\" " + shape_text(shape); }
};

float agreed_max(ProcessGroup& pg, float value) {
  std::vector<float> v{value};
  pg.all_reduce(v, ReduceOp::MAX);
  return v[0];
}

}  // namespace

void verify_same_parameters(const Module& model, ProcessGroup& pg) {
  const auto params = model.named_parameters();
  const int world = pg.size();
  // Agree on the record layout: the most parameters, the longest name, the most dims.
  size_t longest = 0, dims = 0;
  for (const auto& [name, p] : params) {
    longest = std::max(longest, name.size());
    dims = std::max(dims, p.shape().size());
  }
  const auto count = static_cast<size_t>(agreed_max(pg, static_cast<float>(params.size())));
  const auto L = static_cast<size_t>(agreed_max(pg, static_cast<float>(longest)));
  const auto D = static_cast<size_t>(agreed_max(pg, static_cast<float>(dims)));
  const size_t record = L + 1 + D;

  // [count | record 0 | record 1 | ...], records past this rank's count stay zero.
  std::vector<float> mine(1 + count * record, 0.0f);
  mine[0] = static_cast<float>(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    float* r = mine.data() + 1 + i * record;
    const std::string& name = params[i].first;
    for (size_t c = 0; c < name.size(); ++c) r[c] = static_cast<unsigned char>(name[c]);
    const Shape& shape = params[i].second.shape();
    r[L] = static_cast<float>(shape.size());
    for (size_t d = 0; d < shape.size(); ++d) r[L + 1 + d] = static_cast<float>(shape[d]);
  }
  std::vector<float> all(mine.size() * static_cast<size_t>(world));
  pg.all_gather(mine, all);

  const auto described = [&](int rank, size_t i) {
    const float* r = all.data() + static_cast<size_t>(rank) * mine.size() + 1 + i * record;
    Described d;
    for (size_t c = 0; c < L && r[c] != 0.0f; ++c) d.name += static_cast<char>(r[c]);
    const auto n = static_cast<size_t>(r[L]);
    for (size_t k = 0; k < n; ++k) d.shape.push_back(static_cast<int64_t>(r[L + 1 + k]));
    return d;
  };
  const auto count_of = [&](int rank) {
    return static_cast<size_t>(all[static_cast<size_t>(rank) * mine.size()]);
  };
  for (int r = 1; r < world; ++r) {
    const size_t common = std::min(count_of(0), count_of(r));
    for (size_t i = 0; i < common; ++i) {
      const Described a = described(0, i), b = described(r, i);
      if (!(a == b)) {
        throw ConfigError("rank " + std::to_string(r) +
                          " has a different model than rank 0: " + "parameter " +
                          std::to_string(i) + " is " + b.text() + " on rank " + std::to_string(r) +
                          " but " + a.text() + " on rank 0; build the same model on every rank");
      }
    }
    if (count_of(0) != count_of(r)) {
      throw ConfigError("rank " + std::to_string(r) + " has a different model than rank 0: " +
                        std::to_string(count_of(r)) + " parameters on rank " + std::to_string(r) +
                        " but " + std::to_string(count_of(0)) +
                        " on rank 0; build the same model on every rank");
    }
  }
}

void check_gradients_present(const std::vector<std::pair<std::string, Variable>>& params,
                             ProcessGroup& pg) {
  const int world = pg.size();
  std::vector<float> mine(params.size());
  for (size_t i = 0; i < params.size(); ++i) mine[i] = params[i].second.grad().defined() ? 1 : 0;
  std::vector<float> all(mine.size() * static_cast<size_t>(world));
  pg.all_gather(mine, all);
  for (size_t i = 0; i < params.size(); ++i) {
    std::string missing;
    for (int r = 0; r < world; ++r) {
      if (all[static_cast<size_t>(r) * params.size() + i] == 0.0f) {
        missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      }
    }
    if (!missing.empty()) {
      throw ConfigError("parameter \"" + params[i].first + "\" has no gradient on rank(s) " +
                        missing +
                        " after backward: every parameter must take part in every rank's "
                        "loss (naive DDP has no find_unused_parameters; lesson 10 does)");
    }
  }
}

}  // namespace course
