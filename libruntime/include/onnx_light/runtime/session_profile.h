#pragma once
// What a profiling session (RuntimeSessionOptions::profile) measured: per node and per op type
// times, the implementation that actually ran, the parallel regions each node opened, and the
// timeline as Chrome trace events (the format Perfetto and chrome://tracing open, and the one
// ONNX Runtime's profiler writes). Plain data: formatting is left to the caller.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "onnx_light/runtime/hardware_counters.h"
#include "onnx_light/runtime/tensor.h"

namespace onnx_light::runtime {

// One counter's total for a node ("task_clock_ns": 812345).
struct CounterReading {
  std::string name;
  uint64_t value = 0;
};

// One step of the session's run loop: a graph node, or a node with the Relu fused into it.
struct NodeProfile {
  std::string node;     // ONNX node name, "#<index>" when unnamed; fused: "mm + relu"
  std::string label;    // "MatMul node 'mm' + Relu node 'relu'", as in error messages
  std::string op_type;  // "Conv"; fused: "MatMul + Relu"
  std::string domain;   // "" is ai.onnx
  // What ran on the last call: Kernel::variant() when the kernel reported one, else the
  // implementation of the kernel definition the session chose ("avx512", "portable").
  std::string implementation;
  std::vector<std::optional<Shape>> input_shapes;  // of the last call; nullopt: an omitted input
  uint64_t calls = 0;
  double total_us = 0;
  double mean_us = 0;
  double share = 0;  // of the time spent in all nodes (shares sum to 1)
  uint64_t parallel_regions = 0;  // regions the node opened through the session's pool
  uint64_t parallel_threads = 0;  // participants admitted, summed over those regions
  // The largest work the node's last call compared with its parallel threshold, in that
  // threshold's unit (elements, rows or multiply-accumulates); -1 when it compared none.
  int64_t threshold_work = -1;
  // Set for a node of a control-flow node's graph: that graph's name ("Loop node 'l' body"). Its
  // time is also in the enclosing node's, so op_types and the shares of the session's own nodes
  // leave it out; its share is of the same total.
  std::string parent;
  // With RuntimeSessionOptions::profile_counters: the available counters (SessionProfile::counters)
  // summed over the calls: the calling thread over the node, each pool worker over the node's
  // parallel blocks it ran (not its idle spinning). Empty otherwise.
  std::vector<CounterReading> counters;
};

struct OpTypeProfile {
  std::string op_type;
  uint64_t nodes = 0;
  uint64_t calls = 0;
  double total_us = 0;
  double share = 0;
};

// A Chrome trace "complete" event. Times are microseconds since profiling started (or since the
// last reset_profile()).
struct TraceEvent {
  enum class Kind : uint8_t {
    node,    // one node's call, on the calling thread (tid 0)
    // A parallel region a node opened, on the calling thread, and each of its blocks on the thread
    // that ran it (tid = its pool thread index). A region that ran as one block on the caller is
    // counted in NodeProfile::parallel_regions but has no events: its time is the node's.
    region,
    block,
  };
  Kind kind = Kind::node;
  std::size_t node = 0;  // index into SessionProfile::nodes
  uint64_t run = 0;      // 0-based run number
  int tid = 0;
  int threads = 0;  // region: participants admitted
  double ts_us = 0;
  double dur_us = 0;
};

struct SessionProfile {
  std::vector<NodeProfile> nodes;       // by total time, longest first
  std::vector<OpTypeProfile> op_types;  // by total time, longest first
  uint64_t runs = 0;                    // completed runs
  double total_us = 0;                  // wall time of those runs' node loops, summed
  double nodes_us = 0;                  // time inside nodes, summed (<= total_us)
  // Ordered by ts_us. Memory is bounded: past the session's capacity events are counted, not kept.
  std::vector<TraceEvent> events;
  uint64_t dropped_events = 0;
  // With RuntimeSessionOptions::profile_counters: every counter, available or not and why (empty
  // when counters were not asked for).
  std::vector<CounterStatus> counters;
};

// "1x3x48x192, 16x3x3x3, -": an omitted input is "-", a rank-0 one "scalar".
std::string format_input_shapes(const std::vector<std::optional<Shape>>& shapes);

// The profile as the JSON object of `onnx-light-tune run --profile --json` "profile" and Python's
// session.profile(): {"nodes": [...], "op_types": [...], "runs", "total_us", "nodes_us"}; with
// counters, each node has "counters": {name: value} and the object "counters": [{"name",
// "available", "user_space_only", "reason"}].
std::string profile_json(const SessionProfile& profile);

// Writes `profile.events` as Chrome trace-event JSON: {"traceEvents": [...]} of "ph": "X" events
// (name = node, cat = op type, args: implementation, input shapes of the node's last call), plus
// thread-name metadata. Throws IoError when `path` cannot be written.
void write_chrome_trace(const SessionProfile& profile, std::ostream& out);
void write_chrome_trace(const SessionProfile& profile, const std::filesystem::path& path);

}  // namespace onnx_light::runtime
