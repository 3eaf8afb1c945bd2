#pragma once
// A dense tensor: element type, shape and 64-byte aligned storage that is either owned
// (shared, reference counted) or borrowed from the caller (a view that must outlive uses).
//
// Ownership is a field, never inferred: a tensor is `empty` (no type, no shape, no data),
// `owned` (it holds a reference to its storage; copies share it) or `borrowed` (caller memory).
// A moved-from tensor is empty, so it can never pass for a live view of memory it lost.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "onnx_light/runtime/element_type.h"

namespace onnx_light::runtime {

using Shape = std::vector<int64_t>;

inline constexpr std::size_t kTensorAlignment = 64;

enum class TensorOwnership { empty, owned, borrowed };

// Number of elements of a shape; throws InvalidValueError on negative dims or overflow.
int64_t shape_element_count(std::span<const int64_t> shape);
// "[2, 3, 4]".
std::string shape_to_string(std::span<const int64_t> shape);

class Tensor {
 public:
  Tensor() = default;
  Tensor(const Tensor&) = default;
  Tensor& operator=(const Tensor&) = default;
  // Moves leave `other` empty (the default move would leave it a dangling "view").
  Tensor(Tensor&& other) noexcept;
  Tensor& operator=(Tensor&& other) noexcept;
  ~Tensor() = default;
  // Owned, zero-initialised storage.
  Tensor(ElementType type, Shape shape);
  // A view of caller memory; the caller keeps it alive and aligned for the element type.
  static Tensor borrow(ElementType type, Shape shape, void* data);
  // Owned storage supplied by an allocator (a buffer pool): `capacity` bytes, kTensorAlignment
  // aligned, contents as they are. Throws InvalidValueError when it is too small or misaligned.
  static Tensor adopt(ElementType type, Shape shape, std::shared_ptr<std::byte> storage, std::size_t capacity);
  // The same in place: this tensor's shape vector keeps its capacity, so assigning a shape of no
  // greater rank allocates nothing (a session slot taking a recycled block every run).
  void assign_adopted(ElementType type, const Shape& shape, std::shared_ptr<std::byte> storage, std::size_t capacity);
  // The bytes an owned tensor of `type` and `shape` occupies: its size rounded up to whole
  // kTensorAlignment blocks, at least one. Throws like the constructor.
  static std::size_t storage_bytes(ElementType type, const Shape& shape);
  // Owned copy of raw little-endian bytes (size must match).
  static Tensor from_bytes(ElementType type, Shape shape, std::span<const std::byte> bytes);

  ElementType element_type() const { return type_; }
  const Shape& shape() const { return shape_; }
  std::size_t rank() const { return shape_.size(); }
  int64_t element_count() const { return count_; }
  std::size_t byte_size() const { return static_cast<std::size_t>(count_) * element_size(type_); }
  TensorOwnership ownership() const { return ownership_; }
  bool empty() const { return ownership_ == TensorOwnership::empty; }
  bool is_view() const { return ownership_ == TensorOwnership::borrowed; }
  // True when this tensor's storage can be reused for a result without affecting anyone else.
  bool exclusively_owned() const { return ownership_ == TensorOwnership::owned && storage_.use_count() == 1; }

  void* raw_data() { return data_; }
  const void* raw_data() const { return data_; }
  std::span<const std::byte> bytes() const { return {static_cast<const std::byte*>(data_), byte_size()}; }
  std::span<std::byte> mutable_bytes() { return {static_cast<std::byte*>(data_), byte_size()}; }
  template <typename T>
  T* data() { return static_cast<T*>(data_); }
  template <typename T>
  const T* data() const { return static_cast<const T*>(data_); }

  // Becomes empty (no storage, undefined type) but keeps its shape's capacity, so that assigning
  // a tensor of no greater rank to it later allocates nothing (the session's input slots).
  void release() noexcept {
    ownership_ = TensorOwnership::empty;
    type_ = ElementType::undefined;
    shape_.clear();
    count_ = 0;
    storage_.reset();
    data_ = nullptr;
  }

  // Hands over the storage of an owned tensor (nullptr for a view or an empty tensor) and
  // becomes empty like release(): for an allocator that recycles storage with its control block.
  std::shared_ptr<std::byte> release_storage() noexcept {
    std::shared_ptr<std::byte> storage = ownership_ == TensorOwnership::owned ? std::move(storage_) : nullptr;
    release();
    return storage;
  }

  // Deep copy into owned storage.
  Tensor clone() const;
  // Same storage, new shape with the same element count.
  Tensor reshaped(Shape shape) const;
  // "float[2, 3]".
  std::string describe() const;

 private:
  ElementType type_ = ElementType::undefined;
  Shape shape_;
  int64_t count_ = 0;
  std::shared_ptr<std::byte> storage_;
  void* data_ = nullptr;
  TensorOwnership ownership_ = TensorOwnership::empty;
};

// True when the bytes of `a` and `b` share at least one address (empty data never overlaps).
bool overlaps(const Tensor& a, const Tensor& b);

// Byte-for-byte equality of type, shape and contents.
bool bitwise_equal(const Tensor& a, const Tensor& b);

}  // namespace onnx_light::runtime
