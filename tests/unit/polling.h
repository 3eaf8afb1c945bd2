#pragma once
// Waiting in tests for something another thread does, without a fixed sleep.
#include <chrono>
#include <thread>

namespace onnx_light::test {

// Polls `condition` for up to two seconds (a loaded 2-vCPU VM can delay a worker's wake-up).
template <class Condition>
bool eventually(Condition condition) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return condition();
}

}  // namespace onnx_light::test
