// fsdp_given.cpp: lesson 13, given: building the units, the gradient hooks, the
// pre-backward node, the state dicts and the memory model (see fsdp.h). The schedule
// itself is the exercise, fsdp.cpp.
#include <algorithm>

#include "activity.h"
#include "error.h"
#include "fsdp.h"
#include "node.h"
#include "tensor_ops.h"

namespace course {

// The identity on a unit's output whose backward calls pre_backward(unit) first: it runs
// when the gradient reaches the unit's output, before any of the unit's layers' backward
// (torch FSDP registers a hook on the unit's outputs for the same moment).
struct FsdpPreBackwardNode final : Node {
  ShardedModel* model = nullptr;
  size_t unit = 0;
  std::vector<Tensor> apply(const Tensor& grad_output) override {
    model->pre_backward(unit);
    model->check_held(unit, /*backward=*/true);
    return {grad_output};
  }
  std::string name() const override { return "FsdpPreBackward"; }
};

std::string unit_name(size_t i) {
  return "unit " + std::to_string(i);
}

ShardedModel::ShardedModel(std::shared_ptr<Sequential> model, ProcessGroup& group,
                           const ShardingOptions& options, MemoryLedger& ledger)
    : model_(std::move(model)),
      group_(group),
      options_(options),
      ledger_(ledger),
      rank_(group.rank()),
      world_(group.size()) {
  if (options.stage < 1 || options.stage > 3) {
    throw ConfigError("rank " + std::to_string(rank_) + ": no sharding stage " +
                      std::to_string(options.stage) +
                      " (1: optimizer state, 2: + gradients, 3: + parameters, FSDP)");
  }
  if (options.optimizer_slots < 0 || options.min_unit_params < 0) {
    throw ConfigError("rank " + std::to_string(rank_) +
                      ": optimizer_slots and min_unit_params must not be negative");
  }
  build_units();
  for (FlatUnit& unit : units_) flatten_and_broadcast(unit);
  register_hooks();
}

ShardedModel::~ShardedModel() {
  for (auto& [param, id] : hooks_) param.remove_hook(id);
  // Collectives still in flight write into our buffers: let them finish first.
  for (FlatUnit& unit : units_) {
    for (WorkPtr* work : {&unit.gathering, &unit.reducing}) {
      if (!*work) continue;
      try {
        (*work)->wait();
      } catch (const std::exception&) {  // the group reports it to whoever uses it next
      }
    }
  }
}

void ShardedModel::build_units() {
  size_t next = 0;  // index into all (named_parameters order: layer by layer)
  const std::vector<std::pair<std::string, Variable>> named = model_->named_parameters();
  FlatUnit current;
  for (size_t layer = 0; layer < model_->size(); ++layer) {
    const size_t count = model_->layer(layer)->named_parameters().size();
    for (size_t j = 0; j < count; ++j, ++next) {
      current.params.push_back(named.at(next).second);
      current.names.push_back(named.at(next).first);
      current.offsets.push_back(current.numel);
      current.numel += named.at(next).second.numel();
    }
    current.end_layer = layer + 1;
    if (count > 0 && current.numel >= options_.min_unit_params) {
      units_.push_back(std::move(current));
      current = FlatUnit{};
      current.first_layer = current.end_layer = layer + 1;
    }
  }
  if (current.end_layer > current.first_layer) {
    if (current.params.empty() && !units_.empty()) {
      units_.back().end_layer = current.end_layer;  // trailing layers without parameters
    } else {
      units_.push_back(std::move(current));
    }
  }
  if (units_.empty() || next != named.size()) {
    throw ConfigError("rank " + std::to_string(rank_) +
                      ": a sharded model needs at least one layer with parameters");
  }
}

void ShardedModel::flatten_and_broadcast(FlatUnit& unit) {
  const size_t i = static_cast<size_t>(&unit - units_.data());
  unit.padded = (unit.numel + world_ - 1) / world_ * world_;
  unit.shard_numel = unit.padded / world_;
  const int64_t full_bytes = 4 * unit.padded, shard_bytes = 4 * unit.shard_numel;
  if (options_.stage == 3) {
    ledger_.add(MemoryKind::parameters, shard_bytes, "the parameter shard of " + unit_name(i));
    ledger_.add(MemoryKind::gathered, full_bytes, "the gathered parameters of " + unit_name(i));
  } else {
    ledger_.add(MemoryKind::parameters, full_bytes, "the parameters of " + unit_name(i));
  }
  // Rank 0's parameters, flat, on every rank; the layers' parameters become views of them.
  unit.full = Tensor::zeros({unit.padded});
  for (size_t j = 0; j < unit.params.size(); ++j) {
    const Variable& p = unit.params[j];
    copy_(unit.full.rows(unit.offsets[j], p.numel()).reshape(p.shape()), p.data());
  }
  {
    const ActivityContext context("ShardedModel (lesson 13): the constructor broadcasting " +
                                  unit_name(i) + "'s parameters from rank 0");
    group_.broadcast(unit.full.span(), 0);
  }
  for (size_t j = 0; j < unit.params.size(); ++j) {
    const Variable& p = unit.params[j];
    p.set_data(unit.full.rows(unit.offsets[j], p.numel()).reshape(p.shape()));
  }
  const int64_t begin = rank_ * unit.shard_numel;
  unit.gathered = true;
  if (options_.stage == 3) {
    unit.shard = unit.full.rows(begin, unit.shard_numel).clone();
    reshard(i);
  } else {
    unit.shard = unit.full.rows(begin, unit.shard_numel);
  }
  if (options_.stage == 1) {
    ledger_.add(MemoryKind::gradients, full_bytes, "the gradient buffer of " + unit_name(i));
    unit.grad_buffer = Tensor::zeros({unit.padded});
    unit.shard_grad = unit.grad_buffer.rows(begin, unit.shard_numel);
  } else {
    ledger_.add(MemoryKind::gradients, shard_bytes, "the gradient shard of " + unit_name(i));
    unit.shard_grad = Tensor::zeros({unit.shard_numel});
  }
  ledger_.add(MemoryKind::optimizer, shard_bytes * options_.optimizer_slots,
              "the optimizer state of " + unit_name(i) + "'s shard (" +
                  std::to_string(options_.optimizer_slots) + " float(s) per parameter)");
  unit.shard_param = Variable(unit.shard, /*requires_grad=*/true);
  unit.shard_param.set_name(unit_name(i) + " shard");
}

void ShardedModel::register_hooks() {
  for (size_t i = 0; i < units_.size(); ++i) {
    for (size_t j = 0; j < units_[i].params.size(); ++j) {
      const Variable& p = units_[i].params[j];
      const int id = p.register_post_accumulate_grad_hook(
          [this, i, j](const Variable&) { on_gradient(i, j); });
      hooks_.emplace_back(p, id);
    }
  }
}

void ShardedModel::on_gradient(size_t i, size_t j) {
  FlatUnit& unit = units_[i];
  const Variable& p = unit.params[j];
  if (!unit.grad_buffer.defined()) {  // stages 2-3: the unit's first gradient this backward
    // At most one unsharded gradient buffer at a time: the unit after this one (whose
    // backward came first) must have finished its reduce-scatter before this one's opens.
    if (i + 1 < units_.size()) collect_reduced(i + 1);
    ledger_.add(MemoryKind::communication, 4 * unit.padded,
                "the gradient buffer of " + unit_name(i) + " (reduce-scattered)");
    unit.grad_buffer = Tensor::zeros({unit.padded});
  }
  // Into the flat buffer, and out of the parameter: the buffer is the only copy now.
  copy_(unit.grad_buffer.rows(unit.offsets[j], p.numel()).reshape(p.shape()), p.grad());
  p.set_grad(Tensor());
  if (unit.grads_pending == 0) {
    throw Error("rank " + std::to_string(rank_) + ": a gradient for " + unit.names[j] +
                " arrived outside prepare_for_backward() ... finish_backward()");
  }
  if (--unit.grads_pending == 0) post_backward(i);
}

Variable ShardedModel::attach_pre_backward(const Variable& out, size_t unit) {
  if (!should_record({out})) return out;
  Variable result(out.data());
  auto node = std::make_shared<FsdpPreBackwardNode>();
  node->model = this;
  node->unit = unit;
  connect_node(result, node, {out});
  return result;
}

Variable ShardedModel::run_layers(const FlatUnit& unit, Variable x) {
  check_held(static_cast<size_t>(&unit - units_.data()), /*backward=*/false);
  for (size_t layer = unit.first_layer; layer < unit.end_layer; ++layer) {
    x = model_->layer(layer)->forward(x);
  }
  return x;
}

void ShardedModel::gather_after_step() {
  stale_ = false;
  for (size_t i = 0; i < units_.size(); ++i) {
    units_[i].gathered = false;
    unshard(i);
  }
  for (size_t i = 0; i < units_.size(); ++i) wait_gathered(i);
}

void ShardedModel::free_grad_buffer(FlatUnit& unit) {
  if (!unit.grad_buffer.defined()) return;
  unit.grad_buffer = Tensor();
  ledger_.release(MemoryKind::communication, 4 * unit.padded);
}

void ShardedModel::finish_backward() {
  // Backward started the reductions last unit first; collect them in that order.
  for (size_t i = units_.size(); i-- > 0;) {
    const FlatUnit& u = units_[i];
    if (u.grads_pending != 0 || (!u.reducing && !u.shard_param.grad().defined())) {
      throw Error("rank " + std::to_string(rank_) + ": " + unit_name(i) + " got " +
                  std::to_string(u.params.size() - u.grads_pending) + " of its " +
                  std::to_string(u.params.size()) + " parameters' gradients in this backward (" +
                  u.names.front() +
                  ", ...): a sharded model needs every parameter to take part in every step");
    }
    collect_reduced(i);
  }
  if (options_.stage != 3) stale_ = true;
  for (size_t i = 0; i < units_.size() && schedule_problem_.empty(); ++i) {
    if (options_.stage != 1 && units_[i].grad_buffer.defined()) {
      schedule_problem_ = "collect_reduced(" + std::to_string(i) + "): " + unit_name(i) +
                          "'s unsharded gradient buffer is still held after finish_backward; "
                          "stages 2-3 free it once it is reduce-scattered (free_grad_buffer), "
                          "so that one is open at a time";
    }
  }
}

void ShardedModel::prepare_for_backward() {
  for (size_t i = 0; i < units_.size(); ++i) {
    FlatUnit& unit = units_[i];
    if (unit.reducing) {
      throw Error("rank " + std::to_string(rank_) +
                  ": backward started again before "
                  "finish_backward() collected " +
                  unit_name(i) + "'s gradients");
    }
    unit.grads_pending = unit.params.size();
    unit.shard_param.set_grad(Tensor());
  }
}

int64_t ShardedModel::messages_per_step() const {
  return static_cast<int64_t>(units_.size()) * (options_.stage == 3 ? 3 : 2);
}

std::string ShardedModel::describe() const {
  static const char* const names[] = {"", "ZeRO-1 (optimizer state sharded)",
                                      "ZeRO-2 (optimizer state and gradients sharded)",
                                      "FSDP / ZeRO-3 (parameters, gradients and optimizer "
                                      "state sharded)"};
  std::string text = std::string(names[options_.stage]) + ", " + std::to_string(units_.size()) +
                     " unit(s) over " + std::to_string(world_) + " rank(s), flat shards of " +
                     std::to_string(padded_count() / world_) + " values";
  if (options_.stage == 3) text += options_.prefetch ? ", prefetch" : ", no prefetch";
  return text;
}

std::vector<Variable> ShardedModel::shard_parameters() const {
  std::vector<Variable> out;
  for (const FlatUnit& unit : units_) out.push_back(unit.shard_param);
  return out;
}

NamedTensors ShardedModel::full_state_dict() {
  if (stale_) gather_after_step();
  NamedTensors out;
  for (size_t i = 0; i < units_.size(); ++i) {
    FlatUnit& unit = units_[i];
    unshard(i);
    wait_gathered(i);
    for (size_t j = 0; j < unit.params.size(); ++j) {
      out.emplace_back(unit.names[j], unit.params[j].data().clone());
    }
    reshard(i);
  }
  return out;
}

NamedTensors ShardedModel::sharded_state_dict() const {
  NamedTensors out;
  for (size_t i = 0; i < units_.size(); ++i) {
    out.emplace_back("unit" + std::to_string(i) + ".shard", units_[i].shard.clone());
  }
  return out;
}

NamedTensors ShardedModel::consolidate_optimizer_state(const Optimizer& optimizer, int to) {
  const std::vector<Variable>& params = optimizer.params();
  bool ours = params.size() == units_.size();
  for (size_t i = 0; ours && i < params.size(); ++i) {
    ours = params[i].impl() == units_[i].shard_param.impl();
  }
  if (!ours) {
    throw ConfigError("rank " + std::to_string(rank_) +
                      ": consolidate_optimizer_state needs the optimizer built on this "
                      "model's shard_parameters()");
  }
  if (to < 0 || to >= world_) {
    throw ConfigError("rank " + std::to_string(rank_) + ": consolidate_optimizer_state to rank " +
                      std::to_string(to) + " of " + std::to_string(world_));
  }
  NamedTensors out;
  for (const auto& [name, shard] : optimizer.state_tensors()) {  // "<unit>.<key>", in order
    const size_t dot = name.find('.');
    const FlatUnit& unit = units_.at(std::stoul(name.substr(0, dot)));
    const std::string key = name.substr(dot + 1);
    const Tensor whole = rank_ == to ? Tensor::empty({unit.padded}) : Tensor();
    const ActivityContext context(
        "ShardedModel (lesson 13): consolidate_optimizer_state "
        "gathering " +
        name + " on rank " + std::to_string(to));
    group_.gather(shard.span(), rank_ == to ? whole.span() : std::span<float>(), to);
    if (rank_ != to) continue;
    for (size_t j = 0; j < unit.params.size(); ++j) {
      const Variable& p = unit.params[j];
      out.emplace_back(unit.names[j] + "." + key,
                       whole.rows(unit.offsets[j], p.numel()).reshape(p.shape()).clone());
    }
  }
  return out;
}

void ShardedModel::load_full_state_dict(const NamedTensors& state) {
  for (FlatUnit& unit : units_) {
    const int64_t begin = rank_ * unit.shard_numel, end = begin + unit.shard_numel;
    for (size_t j = 0; j < unit.params.size(); ++j) {
      const auto it = std::find_if(state.begin(), state.end(),
                                   [&](const auto& entry) { return entry.first == unit.names[j]; });
      if (it == state.end() || it->second.shape() != unit.params[j].shape()) {
        throw ConfigError(
            "rank " + std::to_string(rank_) + ": load_full_state_dict: " + unit.names[j] +
            (it == state.end() ? " is missing"
                               : " is " + shape_str(it->second.shape()) + ", the model's is " +
                                     shape_str(unit.params[j].shape())) +
            " (a state dict of another model?)");
      }
      // The part of this parameter that falls in this rank's shard.
      const int64_t from = std::max(begin, unit.offsets[j]);
      const int64_t to = std::min(end, unit.offsets[j] + unit.params[j].numel());
      if (from >= to) continue;
      const Tensor flat = it->second.reshape({-1});
      copy_(unit.shard.rows(from - begin, to - from), flat.rows(from - unit.offsets[j], to - from));
    }
  }
  if (options_.stage != 3) stale_ = true;
}

int64_t ShardedModel::parameter_count_unpadded() const {
  int64_t n = 0;
  for (const FlatUnit& unit : units_) n += unit.numel;
  return n;
}

int64_t ShardedModel::padded_count() const {
  int64_t n = 0;
  for (const FlatUnit& unit : units_) n += unit.padded;
  return n;
}

int64_t ShardedModel::largest_unit() const {
  int64_t n = 0;
  for (const FlatUnit& unit : units_) n = std::max(n, unit.padded);
  return n;
}

double modelled_bytes_per_rank(int stage, int64_t params, int world, int slots,
                               int64_t largest_unit, int gathered_units) {
  const double psi = static_cast<double>(params), n = world;
  const double optimizer = 4.0 * slots * psi;
  switch (stage) {
    case 1:
      return 4 * psi + 4 * psi + optimizer / n;
    case 2:
      return 4 * psi + (4 * psi + optimizer) / n + 4.0 * static_cast<double>(largest_unit);
    case 3:
      return (8 * psi + optimizer) / n +
             4.0 * static_cast<double>(largest_unit) * (gathered_units + 1);
    default:
      return 8 * psi + optimizer;
  }
}

double modelled_values_sent(int stage, int64_t params, int world) {
  const double ring = static_cast<double>(world - 1) / world;
  return ring * static_cast<double>(params) * (stage == 3 ? 3.0 : 2.0);
}

}  // namespace course
