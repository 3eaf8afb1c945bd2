#pragma once
// A KernelExecution for running one kernel outside a session, serially: tests that ask a kernel
// (or a kernel's loop) which path ran or what it kept.
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "onnx_light/runtime/kernel.h"
#include "onnx_light/runtime/tensor.h"

namespace onnx_light::test {

// `threads` is what the kernel is told it may use; parallel_for runs every region as one block on
// the calling thread. Output 0 is kept as y().
class DirectExecution final : public runtime::KernelExecution {
 public:
  DirectExecution(std::vector<const runtime::Tensor*> inputs, int threads)
      : inputs_(std::move(inputs)), threads_(threads) {}
  std::size_t input_count() const override { return inputs_.size(); }
  const runtime::Tensor* input(std::size_t index) const override {
    return index < inputs_.size() ? inputs_[index] : nullptr;
  }
  std::size_t output_count() const override { return 1; }
  runtime::Tensor& output(std::size_t, runtime::ElementType type, const runtime::Shape& shape) override {
    y_ = runtime::Tensor(type, shape);
    return y_;
  }
  int threads() const override { return threads_; }
  int parallel_for(int64_t n, int64_t, int, runtime::FunctionRef<void(int64_t, int64_t)> fn) override {
    if (n > 0) fn(0, n);
    return 1;
  }
  const std::string& label() const override { return label_; }
  const runtime::Tensor& y() const { return y_; }

 private:
  std::vector<const runtime::Tensor*> inputs_;
  int threads_;
  runtime::Tensor y_;
  std::string label_ = "Conv node 'c'";
};

}  // namespace onnx_light::test
