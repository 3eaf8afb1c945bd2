// `onnx-light-tune run MODEL`: runs a model once or repeatedly, prints its outputs, latency
// and (with --profile) the tuning values each kernel ran with, the parallel regions, and where
// the time went per node and per op type; --trace writes the timeline for Perfetto.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <ostream>
#include <random>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/npy.h"
#include "onnx_light/runtime/session.h"
#include "onnx_light/runtime/tensor_format.h"
#include "cli_common.h"
#include "cli_usage.h"
#include "onnx_light/tune/operations.h"
#include "run_inputs.h"
#include "verbs.h"

namespace onnx_light::cli {

namespace {

struct RunOptions {
  std::string model_path;
  std::vector<std::string> inputs;
  std::vector<std::string> dims;
  int threads = 0;
  int repeat = 1;
  int warmup = 0;
  std::string output_dir;
  bool profile = false;
  bool counters = false;
  int top = 20;
  std::string trace_path;
  bool json = false;
  std::string optimize = "all";
  bool allow_newer_opset = false;
  std::string max_memory;  // empty: the library's default
  PolicyFlags policy;
};

struct Latency {
  double min = 0, median = 0, p90 = 0;
  std::size_t runs = 0;
};

Latency summarize(std::vector<double> samples) {
  Latency l;
  l.runs = samples.size();
  if (samples.empty()) return l;
  std::sort(samples.begin(), samples.end());
  l.min = samples.front();
  l.median = samples.size() % 2 ? samples[samples.size() / 2]
                                : (samples[samples.size() / 2 - 1] + samples[samples.size() / 2]) / 2;
  std::size_t p90 = static_cast<std::size_t>(std::ceil(0.9 * static_cast<double>(samples.size()))) - 1;
  l.p90 = samples[std::min(p90, samples.size() - 1)];
  return l;
}

// `text` cut to `width` bytes (node names are mostly ASCII), on a UTF-8 character boundary,
// marking the cut.
std::string fit(const std::string& text, std::size_t width) {
  if (text.size() <= width) return text;
  std::size_t size = width - 3;
  while (size > 0 && (static_cast<unsigned char>(text[size]) & 0xC0u) == 0x80u) --size;
  return text.substr(0, size) + "...";
}

void print_profile(std::ostream& out, const runtime::SessionProfile& profile, int top) {
  const std::size_t shown = top == 0 ? profile.nodes.size() : std::min<std::size_t>(profile.nodes.size(), static_cast<std::size_t>(top));
  std::size_t name_width = 4;
  for (std::size_t i = 0; i < shown; ++i) name_width = std::max(name_width, profile.nodes[i].node.size());
  name_width = std::min<std::size_t>(name_width, 32);
  const double per_run = profile.runs == 0 ? 0.0 : profile.total_us / static_cast<double>(profile.runs);
  out << fmt::format("nodes ({} of {}, by time; {} run{}, {:.1f} us per run, {:.1f}% of it in nodes):\n", shown,
                     profile.nodes.size(), profile.runs, profile.runs == 1 ? "" : "s", per_run,
                     profile.total_us > 0 ? 100.0 * profile.nodes_us / profile.total_us : 0.0);
  out << fmt::format("  {:<{}} {:<14} {:<22} {:>6} {:>10} {:>9} {:>6} {:>7}  {}\n", "node", name_width, "op type",
                     "implementation", "calls", "total us", "mean us", "share", "regions", "input shapes");
  for (std::size_t i = 0; i < shown; ++i) {
    const auto& n = profile.nodes[i];
    const std::string regions = n.parallel_regions == 0 ? "-" : fmt::format("{}/{}", n.parallel_regions, n.parallel_threads);
    out << fmt::format("  {:<{}} {:<14} {:<22} {:>6} {:>10.1f} {:>9.2f} {:>5.1f}% {:>7}  {}\n", fit(n.node, name_width),
                       name_width, fit(n.op_type, 14), fit(n.implementation, 22), n.calls, n.total_us, n.mean_us,
                       100.0 * n.share, regions, runtime::format_input_shapes(n.input_shapes));
  }
  if (shown < profile.nodes.size())
    out << fmt::format("  ... {} more node{} (--top 0 shows all)\n", profile.nodes.size() - shown,
                       profile.nodes.size() - shown == 1 ? "" : "s");
  out << "op types (by time):\n";
  out << fmt::format("  {:<20} {:>6} {:>7} {:>10} {:>6}\n", "op type", "nodes", "calls", "total us", "share");
  for (const auto& t : profile.op_types)
    out << fmt::format("  {:<20} {:>6} {:>7} {:>10.1f} {:>5.1f}%\n", fit(t.op_type, 20), t.nodes, t.calls, t.total_us,
                       100.0 * t.share);
}

// The --counters table: the nodes of the --profile table, one column per available counter, then
// each counter the system refused and why.
void print_counters(std::ostream& out, const runtime::SessionProfile& profile, int top) {
  const std::size_t shown = top == 0 ? profile.nodes.size() : std::min<std::size_t>(profile.nodes.size(), static_cast<std::size_t>(top));
  std::vector<const runtime::CounterStatus*> available;
  for (const auto& c : profile.counters)
    if (c.available) available.push_back(&c);
  out << fmt::format("counters ({} of {} available; per node, summed over the timed runs: the calling thread, and "
                     "the pool's workers in the node's blocks):\n",
                     available.size(), profile.counters.size());
  if (!available.empty()) {
    std::size_t name_width = 4;
    for (std::size_t i = 0; i < shown; ++i) name_width = std::max(name_width, profile.nodes[i].node.size());
    name_width = std::min<std::size_t>(name_width, 32);
    out << fmt::format("  {:<{}}", "node", name_width);
    for (const auto* c : available) out << fmt::format(" {:>16}", c->name);
    out << "\n";
    for (std::size_t i = 0; i < shown; ++i) {
      const auto& n = profile.nodes[i];
      out << fmt::format("  {:<{}}", fit(n.node, name_width), name_width);
      for (const auto& reading : n.counters) out << fmt::format(" {:>16}", reading.value);
      out << "\n";
    }
  }
  for (const auto& c : profile.counters) {
    if (c.available && !c.user_space_only) continue;
    out << fmt::format("  {}: {}\n", c.name, c.available ? c.reason : "unavailable: " + c.reason);
  }
}

int run_verb(const RunOptions& o, AppContext& context) {
  using namespace runtime;
  Model model = load_model_file(o.model_path);
  // Sessions resolve tuning from the registry, so publish this host's cached profiles first.
  tune::LoadOptions load;
  load.path = context.cache_path;
  const RuntimeParameters parameters = o.policy.parameters(o.threads);
  load.num_threads = effective_threads(parameters);
  load.idle_spin = idle_workers_spin(parameters);
  // A run needs no cache: without any path to one (no HOME, no passwd entry) it runs on the
  // defaults.
  try {
    tune::LoadReport loaded = tune::load_kernel_tuning_cache(load, operation_context(context));
    for (const auto& d : loaded.diagnostics) spdlog::warn("{}", d.message);
    spdlog::info("tuning cache {}: {}, {} profile(s) published", loaded.path, tune::file_status_name(loaded.status),
                 loaded.published_profiles);
  } catch (const NotFoundError& e) {
    spdlog::warn("{}; running with the default tuning values", e.what());
  }
  RuntimeSessionOptions options;
  options.parameters = parameters;
  if (o.profile) options.parallel_region_collector = std::make_shared<ParallelRegionCollector>(4096);
  options.optimization = parse_optimization_level(o.optimize);
  options.allow_newer_opset = o.allow_newer_opset;
  if (!o.max_memory.empty())
    options.max_memory_bytes = std::get<int64_t>(parse_value(o.max_memory, ValueType::int64, "--max-memory"));
  options.profile = o.profile || !o.trace_path.empty();
  options.profile_counters = o.counters;
  RuntimeSession session(model, options);

  RuntimeContext run_context(KernelContext(default_opset(model.opset_version(""))));
  bind_cli_inputs(session, o.inputs, o.dims, run_context);
  const std::vector<std::string> input_names = run_context.names();

  for (int i = 0; i < o.warmup; ++i) session.run(run_context);
  if (options.parallel_region_collector) options.parallel_region_collector->clear();
  session.reset_profile();  // the timed runs only
  std::vector<double> samples;
  for (int i = 0; i < o.repeat; ++i) {
    auto start = std::chrono::steady_clock::now();
    session.run(run_context);
    samples.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count());
  }
  Latency latency = summarize(samples);

  if (!o.output_dir.empty()) {
    std::filesystem::create_directories(o.output_dir);
    for (const auto& info : session.outputs())
      write_npy(std::filesystem::path(o.output_dir) / (info.name + ".npy"), run_context.get(info.name));
  }

  ParallelRegionReport regions = session.parallel_region_report();
  std::vector<ResolvedTuning> tuning = session.resolved_tuning();
  const SessionProfile profile = session.profile();
  if (!o.trace_path.empty()) {
    write_chrome_trace(profile, std::filesystem::path(o.trace_path));
    spdlog::info("trace: {} ({} events, {} dropped)", o.trace_path, profile.events.size(), profile.dropped_events);
  }
  if (o.json) {
    nlohmann::json report;
    report["model"] = o.model_path;
    report["threads"] = session.threads();
    report["policy"] = policy_json(parameters);
    report["outputs"] = nlohmann::json::array();
    for (const auto& info : session.outputs()) {
      const Tensor& t = run_context.get(info.name);
      nlohmann::json preview = nlohmann::json::array();
      for (int64_t i = 0; i < std::min<int64_t>(t.element_count(), 8); ++i) preview.push_back(element_as_double(t, i));
      report["outputs"].push_back({{"name", info.name},
                                   {"element_type", static_cast<int>(t.element_type())},
                                   {"element_type_name", element_type_name(t.element_type())},
                                   {"shape", t.shape()},
                                   {"preview", preview}});
    }
    report["latency_us"] = {{"min", latency.min}, {"median", latency.median}, {"p90", latency.p90}, {"runs", latency.runs}};
    if (o.profile) {
      nlohmann::json events = nlohmann::json::array();
      for (const auto& e : regions.events)
        events.push_back({{"label", e.label},
                          {"requested_threads", e.requested_threads},
                          {"admitted_threads", e.admitted_threads},
                          {"iterations", e.iterations},
                          {"grain", e.grain},
                          {"wall_time_ns", e.wall_time_ns}});
      report["parallel_regions"] = {{"events", events}, {"dropped_events", regions.dropped_events}};
      nlohmann::json kernels = nlohmann::json::array();
      for (const auto& r : tuning) {
        nlohmann::json values = nlohmann::json::object();
        for (const auto& [parameter, value] : r.values)
          std::visit([&values, &name = parameter](const auto& v) { values[name] = v; }, value);
        kernels.push_back({{"node", r.node},
                           {"kernel", r.key.kernel},
                           {"implementation", r.key.implementation},
                           {"element_type", r.key.element_type},
                           {"tuning_abi", r.key.tuning_abi},
                           {"active_values", values},
                           {"active_source", tuning_source_name(r.source)}});
      }
      report["tuning"] = kernels;
      report["profile"] = nlohmann::json::parse(runtime::profile_json(profile));
      // The graph optimizer's transforms (profile.transforms).
      const OptimizationReport& opt = session.optimization_report();
      nlohmann::json transforms = nlohmann::json::array();
      for (const auto& t : opt.transforms)
        transforms.push_back({{"name", t.name}, {"applied", t.applied}, {"nodes_before", t.nodes_before},
                              {"nodes_after", t.nodes_after}});
      report["profile"]["optimization"] = {{"level", optimization_level_name(opt.level)},
                                           {"nodes_before", opt.nodes_before}, {"nodes_after", opt.nodes_after}};
      report["profile"]["transforms"] = transforms;
    }
    const SessionMemoryReport memory = session.memory_report();
    report["memory"] = {{"weights_bytes", memory.weights_bytes},
                        {"peak_activation_bytes", memory.peak_activation_bytes},
                        {"last_run_values_bytes", memory.last_run_values_bytes},
                        {"planned_releases", memory.planned_releases},
                        {"planned_in_place", memory.planned_in_place},
                        {"last_run_in_place", memory.last_run_in_place},
                        {"memory_limit_bytes", memory.memory_limit_bytes}};
    *context.out << report.dump(2) << "\n";
    return kExitOk;
  }

  auto& out = *context.out;
  out << fmt::format("model: {} ({} thread{})\n", o.model_path, session.threads(), session.threads() == 1 ? "" : "s");
  for (const auto& name : input_names)
    if (std::none_of(session.outputs().begin(), session.outputs().end(), [&](const auto& i) { return i.name == name; }))
      out << fmt::format("input  {}: {}\n", name, run_context.get(name).describe());
  for (const auto& info : session.outputs()) {
    const Tensor& t = run_context.get(info.name);
    out << fmt::format("output {}: {} = {}\n", info.name, t.describe(), format_preview(t));
  }
  out << fmt::format("latency: min {:.1f} us, median {:.1f} us, p90 {:.1f} us over {} run{}\n", latency.min,
                     latency.median, latency.p90, latency.runs, latency.runs == 1 ? "" : "s");
  if (o.profile) {
    out << fmt::format("policy: {}\n", policy_text(parameters));
    out << "tuning in force:\n";
    for (const auto& r : tuning) {
      std::string values;
      for (const auto& [name, value] : r.values) values += fmt::format("{}{}={}", values.empty() ? "" : " ", name, format_value(value));
      out << fmt::format("  {:<28} {:<10} {} ({})\n", r.node, r.key.implementation, values, tuning_source_name(r.source));
    }
    out << fmt::format("parallel regions ({} recorded, {} dropped):\n", regions.events.size(), regions.dropped_events);
    out << fmt::format("  {:<28} {:>9} {:>8} {:>12} {:>6} {:>10}\n", "label", "requested", "admitted", "iterations",
                       "grain", "wall us");
    for (const auto& e : regions.events)
      out << fmt::format("  {:<28} {:>9} {:>8} {:>12} {:>6} {:>10.1f}\n", e.label, e.requested_threads,
                         e.admitted_threads, e.iterations, e.grain, static_cast<double>(e.wall_time_ns) / 1000.0);
    print_profile(out, profile, o.top);
    if (o.counters) print_counters(out, profile, o.top);
    const SessionMemoryReport memory = session.memory_report();
    out << fmt::format("memory: weights {:.1f} KiB, peak activations {:.1f} KiB (one buffer per value: {:.1f} KiB, "
                       "{} values released at their last reader, {} of {} eligible nodes ran in place)\n",
                       static_cast<double>(memory.weights_bytes) / 1024.0,
                       static_cast<double>(memory.peak_activation_bytes) / 1024.0,
                       static_cast<double>(memory.last_run_values_bytes) / 1024.0, memory.planned_releases,
                       memory.last_run_in_place, memory.planned_in_place);
    const OptimizationReport& opt = session.optimization_report();
    out << fmt::format("graph optimization ({}): {} -> {} nodes\n", optimization_level_name(opt.level), opt.nodes_before,
                       opt.nodes_after);
    for (const auto& t : opt.transforms)
      out << fmt::format("  {:<28} applied {:>4}  nodes {:>5} -> {}\n", t.name, t.applied, t.nodes_before, t.nodes_after);
  }
  return kExitOk;
}

}  // namespace

void register_run(CLI::App& app, AppContext& context) {
  auto options = std::make_shared<RunOptions>();
  CLI::App* run = app.add_subcommand("run", "Run a model on the CPU runtime and report outputs and latency");
  run->add_option("model", options->model_path, "Model file: binary .onnx or ONNX text syntax (.onnxtxt)")
      ->type_name("MODEL")
      ->required()
      ->check(existing_file());
  run->add_option("-i,--input", options->inputs,
                  "Input value: NAME=FILE.npy, NAME=random[:SEED] (seeded random data of the declared shape)")
      ->type_name("NAME=SOURCE");
  run->add_option("--dim", options->dims, "Bind a symbolic dimension for random inputs: SYMBOL=SIZE")
      ->type_name("SYMBOL=SIZE");
  run->add_option("-t,--threads", options->threads, "Threads (0 = one per physical core, or per --cpus CPU)")
      ->check(integer_in_range(0, 1024))
      ->type_name("N")
      ->default_val(0);
  add_policy_flags(*run, options->policy);
  run->add_option("-r,--repeat", options->repeat, "Timed runs")->check(integer_in_range(1, 1000000))
      ->type_name("N")
      ->default_val(1);
  run->add_option("-w,--warmup", options->warmup, "Untimed runs before the timed ones")
      ->check(integer_in_range(0, 1000000))
      ->type_name("N")
      ->default_val(0);
  run->add_option("-o,--output-dir", options->output_dir, "Write each output to DIR/<output name>.npy")->type_name("DIR");
  run->add_option("--max-memory", options->max_memory,
                  "Most tensor memory the session may hold: weights, every value a run computes and the outputs "
                  "(K, M, G suffixes). A node whose output would pass it fails naming the node, output, shape and "
                  "bytes. Default: three quarters of physical memory (less under a ulimit -v)")
      ->check(byte_size())
      ->type_name("SIZE");
  run->add_flag("--allow-newer-opset", options->allow_newer_opset,
                "Run a model importing an ai.onnx opset newer than the newest implemented (18) as that one "
                "(refused without it: operators may have changed meaning)");
  run->add_option("--optimize", options->optimize, "Graph optimization: none (the graph as written), basic, all")
      ->check(one_of({"none", "basic", "all"}))
      ->type_name("LEVEL")
      ->default_val("all");
  CLI::Option* profile_flag = run->add_flag("--profile", options->profile,
                "Show the tuning values each kernel ran with, the parallel regions, and the time per node and per "
                "op type over the timed runs");
  run->add_flag("--counters", options->counters,
                "With --profile: count per node, through perf_event_open, cycles, instructions and last-level cache "
                "misses where the machine has a PMU, and task clock, context switches, CPU migrations and page faults "
                "from the kernel; counters the system refuses are listed with the reason (no PMU, "
                "perf_event_paranoid, seccomp)")
      ->needs(profile_flag);
  run->add_option("--top", options->top, "Nodes in the --profile table, longest first (0 = all; --json lists all)")
      ->check(integer_in_range(0, 1000000))
      ->type_name("N")
      ->default_val(20);
  run->add_option("--trace", options->trace_path,
                  "Write the timed runs as Chrome trace-event JSON (Perfetto, chrome://tracing): one event per node "
                  "per run, and the parallel regions with their blocks per thread")
      ->type_name("FILE");
  run->add_flag("--json", options->json,
                "Print one JSON object (threads, policy, outputs, latency_us, memory; with --profile also parallel_regions, "
                "tuning, profile; with --counters, profile.counters and each node's counters)");
  run->footer(
      "Examples:\n"
      "  onnx-light-tune run examples/abs.onnxtxt --input x=random:7 --dim N=65536 --repeat 100 --profile\n"
      "  onnx-light-tune run model.onnx -i x=random -w 10 -r 100 --profile --top 10 --trace trace.json\n"
      "  onnx-light-tune run model.onnx -i x=random -r 100 --profile --counters\n"
      "  onnx-light-tune run model.onnx -i a=a.npy -i b=b.npy --output-dir out/ --json\n"
      "  onnx-light-tune run model.onnx -i x=random -r 1000 --spin long --cpus 0-3\n"
      "A model file is read as the ONNX text syntax when its content is text, else as binary protobuf.");
  run->callback([options, &context] { context.action = [options, &context] { return run_verb(*options, context); }; });
}

}  // namespace onnx_light::cli
