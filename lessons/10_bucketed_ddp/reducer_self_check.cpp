// reducer_self_check.cpp: lesson 10, given: the driver's self-check (see
// reducer_self_check.h).
#include "reducer_self_check.h"

#include <vector>

#include "bucket_assignment.h"
#include "error.h"
#include "ops.h"
#include "reducer.h"
#include "sync_check.h"

namespace course {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

struct AssignmentCase {
  std::vector<int64_t> mib;  // each parameter's size in MiB
  std::vector<size_t> order;
  std::vector<int64_t> limits_mib;
  std::vector<BucketIndices> expected;
  const char* why;
};

const AssignmentCase kAssignmentCases[] = {
    {{4, 2, 6, 1},
     {3, 2, 1, 0},
     {1, 5},
     {{3}, {2}, {1, 0}},
     "bucket_assignment.h's example: 1 MiB reaches the first limit, 6 and 2 + 4 overshoot 5"},
    {{4, 2, 6, 1},
     {1, 3, 0, 2},
     {5},
     {{1, 3, 0}, {2}},
     "the parameters are walked in `order`, whatever it is: 2 + 1 + 4 overshoot 5"},
    {{4, 2, 6, 1}, {3, 2, 1, 0}, {0}, {{3}, {2}, {1}, {0}}, "a limit of 0: one per parameter"},
    {{4, 2, 6, 1}, {3, 2, 1, 0}, {100}, {{3, 2, 1, 0}}, "a limit above the model: one bucket"},
};

std::string format_buckets(const std::vector<BucketIndices>& buckets) {
  std::string text = "{";
  for (size_t b = 0; b < buckets.size(); ++b) text += (b ? ", " : "") + format_list(buckets[b]);
  return text + "}";
}

std::string format_mib(const std::vector<int64_t>& values) {
  std::vector<size_t> v(values.begin(), values.end());
  return format_list(v) + " MiB";
}

// Six parameters of kElements floats; rank r's gradient of w_k is (r + 1) * c_k.
constexpr size_t kParams = 6;
constexpr int64_t kElements = 4;
constexpr int64_t kBucketBytes = 2 * kElements * static_cast<int64_t>(sizeof(float));
const std::vector<size_t> kUseOrders[] = {
    {5, 4, 3, 2, 1, 0}, {0, 2, 4, 1, 3, 5}, {3, 0, 5, 1, 4, 2}};

struct Loose {
  std::vector<std::pair<std::string, Variable>> params;
  std::vector<Tensor> inputs;                    // x_k: this rank's gradient of w_k
  std::vector<std::vector<float>> mean, own;     // per parameter
  std::vector<size_t> use_order, arrival_order;  // arrival: the reverse of use
};

Loose make_loose(int rank, int world) {
  Loose l;
  for (size_t k = 0; k < kParams; ++k) {
    Tensor w = Tensor::empty({kElements}), x = Tensor::empty({kElements});
    std::vector<float> mean, own;
    for (int64_t i = 0; i < kElements; ++i) {
      const float c = self_check_gradient_base(k, static_cast<size_t>(i));
      w.data()[i] = 0.1f * static_cast<float>(i) - 0.05f * static_cast<float>(k);
      x.data()[i] = static_cast<float>(rank + 1) * c;
      own.push_back(x.data()[i]);
      mean.push_back(0.5f * static_cast<float>(world + 1) * c);
    }
    const std::string name = "w" + std::to_string(k);
    l.params.emplace_back(name, Variable(w, true).set_name(name));
    l.inputs.push_back(x);
    l.mean.push_back(mean);
    l.own.push_back(own);
  }
  l.use_order = kUseOrders[static_cast<size_t>(rank) % 3];
  l.arrival_order.assign(l.use_order.rbegin(), l.use_order.rend());
  return l;
}

// sum_k sum(w_k * x_k), using the parameters in l.use_order: the engine runs the newest
// node first, so the parameter used last gets its gradient first.
void backward(const Loose& l) {
  Variable loss;
  for (size_t k : l.use_order) {
    Variable term = sum(l.params[k].second * Variable(l.inputs[k]));
    loss = loss.defined() ? loss + term : term;
  }
  loss.backward();
}

// The order buckets become complete when gradients arrive in `arrival`.
std::vector<size_t> expected_ready_log(const std::vector<BucketInfo>& buckets,
                                       const std::vector<size_t>& arrival) {
  std::vector<size_t> pending, bucket_of(kParams), log;
  for (size_t b = 0; b < buckets.size(); ++b) {
    pending.push_back(buckets[b].params.size());
    for (size_t index : buckets[b].params) bucket_of[index] = b;
  }
  for (size_t index : arrival) {
    if (--pending[bucket_of[index]] == 0) log.push_back(bucket_of[index]);
  }
  return log;
}

std::string names(const Loose& l, const std::vector<size_t>& indices) {
  std::string text;
  for (size_t i : indices) text += (text.empty() ? "" : " ") + l.params[i].first;
  return text;
}

// One iteration on this rank: "" or what went wrong here (each rank its own view).
std::string check_iteration(Reducer& reducer, const Loose& l, int rank, int world,
                            const std::string& when) {
  for (const auto& [name, p] : l.params) p.zero_grad();
  reducer.prepare_for_backward({});
  backward(l);
  const std::vector<BucketInfo> buckets = reducer.buckets();
  const std::string here = "Reducer, " + when + ", rank " + std::to_string(rank) +
                           " (gradients arrived " + names(l, l.arrival_order) + ")";
  std::vector<size_t> in_order(buckets.size());
  for (size_t b = 0; b < in_order.size(); ++b) in_order[b] = b;
  if (reducer.launch_log() != in_order) {
    return here + ": buckets launched in the order " + format_list(reducer.launch_log()) +
           ", expected " + format_list(in_order) +
           " on every rank: launch_ready_buckets launches bucket b + 1 only after bucket b, "
           "whatever order they become ready in (reducer.h, step 4)";
  }
  if (reducer.reduction_pending()) {
    return here +
           ": the reduction is still pending after backward: once the last bucket is "
           "launched, launch_ready_buckets calls finalize_backward (reducer.h, step 5)";
  }
  const std::vector<size_t> ready = expected_ready_log(buckets, l.arrival_order);
  if (reducer.ready_log() != ready) {
    return here + ": ready_log() is " + format_list(reducer.ready_log()) + ", expected " +
           format_list(ready) +
           ": mark_variable_ready appends b to ready_log_ when bucket b's last gradient "
           "arrives (the tests and the trace read it)";
  }
  for (size_t b = 0; b < buckets.size(); ++b) {
    for (size_t index : buckets[b].params) {
      const Tensor g = l.params[index].second.grad();
      const std::string where = here + ", bucket " + std::to_string(b) + " of " +
                                std::to_string(buckets.size()) +
                                (b + 1 == buckets.size() ? " (the last launched)" : "");
      if (!g.defined()) return where + ": \"" + l.params[index].first + "\" has no gradient";
      const std::string what = describe_gradient_error(l.params[index].first, rank, world,
                                                       g.to_vector(), l.mean[index], l.own[index]);
      if (!what.empty()) {
        return where + ": " + what +
               " (mark_variable_ready puts grad / N into the bucket; finalize_backward "
               "copies every bucket's slices back)";
      }
    }
  }
  return "";
}

std::string collectives_out_of_step(const std::string& when, const Error& e) {
  return "Reducer, " + when +
         ": the ranks' collectives stopped pairing up: every rank must launch every "
         "bucket's all-reduce, in bucket order 0, 1, 2, ..., whatever order its gradients "
         "arrive in (launch_ready_buckets, reducer.h step 4). What the transport saw: " +
         e.what();
}

// After rebuild_buckets: every rank has rank 0's layout, and rank 0's is the assignment of
// its arrival order. Each parameter's bucket index, all-gathered.
std::string check_rebuilt_layout(Reducer& reducer, const Loose& l, ProcessGroup& pg) {
  const std::vector<BucketInfo> buckets = reducer.buckets();
  std::vector<float> bucket_of(kParams, -1.0f);
  for (size_t b = 0; b < buckets.size(); ++b) {
    for (size_t index : buckets[b].params) bucket_of[index] = static_cast<float>(b);
  }
  std::vector<float> all(kParams * static_cast<size_t>(pg.size()));
  pg.all_gather(bucket_of, all);
  std::string problem;
  for (int r = 1; r < pg.size() && problem.empty(); ++r) {
    for (size_t k = 0; k < kParams; ++k) {
      if (all[static_cast<size_t>(r) * kParams + k] != all[k]) {
        problem = "Reducer::rebuild_buckets: rank " + std::to_string(r) + " put \"" +
                  l.params[k].first + "\" in bucket " +
                  std::to_string(static_cast<int>(all[static_cast<size_t>(r) * kParams + k])) +
                  ", rank 0 in bucket " + std::to_string(static_cast<int>(all[k])) +
                  ": every rank adopts rank 0's layout (broadcast it), else the ranks' "
                  "all-reduces pair different parameters";
        break;
      }
    }
  }
  return problem;
}

// One iteration checked on every rank (the first problem any rank found). A Reducer whose
// ranks launch different all-reduces breaks the process group in the middle of it: the
// transport's error then says which rule of the Reducer's that breaks.
std::string check_iteration_on_every_rank(Reducer& reducer, const Loose& l, ProcessGroup& pg,
                                          const std::string& when) {
  try {
    return first_problem_on_any_rank(check_iteration(reducer, l, pg.rank(), pg.size(), when), pg);
  } catch (const NetworkError& e) {
    return collectives_out_of_step(when, e);
  } catch (const ProtocolError& e) {
    return collectives_out_of_step(when, e);
  }
}

}  // namespace

std::string self_check_bucket_assignment() {
  for (const AssignmentCase& c : kAssignmentCases) {
    std::vector<int64_t> bytes, limits;
    for (int64_t m : c.mib) bytes.push_back(m * kMiB);
    for (int64_t m : c.limits_mib) limits.push_back(m * kMiB);
    const std::vector<BucketIndices> got =
        compute_bucket_assignment_by_size(bytes, c.order, limits);
    if (got == c.expected) continue;
    return "compute_bucket_assignment_by_size: parameters of " + format_mib(c.mib) +
           " in the order " + format_list(c.order) + " under limits " + format_mib(c.limits_mib) +
           " gave " + format_buckets(got) + ", expected " + format_buckets(c.expected) + " (" +
           c.why + "; bucket_assignment.h, THE RULE)";
  }
  return "";
}

std::string self_check_reducer(ProcessGroup& pg) {
  const int rank = pg.rank(), world = pg.size();
  Loose l = make_loose(rank, world);
  Reducer reducer(l.params, pg,
                  {.first_bucket_bytes = kBucketBytes, .bucket_cap_bytes = kBucketBytes});
  std::string problem = check_iteration_on_every_rank(
      reducer, l, pg, "iteration 1 (buckets {w5 w4} {w3 w2} {w1 w0})");
  if (!problem.empty()) return problem;
  if (!reducer.rebuild_buckets()) {
    problem = "Reducer::rebuild_buckets returned false after a first full iteration";
  }
  problem = first_problem_on_any_rank(problem, pg);
  if (!problem.empty()) return problem;
  problem = check_rebuilt_layout(reducer, l, pg);
  if (problem.empty()) {
    std::vector<BucketIndices> layout;
    for (const BucketInfo& b : reducer.buckets()) layout.push_back(b.params);
    const std::vector<BucketIndices> expected{{0, 1}, {2, 3}, {4, 5}};
    if (layout != expected) {
      problem = "Reducer::rebuild_buckets: the rebuilt buckets are " + format_buckets(layout) +
                ", expected " + format_buckets(expected) +
                " (rank 0's gradients arrived w0 w1 ... w5: compute_bucket_assignment_by_size "
                "over the order gradients arrived in, ready_order_, then rank 0's layout "
                "broadcast)";
    }
  }
  problem = first_problem_on_any_rank(problem, pg);
  if (!problem.empty()) return problem;
  return check_iteration_on_every_rank(reducer, l, pg,
                                       "iteration 2 (rebuilt buckets {w0 w1} {w2 w3} {w4 w5})");
}

std::string run_lesson10_self_check(ProcessGroup& pg) {
  std::string problem = self_check_bucket_assignment();
  if (!problem.empty()) return problem;
  return self_check_reducer(pg);
}

}  // namespace course
