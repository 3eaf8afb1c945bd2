#pragma once
// How much tensor memory a session may hold (RuntimeSessionOptions::max_memory_bytes).
#include <cstdint>
#include <string>

namespace onnx_light::runtime {

// Three quarters of physical memory, lowered to the process's RLIMIT_AS or RLIMIT_DATA where
// one is set: a model asking for more fails with an error naming the node instead of driving the
// machine into swap or the OOM killer. 1 GiB when physical memory cannot be read.
int64_t default_session_memory_limit();

// `bytes` for people: "512 B", "1.5 KiB", "3.2 GiB", "4.0 TiB" (binary units, one decimal).
std::string format_bytes(int64_t bytes);

}  // namespace onnx_light::runtime
