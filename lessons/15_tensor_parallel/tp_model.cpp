// tp_model.cpp: lesson 15, given: the serial model and its tensor-parallel twin (tp_model.h).
#include "tp_model.h"

#include "error.h"
#include "ops.h"
#include "tp_ops.h"
#include "vocab_parallel_loss.h"

namespace course {

int64_t ModelShape::parameters() const {
  const int64_t H = hidden;
  return inputs * H + H + blocks * (2 * 4 * H * H + 4 * H + H) + classes * H + classes;
}

int64_t ModelShape::replicated_parameters() const {
  return inputs * hidden + hidden + blocks * hidden;
}

int64_t ModelShape::parameters_per_rank(int T) const {
  const int64_t H = hidden;
  const int64_t Cp = padded_classes(classes, T);
  return replicated_parameters() + blocks * (2 * 4 * H * H + 4 * H) / T + (Cp * H + Cp) / T;
}

// ---- SerialMlp ---------------------------------------------------------------------------

SerialMlpBlock::SerialMlpBlock(int64_t hidden, Rng& rng) {
  fc1_ = register_module("fc1", std::make_shared<Linear>(hidden, 4 * hidden, rng));
  fc2_ = register_module("fc2", std::make_shared<Linear>(4 * hidden, hidden, rng));
}

Variable SerialMlpBlock::forward(const Variable& x) {
  return x + fc2_->forward(relu(fc1_->forward(x)));
}

std::string SerialMlpBlock::describe() const {
  return "SerialMlpBlock(" + fc1_->describe() + ", ReLU, " + fc2_->describe() + ", + x)";
}

SerialMlp::SerialMlp(const ModelShape& shape, Rng& rng) {
  input_ = register_module("input", std::make_shared<Linear>(shape.inputs, shape.hidden, rng));
  auto list = register_module("blocks", std::make_shared<ModuleList>());
  for (int k = 0; k < shape.blocks; ++k) {
    blocks_.push_back(list->append(std::make_shared<SerialMlpBlock>(shape.hidden, rng)));
  }
  head_ = register_module("head", std::make_shared<Linear>(shape.hidden, shape.classes, rng));
}

Variable SerialMlp::forward(const Variable& x) {
  Variable h = relu(input_->forward(x));
  for (auto& block : blocks_) h = block->forward(h);
  return head_->forward(h);
}

std::string SerialMlp::describe() const {
  return "SerialMlp(input " + input_->describe() + ", " + std::to_string(blocks_.size()) +
         " residual blocks H -> 4H -> H, head " + head_->describe() + ")";
}

std::shared_ptr<SerialMlp> make_serial_model(const ModelShape& shape, Rng& rng) {
  return std::make_shared<SerialMlp>(shape, rng);
}

// ---- The parallel model --------------------------------------------------------------------

ParallelMlpBlock::ParallelMlpBlock(const NamedTensors& full, const std::string& prefix,
                                   ProcessGroup& tp) {
  fc1_ = register_module(
      "fc1", std::make_shared<ColumnParallelLinear>(find_tensor(full, prefix + "fc1.weight"),
                                                    find_tensor(full, prefix + "fc1.bias"), tp));
  fc2_ = register_module(
      "fc2", std::make_shared<RowParallelLinear>(find_tensor(full, prefix + "fc2.weight"),
                                                 find_tensor(full, prefix + "fc2.bias"), tp));
}

Variable ParallelMlpBlock::forward(const Variable& x) {
  // f inside fc1, g inside fc2: one all-reduce each way, none between the layers.
  return x + fc2_->forward(relu(fc1_->forward(x)));
}

std::string ParallelMlpBlock::describe() const {
  return "ParallelMlpBlock(" + fc1_->describe() + ", ReLU, " + fc2_->describe() + ", + x)";
}

TensorParallelMlp::TensorParallelMlp(const NamedTensors& full, const ModelShape& shape,
                                     ProcessGroup& tp)
    : shape_(shape), tp_(tp) {
  const int T = tp.size();
  if ((4 * shape.hidden) % T != 0) {
    throw ConfigError("the hidden size " + std::to_string(shape.hidden) + " (fc1's " +
                      std::to_string(4 * shape.hidden) + " outputs) is not divisible by --tp " +
                      std::to_string(T));
  }
  Rng unused(0);
  input_ = register_module("input", std::make_shared<Linear>(shape.inputs, shape.hidden, unused));
  input_->weight().set_data(find_tensor(full, "input.weight").clone());
  input_->bias().set_data(find_tensor(full, "input.bias").clone());
  auto list = register_module("blocks", std::make_shared<ModuleList>());
  for (int k = 0; k < shape.blocks; ++k) {
    blocks_.push_back(list->append(
        std::make_shared<ParallelMlpBlock>(full, "blocks." + std::to_string(k) + ".", tp)));
  }
  head_ = register_module("head",
                          std::make_shared<ColumnParallelLinear>(
                              find_tensor(full, "head.weight"), find_tensor(full, "head.bias"), tp,
                              /*gather_output=*/false, padded_classes(shape.classes, T)));
}

Variable TensorParallelMlp::forward(const Variable& x) {
  Variable h = relu(input_->forward(x));
  for (auto& block : blocks_) h = block->forward(h);
  return head_->forward(h);
}

std::string TensorParallelMlp::describe() const {
  std::string text = "TensorParallelMlp(T=" + std::to_string(tp_.size()) + ": input " +
                     input_->describe() + " replicated";
  if (!blocks_.empty())
    text += ", " + std::to_string(blocks_.size()) + " x " + blocks_[0]->describe();
  return text + ", head " + head_->describe() + ")";
}

NamedTensors TensorParallelMlp::full_state_dict() const {
  NamedTensors out;
  out.emplace_back("input.weight", input_->weight().data().clone());
  out.emplace_back("input.bias", input_->bias().data().clone());
  for (size_t k = 0; k < blocks_.size(); ++k) {
    const std::string p = "blocks." + std::to_string(k) + ".";
    out.emplace_back(p + "fc1.weight", blocks_[k]->fc1().full_weight());
    out.emplace_back(p + "fc1.bias", blocks_[k]->fc1().full_bias());
    out.emplace_back(p + "fc2.weight", blocks_[k]->fc2().full_weight());
    out.emplace_back(p + "fc2.bias", blocks_[k]->fc2().full_bias());
  }
  out.emplace_back("head.weight", head_->full_weight());
  out.emplace_back("head.bias", head_->full_bias());
  return out;
}

Tensor TensorParallelMlp::full_logits(const Tensor& x) {
  NoGradGuard no_grad;
  const Tensor padded = all_gather_columns(forward(Variable(x)).data(), tp_);
  return column_slice(padded, 0, shape_.classes);
}

}  // namespace course
