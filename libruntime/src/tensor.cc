#include "onnx_light/runtime/tensor.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <new>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "onnx_light/runtime/error.h"
#include "tensor_memory.h"

namespace onnx_light::runtime {
namespace {

struct BlockDelete {
  void operator()(std::byte* p) const noexcept { free_tensor_block(p); }
};

// Throws for types without a fixed byte size and for byte counts that do not fit in memory.
std::size_t checked_byte_size(ElementType type, const Shape& shape, int64_t count) {
  if (!is_fixed_size(type)) {
    throw InvalidValueError(fmt::format("cannot create a tensor of element type '{}' (number {}): only fixed-size "
                                        "numeric and bool types are held in tensors",
                                        element_type_name(type), static_cast<int32_t>(type)));
  }
  const std::size_t size = element_size(type);
  constexpr auto kMaxBytes = static_cast<uint64_t>(std::numeric_limits<std::ptrdiff_t>::max());
  if (static_cast<uint64_t>(count) > (kMaxBytes - kTensorAlignment) / size) {
    throw InvalidValueError(fmt::format("tensor {}{} is too large to address ({} elements of {} bytes)",
                                        element_type_name(type), shape_to_string(shape), count, size));
  }
  return static_cast<std::size_t>(count) * size;
}

std::shared_ptr<std::byte> allocate_zeroed(std::size_t bytes) {
  // Round up to whole 64-byte blocks (at least one) so an empty tensor still has a unique
  // address and vector kernels may read a full block at the tail.
  const std::size_t padded = bytes == 0 ? kTensorAlignment : (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
  std::byte* p = allocate_tensor_block(padded);
  std::memset(p, 0, padded);
  return std::shared_ptr<std::byte>(p, BlockDelete{});
}

std::size_t natural_alignment(ElementType type) {
  // Complex numbers are pairs of their component type.
  if (type == ElementType::complex64) return 4;
  if (type == ElementType::complex128) return 8;
  return element_size(type);
}

}  // namespace

int64_t shape_element_count(std::span<const int64_t> shape) {
  bool has_zero = false;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0) {
      throw InvalidValueError(
          fmt::format("shape {}: dimension {} is negative ({})", shape_to_string(shape), i, shape[i]));
    }
    has_zero = has_zero || shape[i] == 0;
  }
  // Any zero dimension makes the tensor empty however large the other dimensions are (as in numpy).
  if (has_zero) return 0;
  int64_t count = 1;
  for (const int64_t dim : shape) {
    if (count > std::numeric_limits<int64_t>::max() / dim) {
      throw InvalidValueError(
          fmt::format("shape {}: the element count overflows 64 bits", shape_to_string(shape)));
    }
    count *= dim;
  }
  return count;
}

std::string shape_to_string(std::span<const int64_t> shape) { return fmt::format("[{}]", fmt::join(shape, ", ")); }

Tensor::Tensor(ElementType type, Shape shape) : type_(type), shape_(std::move(shape)) {
  count_ = shape_element_count(shape_);
  storage_ = allocate_zeroed(checked_byte_size(type_, shape_, count_));
  data_ = storage_.get();
  ownership_ = TensorOwnership::owned;
}

Tensor::Tensor(Tensor&& other) noexcept
    : type_(other.type_),
      shape_(std::move(other.shape_)),
      count_(other.count_),
      storage_(std::move(other.storage_)),
      data_(other.data_),
      ownership_(other.ownership_) {
  other.release();
}

Tensor& Tensor::operator=(Tensor&& other) noexcept {
  if (this == &other) return *this;
  type_ = other.type_;
  shape_ = std::move(other.shape_);
  count_ = other.count_;
  storage_ = std::move(other.storage_);
  data_ = other.data_;
  ownership_ = other.ownership_;
  other.release();
  return *this;
}

std::size_t Tensor::storage_bytes(ElementType type, const Shape& shape) {
  const std::size_t bytes = checked_byte_size(type, shape, shape_element_count(shape));
  return bytes == 0 ? kTensorAlignment : (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
}

void Tensor::assign_adopted(ElementType type, const Shape& shape, std::shared_ptr<std::byte> storage,
                            std::size_t capacity) {
  const std::size_t needed = storage_bytes(type, shape);
  if (!storage || capacity < needed || reinterpret_cast<std::uintptr_t>(storage.get()) % kTensorAlignment != 0)
    throw InvalidValueError(fmt::format("cannot adopt {} bytes at {} for a tensor {}{} of {} bytes (aligned to {})",
                                        capacity, static_cast<void*>(storage.get()), element_type_name(type),
                                        shape_to_string(shape), needed, kTensorAlignment));
  type_ = type;
  count_ = shape_element_count(shape);
  shape_.assign(shape.begin(), shape.end());
  storage_ = std::move(storage);
  data_ = storage_.get();
  ownership_ = TensorOwnership::owned;
}

Tensor Tensor::adopt(ElementType type, Shape shape, std::shared_ptr<std::byte> storage, std::size_t capacity) {
  const std::size_t needed = storage_bytes(type, shape);
  if (!storage || capacity < needed || reinterpret_cast<std::uintptr_t>(storage.get()) % kTensorAlignment != 0)
    throw InvalidValueError(fmt::format("cannot adopt {} bytes at {} for a tensor {}{} of {} bytes (aligned to {})",
                                        capacity, static_cast<void*>(storage.get()), element_type_name(type),
                                        shape_to_string(shape), needed, kTensorAlignment));
  Tensor t;
  t.type_ = type;
  t.count_ = shape_element_count(shape);
  t.shape_ = std::move(shape);
  t.storage_ = std::move(storage);
  t.data_ = t.storage_.get();
  t.ownership_ = TensorOwnership::owned;
  return t;
}

Tensor Tensor::borrow(ElementType type, Shape shape, void* data) {
  const int64_t count = shape_element_count(shape);
  checked_byte_size(type, shape, count);
  if (data == nullptr && count != 0) {
    throw InvalidValueError(fmt::format("cannot borrow a null pointer as a tensor {}{} of {} elements",
                                        element_type_name(type), shape_to_string(shape), count));
  }
  if (reinterpret_cast<std::uintptr_t>(data) % natural_alignment(type) != 0) {
    throw InvalidValueError(fmt::format("cannot borrow memory at {} as a tensor of '{}': it is not aligned to {} bytes",
                                        data, element_type_name(type), natural_alignment(type)));
  }
  Tensor view;
  view.type_ = type;
  view.shape_ = std::move(shape);
  view.count_ = count;
  view.data_ = data;
  view.ownership_ = TensorOwnership::borrowed;
  return view;
}

Tensor Tensor::from_bytes(ElementType type, Shape shape, std::span<const std::byte> bytes) {
  const int64_t count = shape_element_count(shape);
  const std::size_t expected = checked_byte_size(type, shape, count);
  if (bytes.size() != expected) {
    throw InvalidValueError(fmt::format("tensor {}{} needs {} bytes but {} were given", element_type_name(type),
                                        shape_to_string(shape), expected, bytes.size()));
  }
  Tensor tensor(type, std::move(shape));
  if (!bytes.empty()) std::memcpy(tensor.data_, bytes.data(), bytes.size());
  return tensor;
}

Tensor Tensor::clone() const {
  if (empty()) return {};
  return from_bytes(type_, shape_, bytes());
}

Tensor Tensor::reshaped(Shape shape) const {
  if (empty()) throw InvalidValueError("cannot reshape an empty (undefined) tensor");
  const int64_t count = shape_element_count(shape);
  if (count != count_) {
    throw InvalidValueError(fmt::format("cannot reshape {} ({} elements) to {} ({} elements)", describe(), count_,
                                        shape_to_string(shape), count));
  }
  Tensor result = *this;
  result.shape_ = std::move(shape);
  return result;
}

std::string Tensor::describe() const { return fmt::format("{}{}", element_type_name(type_), shape_to_string(shape_)); }

bool overlaps(const Tensor& a, const Tensor& b) {
  if (a.byte_size() == 0 || b.byte_size() == 0) return false;
  const auto a_begin = reinterpret_cast<std::uintptr_t>(a.raw_data());
  const auto b_begin = reinterpret_cast<std::uintptr_t>(b.raw_data());
  return a_begin < b_begin + b.byte_size() && b_begin < a_begin + a.byte_size();
}

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  if (a.element_type() != b.element_type() || a.shape() != b.shape()) return false;
  const auto x = a.bytes();
  const auto y = b.bytes();
  return x.size() == y.size() && (x.empty() || std::memcmp(x.data(), y.data(), x.size()) == 0);
}

}  // namespace onnx_light::runtime
