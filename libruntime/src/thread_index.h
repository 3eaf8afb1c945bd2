#pragma once
// Which thread of a ThreadPool the caller is, for the thread ids of a profile's trace.

namespace onnx_light::runtime {

// 1..threads()-1 on a pool's worker thread, 0 on any other thread (a caller of parallel_for).
int current_pool_thread_index();

}  // namespace onnx_light::runtime
