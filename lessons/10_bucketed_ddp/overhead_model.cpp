// overhead_model.cpp: see overhead_model.h. Given code.
#include "overhead_model.h"

#include <algorithm>

#include "bench_table.h"

namespace course {

double OverheadModel::all_reduce(int64_t bytes) const {
  return o + static_cast<double>(bytes) / w;
}

double OverheadModel::naive_step(int calls) const {
  return compute + calls * o + static_cast<double>(s) / w;
}

double OverheadModel::bucketed_step(int buckets, int64_t last_bytes, int micro_batches) const {
  const double backward = compute * 2.0 / 3.0;
  const double last = buckets * o + static_cast<double>(last_bytes) / w;
  const double overflow = buckets * o + static_cast<double>(s) / w - backward;
  return compute + std::max(last, overflow) / micro_batches;
}

std::string OverheadModel::describe() const {
  return "model: o = " + format_fixed(o * 1e6, 0) +
         " us per all-reduce, w = " + format_fixed(w / 1e6, 1) +
         " MB/s of payload (s = " + format_bytes(s) + ", compute " +
         format_fixed(compute * 1e3, 1) + " ms); step = compute + exposed, exposed = n_b*o + " +
         "s_last/w, at least n_b*o + s/w - backward";
}

OverheadModel fit_overhead_model(double compute, double t_small, double t_all, int64_t s) {
  OverheadModel m;
  m.compute = compute;
  m.o = t_small;
  m.s = s;
  m.w = static_cast<double>(s) / std::max(t_all - t_small, 1e-9);
  return m;
}

}  // namespace course
