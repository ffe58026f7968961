// tensor.cpp: see tensor.h. Storage, shapes, views and copies; the math is tensor_ops.cpp.
#include "tensor.h"

#include <atomic>
#include <sstream>

#include "error.h"

namespace course {

std::string shape_str(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

int64_t shape_numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw ConfigError("shape " + shape_str(shape) + " has a negative dimension");
    n *= d;
  }
  return n;
}

namespace {

std::atomic<int64_t> g_live_cpu_bytes{0};
std::atomic<int64_t> g_peak_cpu_bytes{0};

void count_cpu_bytes(Device device, int64_t floats) {
  if (device != Device::cpu) return;
  const int64_t now = g_live_cpu_bytes.fetch_add(floats * 4) + floats * 4;
  int64_t peak = g_peak_cpu_bytes.load();
  while (now > peak && !g_peak_cpu_bytes.compare_exchange_weak(peak, now)) {
  }
}

}  // namespace

Storage::Storage(Device device, int64_t count)
    : device_(device), count_(count), ptr_(kernels_for(device).allocate(count)) {
  count_cpu_bytes(device_, count_);
}

Storage::~Storage() {
  kernels_for(device_).deallocate(ptr_);
  count_cpu_bytes(device_, -count_);
}

void Storage::resize(int64_t count) {
  if (count < 0) throw ConfigError("Storage::resize to " + std::to_string(count) + " floats");
  if (count == count_) return;
  const Kernels& kernels = kernels_for(device_);
  kernels.deallocate(ptr_);
  ptr_ = nullptr;
  count_cpu_bytes(device_, -count_);
  count_ = 0;
  ptr_ = kernels.allocate(count);
  count_ = count;
  count_cpu_bytes(device_, count_);
}

int64_t Storage::live_cpu_bytes() {
  return g_live_cpu_bytes.load();
}

int64_t Storage::peak_cpu_bytes() {
  return g_peak_cpu_bytes.load();
}

void Storage::reset_peak_cpu_bytes() {
  g_peak_cpu_bytes.store(g_live_cpu_bytes.load());
}

void Storage::move_to(Device device) {
  if (device == device_) return;
  const Kernels& target = kernels_for(device);
  float* moved = target.allocate(count_);
  if (device_ == Device::cpu) {
    target.copy_from_host(moved, ptr_, count_);
  } else {
    kernels_for(device_).copy_to_host(moved, ptr_, count_);
  }
  kernels_for(device_).deallocate(ptr_);
  count_cpu_bytes(device_, -count_);
  ptr_ = moved;
  device_ = device;
  count_cpu_bytes(device_, count_);
}

Tensor Tensor::empty(const Shape& shape, Device device) {
  Tensor t;
  t.numel_ = shape_numel(shape);
  t.shape_ = shape;
  t.storage_ = std::make_shared<Storage>(device, t.numel_);
  return t;
}

Tensor Tensor::zeros(const Shape& shape, Device device) {
  return full(shape, 0.0f, device);
}

Tensor Tensor::full(const Shape& shape, float value, Device device) {
  Tensor t = empty(shape, device);
  kernels_for(device).fill(t.raw(), value, t.numel_);
  return t;
}

Tensor Tensor::from_vector(const Shape& shape, std::span<const float> values, Device device) {
  Tensor t = empty(shape, device);
  if (static_cast<int64_t>(values.size()) != t.numel_) {
    throw ConfigError("from_vector: shape " + shape_str(shape) + " holds " +
                      std::to_string(t.numel_) + " values, but " + std::to_string(values.size()) +
                      " were given");
  }
  kernels_for(device).copy_from_host(t.raw(), values.data(), t.numel_);
  return t;
}

Tensor Tensor::from_vector(const Shape& shape, std::initializer_list<float> values, Device device) {
  return from_vector(shape, std::span<const float>(values.begin(), values.size()), device);
}

Tensor Tensor::scalar(float value, Device device) {
  return full({}, value, device);
}

int64_t Tensor::size(int64_t d) const {
  const int64_t n = dim();
  const int64_t i = d < 0 ? d + n : d;
  if (i < 0 || i >= n) {
    throw ConfigError("size(" + std::to_string(d) + ") of a tensor of shape " + shape_str(shape_));
  }
  return shape_[i];
}

Device Tensor::device() const {
  if (!storage_) throw ConfigError("device() of an undefined tensor");
  return storage_->device();
}

float* Tensor::raw() const {
  if (!storage_) return nullptr;
  if (offset_ + numel_ > storage_->count()) {
    throw ConfigError("a tensor of shape " + shape_str(shape_) + " reaches element " +
                      std::to_string(offset_ + numel_) + " of a storage that holds " +
                      std::to_string(storage_->count()) +
                      " now: it was resized (FSDP frees gathered parameters after forward "
                      "and gathers them again before backward)");
  }
  return storage_->ptr() + offset_;
}

float* Tensor::data() const {
  if (!storage_) throw ConfigError("data() of an undefined tensor");
  if (storage_->device() != Device::cpu) {
    throw ConfigError("data() of a " + std::string(device_name(storage_->device())) +
                      " tensor: host code can only read CPU tensors; use to(Device::cpu)");
  }
  return raw();
}

std::span<float> Tensor::span() const {
  return {data(), static_cast<size_t>(numel_)};
}

std::span<float> Tensor::device_span() const {
  if (!storage_) throw ConfigError("device_span() of an undefined tensor");
  return {raw(), static_cast<size_t>(numel_)};
}

void Tensor::resize_storage(int64_t count) const {
  if (!storage_) throw ConfigError("resize_storage() of an undefined tensor");
  storage_->resize(count);
}

void Tensor::move_to_(Device device) const {
  if (!storage_) throw ConfigError("move_to_() of an undefined tensor");
  storage_->move_to(device);
}

float Tensor::item() const {
  if (numel_ != 1) {
    throw ConfigError("item() needs exactly one element, not the " + std::to_string(numel_) +
                      " of a tensor of shape " + shape_str(shape_));
  }
  float value = 0;
  kernels_for(device()).copy_to_host(&value, raw(), 1);
  return value;
}

std::vector<float> Tensor::to_vector() const {
  if (!storage_) throw ConfigError("to_vector() of an undefined tensor");
  std::vector<float> out(static_cast<size_t>(numel_));
  kernels_for(device()).copy_to_host(out.data(), raw(), numel_);
  return out;
}

Tensor Tensor::to(Device target) const {
  const Device here = device();
  Tensor t = empty(shape_, target);
  if (here == target) {
    kernels_for(here).copy(t.raw(), raw(), numel_);
  } else if (here == Device::cpu) {
    kernels_for(target).copy_from_host(t.raw(), raw(), numel_);
  } else if (target == Device::cpu) {
    kernels_for(here).copy_to_host(t.raw(), raw(), numel_);
  } else {
    return to(Device::cpu).to(target);
  }
  return t;
}

Tensor Tensor::clone() const {
  return to(device());
}

Tensor Tensor::reshape(const Shape& shape) const {
  if (!storage_) throw ConfigError("reshape() of an undefined tensor");
  Shape resolved = shape;
  int64_t known = 1;
  int inferred = -1;
  for (size_t i = 0; i < resolved.size(); ++i) {
    if (resolved[i] == -1 && inferred < 0) {
      inferred = static_cast<int>(i);
    } else if (resolved[i] < 0) {
      throw ConfigError("reshape to " + shape_str(shape) + ": bad dimension");
    } else {
      known *= resolved[i];
    }
  }
  if (inferred >= 0) resolved[inferred] = known == 0 ? 0 : numel_ / known;
  if (shape_numel(resolved) != numel_) {
    throw ConfigError("cannot reshape " + shape_str(shape_) + " (" + std::to_string(numel_) +
                      " elements) to " + shape_str(shape));
  }
  Tensor view = *this;
  view.shape_ = std::move(resolved);
  return view;
}

Tensor Tensor::rows(int64_t begin, int64_t count) const {
  if (dim() < 1) throw ConfigError("rows() of a tensor of shape " + shape_str(shape_));
  if (begin < 0 || count < 0 || begin + count > shape_[0]) {
    throw ConfigError("rows(" + std::to_string(begin) + ", " + std::to_string(count) +
                      ") is outside a tensor of shape " + shape_str(shape_));
  }
  const int64_t row = shape_[0] == 0 ? 0 : numel_ / shape_[0];
  Tensor view = *this;
  view.shape_[0] = count;
  view.offset_ = offset_ + begin * row;
  view.numel_ = count * row;
  return view;
}

std::string tensor_str(const Tensor& t, int max_values) {
  if (!t.defined()) return "Tensor(undefined)";
  std::ostringstream out;
  out << "Tensor" << shape_str(t.shape()) << " " << device_name(t.device()) << " {";
  const std::vector<float> values = t.to_vector();
  for (size_t i = 0; i < values.size() && static_cast<int>(i) < max_values; ++i) {
    out << (i ? ", " : "") << values[i];
  }
  if (static_cast<int>(values.size()) > max_values) out << ", ...";
  out << "}";
  return out.str();
}

}  // namespace course
