// tensor.h: a dense float32 array with a shape, on the CPU or a CUDA device.
//
//   Tensor x = Tensor::from_vector({2, 3}, {1, 2, 3, 4, 5, 6});
//   Tensor y = matmul(x, x, /*trans_a=*/false, /*trans_b=*/true);   // tensor_ops.h
//   float* p = y.data();                                             // CPU only
//
// A Tensor is a handle, like at::Tensor: copying one copies the handle, and both copies
// see the same numbers. clone() makes an independent copy. `const` protects the handle
// (its shape and which storage it points to), not the numbers: data() of a const Tensor
// is still writable, as data_ptr() is in PyTorch.
//
// Invariants:
//   1. Every tensor is contiguous and row-major: element (i, j, k) of a [I, J, K] tensor
//      is data()[(i * J + j) * K + k]. There are no strides; transposing copies.
//   2. A view (reshape, rows) shares its storage and starts at an offset into it.
//   3. numel() is the product of the shape; a tensor of shape {} (a scalar) has one element.
//   4. A default-constructed tensor is undefined (defined() is false) and has no storage.
//
// What this is not: an autograd tensor. Lesson 06's Variable wraps a Tensor and records
// the graph; Tensor itself only holds numbers.
//
// Thread safety: handles may be copied and destroyed from any thread (the storage is
// reference counted). Writing the same numbers from two threads at once is a data race,
// as with any array.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "tensor_kernels.h"

namespace course {

using Shape = std::vector<int64_t>;

/// "[128, 784]".
std::string shape_str(const Shape& shape);
/// The product of the dimensions (1 for {}). Throws ConfigError on a negative dimension.
int64_t shape_numel(const Shape& shape);

/// A block of device memory; frees itself through its device's kernels.
class Storage {
 public:
  /// Allocates `count` floats on `device` (uninitialised).
  Storage(Device device, int64_t count);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  /// The first float (may be nullptr when count is 0).
  float* ptr() const { return ptr_; }
  /// The number of floats.
  int64_t count() const { return count_; }
  /// Where the floats live.
  Device device() const { return device_; }
  /// Moves the floats to `device` in place (allocate there, copy, free here): every tensor
  /// sharing this storage follows. A no-op when already there.
  void move_to(Device device);
  /// Frees the floats and allocates `count` new, uninitialised ones in place: every tensor
  /// sharing this storage follows (torch's untyped_storage().resize_()). FSDP frees a
  /// unit's gathered parameters with resize(0) after forward, while the autograd graph
  /// still holds views of them, and refills them (resize, then all-gather) before
  /// backward. A tensor that reaches past count() throws when its numbers are read.
  void resize(int64_t count);

  /// Bytes held by every Storage of this process on the CPU now.
  static int64_t live_cpu_bytes();
  /// The most live_cpu_bytes() has been since the last reset_peak_cpu_bytes() (what
  /// lesson 13 measures a step's peak with).
  static int64_t peak_cpu_bytes();
  /// Starts a new peak from what is live now.
  static void reset_peak_cpu_bytes();

 private:
  Device device_;
  int64_t count_;
  float* ptr_;
};

/// A dense float32 array on the CPU or a GPU (see the top of this file).
class Tensor {
 public:
  /// An undefined tensor.
  Tensor() = default;

  /// Uninitialised numbers.
  static Tensor empty(const Shape& shape, Device device = Device::cpu);
  /// All zeros.
  static Tensor zeros(const Shape& shape, Device device = Device::cpu);
  /// Every element `value`.
  static Tensor full(const Shape& shape, float value, Device device = Device::cpu);
  /// REQUIRES: values.size() == shape_numel(shape) (ConfigError otherwise).
  static Tensor from_vector(const Shape& shape, std::span<const float> values,
                            Device device = Device::cpu);
  /// As above, from a brace list: from_vector({2}, {1.0f, 2.0f}).
  static Tensor from_vector(const Shape& shape, std::initializer_list<float> values,
                            Device device = Device::cpu);
  /// A scalar (shape {}).
  static Tensor scalar(float value, Device device = Device::cpu);

  /// False for a default-constructed (undefined) tensor.
  bool defined() const { return storage_ != nullptr; }
  /// The dimensions, outermost first.
  const Shape& shape() const { return shape_; }
  /// The number of dimensions (0 for a scalar).
  int64_t dim() const { return static_cast<int64_t>(shape_.size()); }
  /// The size of dimension d; negative d counts from the end (-1 is the last).
  int64_t size(int64_t d) const;
  /// The number of elements (1 for a scalar).
  int64_t numel() const { return numel_; }
  /// Where the elements live.
  Device device() const;

  /// The first element, for CPU tensors. Throws ConfigError for a CUDA tensor (use
  /// to_vector() or to(Device::cpu)) or an undefined one.
  float* data() const;
  /// The same as data(), for kernels: any device, no check.
  float* raw() const;
  /// data() as a span of numel() floats.
  std::span<float> span() const;
  /// raw() as a span of numel() floats, on any device: what a process group takes (a CUDA
  /// tensor's span is device memory, for the nccl backend; never dereference it on the host).
  std::span<float> device_span() const;

  /// The only element. REQUIRES: numel() == 1. Copies from the device if needed.
  float item() const;
  /// All elements, copied to the host.
  std::vector<float> to_vector() const;

  /// A copy on `device` (a copy even when already there).
  Tensor to(Device device) const;
  /// An independent copy on the same device.
  Tensor clone() const;
  /// Moves this tensor's whole storage to `device`, in place: every handle and view that
  /// shares it follows (torch's module.to(device) on parameters). For moving a model's
  /// parameters and buffers before training; never while another thread uses the storage.
  void move_to_(Device device) const;
  /// Resizes the storage this tensor views, in place (Storage::resize): `count` new,
  /// uninitialised floats, and every tensor sharing the storage follows. FSDP frees a
  /// gathered unit with resize_storage(0) and refills it before backward.
  void resize_storage(int64_t count) const;
  /// A view with another shape and the same numel(); one dimension may be -1 (inferred).
  Tensor reshape(const Shape& shape) const;
  /// A view of rows [begin, begin + count) along dimension 0 (torch's narrow(0, ...)).
  Tensor rows(int64_t begin, int64_t count) const;

  /// True when this is the only handle on its storage (nothing else can see the numbers).
  bool is_unique() const { return storage_.use_count() == 1; }
  /// True when both handles point into the same storage.
  bool shares_storage_with(const Tensor& other) const { return storage_ == other.storage_; }

 private:
  std::shared_ptr<Storage> storage_;
  int64_t offset_ = 0;
  int64_t numel_ = 0;
  Shape shape_;
};

/// "Tensor[2, 3] cpu {1, 2, 3, 4, 5, 6}" (at most `max_values` numbers shown).
std::string tensor_str(const Tensor& t, int max_values = 8);

}  // namespace course
