#include "onnx_light/runtime/session_profile.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "onnx_light/runtime/error.h"
#include "session_profiler.h"

namespace onnx_light::runtime {

SessionProfiler::SessionProfiler(std::vector<Step> steps, std::size_t event_capacity)
    : capacity_(event_capacity), events_(std::make_unique<RawEvent[]>(event_capacity)), origin_ns_(now_ns()) {
  steps_.reserve(steps.size());
  for (auto& step : steps) {
    Accumulator a;
    a.info = std::move(step);
    steps_.push_back(std::move(a));
  }
}

void SessionProfiler::push(const RawEvent& event) {
  const uint64_t index = next_event_.fetch_add(1, std::memory_order_relaxed);
  if (index >= capacity_) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  events_[index] = event;
}

void SessionProfiler::enable_counters(const std::vector<int>& worker_tids, CounterOpener opener) {
  if (counting_) return;
  counting_ = true;
  opener_ = std::move(opener);
  worker_counters_.reserve(worker_tids.size());
  for (int tid : worker_tids) worker_counters_.emplace_back(tid, opener_);
  worker_counts_ = std::make_unique<std::atomic<uint64_t>[]>(steps_.size() * kCounterCount);
  for (std::size_t i = 0; i < steps_.size() * kCounterCount; ++i) worker_counts_[i].store(0, std::memory_order_relaxed);
}

void SessionProfiler::read_worker_counters(int tid, CounterValues& out) const {
  out.fill(0);
  if (tid >= 1 && static_cast<std::size_t>(tid) <= worker_counters_.size())
    worker_counters_[static_cast<std::size_t>(tid) - 1].add_to(out);
}

void SessionProfiler::add_worker_block(std::size_t step, int tid, const CounterValues& before) {
  CounterValues after{};
  read_worker_counters(tid, after);
  for (std::size_t c = 0; c < kCounterCount; ++c)
    worker_counts_[step * kCounterCount + c].fetch_add(after[c] - before[c], std::memory_order_relaxed);
}

void SessionProfiler::begin_run() {
  if (counting_) {
    // The thread running the session may change between runs (Python threads, a server's pool).
    const int tid = current_thread_id();
    caller_ = nullptr;
    for (const auto& c : caller_counters_)
      if (c.tid() == tid) caller_ = &c;
    if (caller_ == nullptr) {
      caller_counters_.emplace_back(tid, opener_);
      caller_ = &caller_counters_.back();
      // The caller's counters decide what is reported: every run has one.
      if (counter_status_.empty()) counter_status_ = caller_->status();
    }
  }
  run_begin_ns_ = now_ns();
}

void SessionProfiler::read_caller_counters(CounterValues& out) const {
  out.fill(0);
  if (caller_ != nullptr) caller_->add_to(out);
}

void SessionProfiler::end_run() {
  runs_ns_ += now_ns() - run_begin_ns_;
  ++runs_;
}

int64_t SessionProfiler::begin_step(std::size_t step, const KernelExecution& execution) {
  // Assigning over last call's shapes reuses their storage: nothing allocated in the steady state.
  std::vector<std::optional<Shape>>& shapes = steps_[step].input_shapes;
  shapes.resize(execution.input_count());
  steps_[step].threshold_work = -1;
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    const Tensor* input = execution.input(k);
    if (input == nullptr)
      shapes[k].reset();
    else
      shapes[k] = input->shape();
  }
  if (counting_) read_caller_counters(step_begin_counters_);
  return now_ns();
}

void SessionProfiler::end_step(std::size_t step, int64_t begin_ns, std::string_view variant) {
  const int64_t end_ns = now_ns();
  Accumulator& a = steps_[step];
  if (counting_) {
    CounterValues end{};
    read_caller_counters(end);
    for (std::size_t c = 0; c < kCounterCount; ++c) a.counters[c] += end[c] - step_begin_counters_[c];
  }
  ++a.calls;
  a.total_ns += end_ns - begin_ns;
  if (variant != a.variant) a.variant.assign(variant);  // same text as last call: no copy
  push(RawEvent{TraceEvent::Kind::node, 0, 0, static_cast<uint32_t>(step), runs_, begin_ns, end_ns});
}

void SessionProfiler::record_region(std::size_t step, int admitted, int64_t begin_ns, int64_t end_ns) {
  count_region(step, admitted);
  push(RawEvent{TraceEvent::Kind::region, 0, admitted, static_cast<uint32_t>(step), runs_, begin_ns, end_ns});
}

void SessionProfiler::record_block(std::size_t step, int tid, int64_t begin_ns, int64_t end_ns) {
  push(RawEvent{TraceEvent::Kind::block, tid, 1, static_cast<uint32_t>(step), runs_, begin_ns, end_ns});
}

void SessionProfiler::reset() {
  for (auto& a : steps_) {
    a.calls = 0;
    a.total_ns = 0;
    a.regions = 0;
    a.threads = 0;
    a.variant.clear();
    a.input_shapes.clear();
    a.threshold_work = -1;
    a.counters.fill(0);
  }
  if (worker_counts_)
    for (std::size_t i = 0; i < steps_.size() * kCounterCount; ++i) worker_counts_[i].store(0, std::memory_order_relaxed);
  next_event_.store(0, std::memory_order_relaxed);
  dropped_.store(0, std::memory_order_relaxed);
  runs_ = 0;
  runs_ns_ = 0;
  origin_ns_ = now_ns();
}

SessionProfile SessionProfiler::profile() const {
  SessionProfile p;
  p.runs = runs_;
  p.total_us = static_cast<double>(runs_ns_) / 1000.0;
  int64_t nodes_ns = 0;
  for (const auto& a : steps_) nodes_ns += a.total_ns;
  p.nodes_us = static_cast<double>(nodes_ns) / 1000.0;

  // Steps by total time, longest first; equal times keep the run order.
  std::vector<std::size_t> order(steps_.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return steps_[a].total_ns > steps_[b].total_ns; });
  std::vector<std::size_t> position(steps_.size());
  for (std::size_t i = 0; i < order.size(); ++i) {
    const Accumulator& a = steps_[order[i]];
    position[order[i]] = i;
    NodeProfile n;
    n.node = a.info.node;
    n.label = a.info.label;
    n.op_type = a.info.op_type;
    n.domain = a.info.domain;
    n.implementation = a.variant.empty() ? a.info.implementation : a.variant;
    n.input_shapes = a.input_shapes;
    n.calls = a.calls;
    n.total_us = static_cast<double>(a.total_ns) / 1000.0;
    n.mean_us = a.calls == 0 ? 0.0 : n.total_us / static_cast<double>(a.calls);
    n.share = nodes_ns == 0 ? 0.0 : static_cast<double>(a.total_ns) / static_cast<double>(nodes_ns);
    n.parallel_regions = a.regions;
    n.parallel_threads = a.threads;
    n.threshold_work = a.threshold_work;
    for (const auto& status : counter_status_) {
      if (!status.available) continue;
      const auto c = static_cast<std::size_t>(status.counter);
      const uint64_t workers = worker_counts_ ? worker_counts_[order[i] * kCounterCount + c].load(std::memory_order_relaxed) : 0;
      n.counters.push_back(CounterReading{status.name, a.counters[c] + workers});
    }
    p.nodes.push_back(std::move(n));
  }

  std::map<std::string, OpTypeProfile> by_type;
  for (const auto& n : p.nodes) {
    OpTypeProfile& t = by_type[n.op_type];
    t.op_type = n.op_type;
    ++t.nodes;
    t.calls += n.calls;
    t.total_us += n.total_us;
    t.share += n.share;
  }
  for (auto& [_, t] : by_type) p.op_types.push_back(std::move(t));
  std::stable_sort(p.op_types.begin(), p.op_types.end(),
                   [](const OpTypeProfile& a, const OpTypeProfile& b) { return a.total_us > b.total_us; });

  const auto kept = static_cast<std::size_t>(std::min<uint64_t>(next_event_.load(std::memory_order_acquire), capacity_));
  p.events.reserve(kept);
  for (std::size_t i = 0; i < kept; ++i) {
    const RawEvent& e = events_[i];
    TraceEvent t;
    t.kind = e.kind;
    t.node = position[e.step];
    t.run = e.run;
    t.tid = e.tid;
    t.threads = e.threads;
    t.ts_us = static_cast<double>(e.begin_ns - origin_ns_) / 1000.0;
    t.dur_us = static_cast<double>(std::max<int64_t>(e.end_ns - e.begin_ns, 0)) / 1000.0;
    p.events.push_back(t);
  }
  // Blocks are recorded when they end, regions and nodes after their blocks: order by start, and
  // an enclosing event before the events it contains.
  std::stable_sort(p.events.begin(), p.events.end(), [](const TraceEvent& a, const TraceEvent& b) {
    if (a.ts_us != b.ts_us) return a.ts_us < b.ts_us;
    return a.kind < b.kind;
  });
  p.dropped_events = dropped_.load(std::memory_order_relaxed);
  p.counters = counter_status_;
  if (counting_ && p.counters.empty()) p.counters = ThreadCounters(current_thread_id(), opener_).status();  // no run yet
  return p;
}

namespace {

// JSON string contents: quotes, backslashes and control characters escaped; other bytes as they are.
std::string json_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      out += fmt::format("\\u{:04x}", u);
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace

std::string format_input_shapes(const std::vector<std::optional<Shape>>& shapes) {
  std::string text;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    if (i > 0) text += ", ";
    if (!shapes[i])
      text += "-";
    else if (shapes[i]->empty())
      text += "scalar";
    else
      text += fmt::format("{}", fmt::join(*shapes[i], "x"));
  }
  return text;
}

std::string profile_json(const SessionProfile& profile) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const auto& n : profile.nodes) {
    nlohmann::json shapes = nlohmann::json::array();
    for (const auto& shape : n.input_shapes) shapes.push_back(shape ? nlohmann::json(*shape) : nlohmann::json(nullptr));
    nlohmann::json node_json = {{"node", n.node},
                     {"label", n.label},
                     {"op_type", n.op_type},
                     {"domain", n.domain},
                     {"implementation", n.implementation},
                     {"input_shapes", shapes},
                     {"calls", n.calls},
                     {"total_us", n.total_us},
                     {"mean_us", n.mean_us},
                     {"share", n.share},
                     {"parallel_regions", n.parallel_regions},
                     {"parallel_threads", n.parallel_threads},
                     {"threshold_work", n.threshold_work},
                     {"parent", n.parent.empty() ? nlohmann::json(nullptr) : nlohmann::json(n.parent)}};
    if (!profile.counters.empty()) {
      nlohmann::json counters = nlohmann::json::object();
      for (const auto& c : n.counters) counters[c.name] = c.value;
      node_json["counters"] = counters;
    }
    nodes.push_back(std::move(node_json));
  }
  nlohmann::json op_types = nlohmann::json::array();
  for (const auto& t : profile.op_types)
    op_types.push_back(
        {{"op_type", t.op_type}, {"nodes", t.nodes}, {"calls", t.calls}, {"total_us", t.total_us}, {"share", t.share}});
  nlohmann::json json{{"nodes", nodes},
                      {"op_types", op_types},
                      {"runs", profile.runs},
                      {"total_us", profile.total_us},
                      {"nodes_us", profile.nodes_us}};
  if (!profile.counters.empty()) {
    nlohmann::json counters = nlohmann::json::array();
    for (const auto& c : profile.counters)
      counters.push_back({{"name", c.name},
                          {"available", c.available},
                          {"user_space_only", c.user_space_only},
                          {"reason", c.reason.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.reason)}});
    json["counters"] = counters;
  }
  return json.dump();
}

void write_chrome_trace(const SessionProfile& profile, std::ostream& out) {
  const int pid = static_cast<int>(::getpid());
  int max_tid = 0;
  for (const auto& e : profile.events) max_tid = std::max(max_tid, e.tid);
  out << "{\"traceEvents\": [\n";
  out << fmt::format(R"({{"name": "process_name", "ph": "M", "pid": {}, "tid": 0, "args": {{"name": "onnx-light"}}}})",
                     pid);
  for (int tid = 0; tid <= max_tid; ++tid)
    out << fmt::format(",\n{{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": {}, \"tid\": {}, \"args\": {{\"name\": \"{}\"}}}}",
                       pid, tid, tid == 0 ? std::string("caller") : fmt::format("worker {}", tid));
  for (const auto& e : profile.events) {
    const NodeProfile& node = profile.nodes[e.node];
    std::string name = json_escape(node.node);
    std::string cat;
    std::string args;
    switch (e.kind) {
      case TraceEvent::Kind::node:
        cat = json_escape(node.op_type);
        args = fmt::format(R"("op_type": "{}", "implementation": "{}", "input_shapes": "{}", "run": {})", cat,
                           json_escape(node.implementation), json_escape(format_input_shapes(node.input_shapes)), e.run);
        break;
      case TraceEvent::Kind::region:
        name += " parallel_for";
        cat = "parallel_region";
        args = fmt::format(R"("threads": {}, "run": {})", e.threads, e.run);
        break;
      case TraceEvent::Kind::block:
        name += " block";
        cat = "parallel_block";
        args = fmt::format(R"("run": {})", e.run);
        break;
    }
    out << fmt::format(
        ",\n{{\"name\": \"{}\", \"cat\": \"{}\", \"ph\": \"X\", \"ts\": {:.3f}, \"dur\": {:.3f}, \"pid\": {}, "
        "\"tid\": {}, \"args\": {{{}}}}}",
        name, cat, e.ts_us, e.dur_us, pid, e.tid, args);
  }
  out << fmt::format("\n], \"displayTimeUnit\": \"ms\", \"otherData\": {{\"runs\": {}, \"dropped_events\": {}}}}}\n",
                     profile.runs, profile.dropped_events);
}

void write_chrome_trace(const SessionProfile& profile, const std::filesystem::path& path) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) throw IoError(fmt::format("{}: cannot open the trace file for writing", path.string()));
  write_chrome_trace(profile, file);
  file.flush();
  if (!file) throw IoError(fmt::format("{}: cannot write the trace file", path.string()));
}

}  // namespace onnx_light::runtime
