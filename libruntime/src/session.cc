#include "onnx_light/runtime/session.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <new>
#include <optional>
#include <set>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "onnx_light/runtime/cpu_features.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/hardware_counters.h"
#include "onnx_light/runtime/model_validation.h"
#include "onnx_light/runtime/kernel_table.h"
#include "onnx_light/runtime/memory_limit.h"
#include "onnx_light/runtime/tensor_proto.h"
#include "onnx_light/runtime/shared_thread_pools.h"
#include "onnx_light/runtime/thread_pool.h"
#include "onnx_light/runtime/tuning_registry.h"
#include "onnx_light/runtime/runtime_scope.h"
#include "denormals.h"
#include "session_profiler.h"
#include "subgraph.h"
#include "thread_index.h"
#include "tensor_buffer_pool.h"

namespace onnx_light::runtime {

OpsetImports default_opset(int64_t version) { return OpsetImports{{"", version}}; }

void RuntimeContext::set(const std::string& name, Tensor tensor) { values_[name] = std::move(tensor); }

const Tensor& RuntimeContext::get(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) throw NotFoundError(fmt::format("no value named '{}' in the context", name));
  return it->second;
}

bool RuntimeContext::contains(const std::string& name) const { return values_.contains(name); }
void RuntimeContext::erase(const std::string& name) { values_.erase(name); }

std::vector<std::string> RuntimeContext::names() const {
  std::vector<std::string> names;
  for (const auto& [name, _] : values_) names.push_back(name);
  return names;
}

std::string_view tuning_source_name(TuningSource source) {
  return source == TuningSource::published_profile ? "published_profile" : "portable_default";
}

namespace {

// The tensor type inside `type`: itself, or the element of a sequence or an optional of either;
// nullptr for anything else (maps, sparse tensors, sequences of sequences). Sets kind and optional.
const onnx::TypeProto_Tensor* innermost_tensor_type(const onnx::TypeProto& type, ValueKind& kind, bool& optional) {
  kind = ValueKind::tensor;
  optional = false;
  const onnx::TypeProto* t = &type;
  if (t->has_optional_type()) {
    optional = true;
    if (!t->optional_type().has_elem_type()) return nullptr;
    t = &t->optional_type().elem_type();
  }
  if (t->has_sequence_type()) {
    kind = ValueKind::sequence;
    if (!t->sequence_type().has_elem_type()) return nullptr;
    t = &t->sequence_type().elem_type();
  }
  return t->has_tensor_type() ? &t->tensor_type() : nullptr;
}

// What a declared type is, for messages: "seq(tensor)", "optional(seq(tensor))".
std::string value_type_name(ValueKind kind, bool optional) {
  const std::string inner = kind == ValueKind::sequence ? "seq(tensor)" : "tensor";
  return optional ? fmt::format("optional({})", inner) : inner;
}

ValueInfo value_info_from_proto(const onnx::ValueInfoProto& proto) {
  ValueInfo info;
  info.name = proto.name();
  if (proto.type().value_case() == onnx::TypeProto::VALUE_NOT_SET) return info;
  const onnx::TypeProto_Tensor* inner = innermost_tensor_type(proto.type(), info.kind, info.optional);
  if (inner != nullptr && info.kind == ValueKind::sequence) {
    info.element_type = static_cast<ElementType>(inner->elem_type());
  } else if (inner != nullptr) {
    const auto& tensor_type = *inner;
    info.element_type = static_cast<ElementType>(tensor_type.elem_type());
    if (tensor_type.has_shape()) {
      info.has_shape = true;
      for (const auto& dim : tensor_type.shape().dim()) {
        info.shape.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
        info.symbols.push_back(dim.has_dim_param() ? dim.dim_param() : std::string());
      }
    }
  }
  return info;
}

std::string describe_value_info(const ValueInfo& info) {
  if (info.kind == ValueKind::sequence)
    return fmt::format("{}seq({}){}", info.optional ? "optional(" : "", element_type_name(info.element_type),
                       info.optional ? ")" : "");
  if (!info.has_shape) return std::string(element_type_name(info.element_type));
  std::vector<std::string> dims;
  for (std::size_t d = 0; d < info.shape.size(); ++d)
    dims.push_back(info.shape[d] >= 0 ? std::to_string(info.shape[d]) : (info.symbols[d].empty() ? "?" : info.symbols[d]));
  return fmt::format("{}[{}]", element_type_name(info.element_type), fmt::join(dims, ", "));
}

std::string node_label(const onnx::NodeProto& node, std::size_t index) {
  if (!node.name().empty()) return fmt::format("{} node '{}'", node.op_type(), node.name());
  return fmt::format("{} node #{}", node.op_type(), index);
}

// Evaluates a Constant node into a tensor.
Tensor constant_value(const onnx::NodeProto& node, const std::string& label, const ExternalDataDirectory* external) {
  for (const auto& a : node.attribute()) {
    if (a.name() == "value") return tensor_from_proto(a.t(), external);
    if (a.name() == "value_float") {
      Tensor t(ElementType::float32, {});
      *t.data<float>() = a.f();
      return t;
    }
    if (a.name() == "value_int") {
      Tensor t(ElementType::int64, {});
      *t.data<int64_t>() = a.i();
      return t;
    }
    if (a.name() == "value_floats") {
      Tensor t(ElementType::float32, {a.floats_size()});
      std::copy(a.floats().begin(), a.floats().end(), t.data<float>());
      return t;
    }
    if (a.name() == "value_ints") {
      Tensor t(ElementType::int64, {a.ints_size()});
      std::copy(a.ints().begin(), a.ints().end(), t.data<int64_t>());
      return t;
    }
    if (a.name() == "sparse_value" || a.name() == "value_string" || a.name() == "value_strings")
      throw UnsupportedError(fmt::format("{}: attribute '{}' is not supported", label, a.name()));
  }
  throw ModelError(fmt::format("{}: Constant has no value attribute", label));
}

}  // namespace

struct RuntimeSession::Impl {
  struct Step {
    std::size_t node_index = 0;
    std::string label;
    const KernelDef* def = nullptr;
    std::unique_ptr<Kernel> kernel;
    std::vector<int> inputs;   // slot ids; -1 for omitted
    std::vector<int> outputs;  // slot ids; -1 for omitted
    std::vector<std::size_t> fused;  // nodes run inside this one (Relu fusion), for profiles
    int in_place = -1;  // slot of input 0 when output 0 may be written over it (it dies here)
  };

  class Execution final : public KernelExecution {
   public:
    Execution(Impl& impl, Step& step) : impl_(impl), step_(step) {}
    std::size_t input_count() const override { return step_.inputs.size(); }
    const Tensor* input(std::size_t index) const override {
      if (index >= step_.inputs.size() || step_.inputs[index] < 0) return nullptr;
      const Tensor& t = impl_.slots[static_cast<std::size_t>(step_.inputs[index])];
      return t.empty() ? nullptr : &t;
    }
    const TensorSequence* sequence_input(std::size_t index) const override {
      if (index >= step_.inputs.size() || step_.inputs[index] < 0) return nullptr;
      const auto& s = impl_.sequences[static_cast<std::size_t>(step_.inputs[index])];
      return s ? &*s : nullptr;
    }
    void set_sequence_output(std::size_t index, TensorSequence sequence) override {
      if (index >= step_.outputs.size() || step_.outputs[index] < 0) return;  // omitted: dropped
      const auto id = static_cast<std::size_t>(step_.outputs[index]);
      if (!impl_.sequence_slot[id])
        throw InputError(fmt::format("{}: output {} ('{}') is a tensor, but the kernel gave a sequence", step_.label,
                                     index, impl_.slot_name(step_.outputs[index])));
      impl_.sequences[id] = std::move(sequence);
    }
    void set_none_output(std::size_t index) override {
      if (index >= step_.outputs.size() || step_.outputs[index] < 0) return;
      const auto id = static_cast<std::size_t>(step_.outputs[index]);
      impl_.sequences[id].reset();
      impl_.buffers->recycle(impl_.slots[id]);
    }
    std::size_t output_count() const override { return step_.outputs.size(); }
    Tensor& output(std::size_t index, ElementType type, const Shape& shape) override {
      return output_slot(index, type, shape, /*zero=*/true);
    }
    Tensor& output_for_overwrite(std::size_t index, ElementType type, const Shape& shape) override {
      return output_slot(index, type, shape, /*zero=*/false);
    }
    int threads() const override { return impl_.pool->threads(); }
    int parallel_for(int64_t n, int64_t grain, int admitted,
                     FunctionRef<void(int64_t, int64_t)> fn) override {
      ParallelRegionCollector* collector = impl_.options.parallel_region_collector.get();
      // Workers take the session's denormal mode for their block (the caller already has it).
      const bool flush = impl_.options.flush_denormals;
      auto in_mode = [&fn, flush](int64_t begin, int64_t end) {
        ScopedDenormalMode mode(flush);
        fn(begin, end);
      };
      if (impl_.profiler) return profiled_parallel_for(n, grain, admitted, in_mode);
      if (collector == nullptr) return impl_.pool->parallel_for(n, grain, admitted, in_mode);
      auto start = std::chrono::steady_clock::now();
      int used = impl_.pool->parallel_for(n, grain, admitted, in_mode);
      auto wall = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start);
      collector->record(step_.label, impl_.pool->threads(), used, n, grain, wall.count());
      return used;
    }
    const std::string& label() const override { return step_.label; }
    void note_threshold_work(int64_t work) const override {
      if (impl_.profiler) impl_.profiler->note_threshold_work(impl_.step_index(step_), work);
    }

   private:
    // The same region with its blocks and itself timed for the profile (and the collector).
    int profiled_parallel_for(int64_t n, int64_t grain, int admitted, FunctionRef<void(int64_t, int64_t)> fn) {
      SessionProfiler& profiler = *impl_.profiler;
      const std::size_t index = impl_.step_index(step_);
      ParallelRegionCollector* collector = impl_.options.parallel_region_collector.get();
      // One block on this thread (what small nodes open on every call) is counted, not timed: its
      // time is the node's, and four clock reads would cost more than many such nodes run.
      if (collector == nullptr && (n <= std::max<int64_t>(grain, 1) || admitted <= 1 || impl_.pool->threads() == 1)) {
        const int used = impl_.pool->parallel_for(n, grain, admitted, fn);
        profiler.count_region(index, used);
        return used;
      }
      auto timed = [&](int64_t begin, int64_t end) {
        const int tid = current_pool_thread_index();
        // A worker counts its own block (the caller's blocks are inside its node-wide count).
        const bool count = tid > 0 && profiler.counting();
        CounterValues before;
        if (count) profiler.read_worker_counters(tid, before);
        const int64_t start = SessionProfiler::now_ns();
        fn(begin, end);
        const int64_t stop = SessionProfiler::now_ns();
        if (count) profiler.add_worker_block(index, tid, before);
        profiler.record_block(index, tid, start, stop);
      };
      const int64_t start = SessionProfiler::now_ns();
      const int used = impl_.pool->parallel_for(n, grain, admitted, timed);
      const int64_t end = SessionProfiler::now_ns();
      profiler.record_region(index, used, start, end);
      if (collector != nullptr)
        collector->record(step_.label, impl_.pool->threads(), used, n, grain, end - start);
      return used;
    }

    Tensor& output_slot(std::size_t index, ElementType type, const Shape& shape, bool zero) {
      try {
        return take_output_slot(index, type, shape, zero);
      } catch (const PoolLimitError& e) {
        const bool named = index < step_.outputs.size() && step_.outputs[index] >= 0;
        const std::string output = named ? fmt::format("output '{}'", impl_.slot_name(step_.outputs[index]))
                                         : fmt::format("output {} (omitted by the graph)", index);
        throw MemoryLimitError(fmt::format(
            "{}: {} of type {} and shape {} needs {} ({} bytes), over the session's memory limit of {} "
            "({} already held by weights and values); raise it with --max-memory or "
            "RuntimeSessionOptions.max_memory_bytes",
            step_.label, output, element_type_name(type), shape_to_string(shape), format_bytes(static_cast<int64_t>(e.requested)),
            e.requested, format_bytes(static_cast<int64_t>(e.limit)), format_bytes(static_cast<int64_t>(e.held))));
      }
    }

    Tensor& take_output_slot(std::size_t index, ElementType type, const Shape& shape, bool zero) {
      if (index >= step_.outputs.size() || step_.outputs[index] < 0) {
        // An omitted optional output: computed, then dropped. One buffer per index, so that a
        // kernel filling several omitted outputs never writes into a released one.
        Tensor& scratch = scratch_[index];
        impl_.buffers->make_into(scratch, type, shape, zero);
        return scratch;
      }
      const auto id = static_cast<std::size_t>(step_.outputs[index]);
      Tensor& slot = impl_.slots[id];
      // Caller memory bound through run(inputs, outputs) is written in place when it fits; else
      // last run's buffer when nobody else holds it, so steady-state runs allocate nothing.
      const int output = impl_.output_of_slot[id];
      const bool callers = output >= 0 && impl_.output_bound[static_cast<std::size_t>(output)];
      // An elementwise node writes over its input 0 when that value dies here and nothing else
      // (a view, the caller) holds its storage: one buffer for a chain instead of two.
      if (index == 0 && !zero && !callers && step_.in_place >= 0) {
        Tensor& in = impl_.slots[static_cast<std::size_t>(step_.in_place)];
        if (in.element_type() == type && in.shape() == shape && in.exclusively_owned()) {
          impl_.buffers->recycle(slot);
          slot = in;
          ++impl_.last_run_in_place;
          return slot;
        }
      }
      if (slot.element_type() == type && slot.shape() == shape && (callers || slot.exclusively_owned())) return slot;
      if (callers) {
        // Kept aside untouched: a failed run hands it back as it was.
        impl_.output_displaced[static_cast<std::size_t>(output)] = std::move(slot);
        impl_.output_bound[static_cast<std::size_t>(output)] = false;
      }
      // Else a block from the session's pool: outputs the caller dropped come back there.
      impl_.buffers->make_into(slot, type, shape, zero);
      return slot;
    }

    Impl& impl_;
    Step& step_;
    std::map<std::size_t, Tensor> scratch_;
  };

  // Sessions for control-flow graphs: same kernels, registry, pool and options (profiling too:
  // profile() lists their nodes after the session's own).
  class Subgraphs final : public SubgraphBuilder {
   public:
    explicit Subgraphs(Impl& impl) : impl_(impl) {}
    std::unique_ptr<RuntimeSession> build(const onnx::GraphProto& graph, const std::vector<std::string>& outer,
                                          const std::vector<ElementType>& outer_types, const std::string& label,
                                          const std::vector<ValueKind>& outer_kinds) const override {
      onnx::ModelProto proto;
      proto.set_ir_version(impl_.model.proto().ir_version());
      *proto.mutable_opset_import() = impl_.model.proto().opset_import();
      *proto.mutable_graph() = graph;
      for (std::size_t k = 0; k < outer.size(); ++k) {
        onnx::ValueInfoProto* input = proto.mutable_graph()->add_input();
        input->set_name(outer[k]);
        if (k < outer_kinds.size() && outer_kinds[k] == ValueKind::sequence)
          input->mutable_type()->mutable_optional_type()->mutable_elem_type()->mutable_sequence_type()
              ->mutable_elem_type()->mutable_tensor_type()->set_elem_type(static_cast<int32_t>(outer_types[k]));
        else
          input->mutable_type()->mutable_tensor_type()->set_elem_type(static_cast<int32_t>(outer_types[k]));
      }
      RuntimeSessionOptions options = impl_.options;  // profiled when the enclosing session is
      options.kernels = impl_.table;
      options.registry = impl_.registry;
      options.thread_pool = impl_.ensure_pool();
      return std::make_unique<RuntimeSession>(
          impl_.model.with_proto(std::move(proto), fmt::format("{} ({})", impl_.model.origin(), label)),
          std::move(options));
    }

   private:
    Impl& impl_;
  };

  Impl(Model m, RuntimeSessionOptions o) : model(std::move(m)), options(std::move(o)) {}

  // The pool is made when the session initialises, or earlier when a control-flow node's graphs
  // need it to share.
  const std::shared_ptr<ThreadPool>& ensure_pool() {
    if (!pool) {
      if (options.thread_pool) pool = options.thread_pool;
      else if (options.share_thread_pool) pool = process_thread_pools().acquire(thread_count, thread_pool_options(options.parameters));
      else pool = std::make_shared<ThreadPool>(thread_count, thread_pool_options(options.parameters));
    }
    return pool;
  }

  Model model;
  RuntimeSessionOptions options;
  const KernelTable* table = nullptr;
  TuningRegistry* registry = nullptr;
  std::shared_ptr<ThreadPool> pool;
  // Kernels keep per-run state (plans, scratch): one run at a time; a second caller waits.
  std::mutex run_mutex;
  int thread_count = 1;
  std::shared_ptr<TensorBufferPool> buffers = std::make_shared<TensorBufferPool>();

  std::vector<Tensor> slots;                    // every value of the graph by slot id
  // Sequence values (value.h) by the same slot ids: sequence_slot says which slots hold one (their
  // tensor slot stays empty); an absent (optional) sequence is nullopt.
  std::vector<std::optional<TensorSequence>> sequences;
  std::vector<bool> sequence_slot;
  bool sequence_io = false;  // a graph input or output is a sequence: the tensor run forms refuse it
  std::unordered_map<std::string, int> slot_of;  // value name -> slot id
  std::vector<bool> constant_slot;              // initializers and Constant outputs (kept across runs)
  std::vector<ValueInfo> inputs;
  std::vector<int> input_slots;
  std::vector<Tensor> input_defaults;  // initializer values of inputs that have one (IR < 4 style)
  std::vector<ValueInfo> outputs;
  std::vector<int> output_slots;
  std::vector<bool> output_shared;  // an input or constant: handed out as a shared copy
  // Positional runs, per graph output: the caller's buffer overlaps an input (computed privately);
  // the slot holds the caller's buffer; the caller's buffer that did not fit the result.
  std::vector<bool> output_private;
  std::vector<bool> output_bound;
  std::vector<Tensor> output_displaced;
  std::vector<int> output_of_slot;  // slot id -> graph output index, -1 for other values
  std::vector<Step> steps;
  // Memory plan: per step, the slots whose last reader it is (released to the pool after it runs).
  std::vector<std::vector<int>> release_after;
  int64_t planned_releases = 0;
  int64_t planned_in_place = 0;
  int64_t last_run_in_place = 0;
  int64_t last_run_values_bytes = 0;
  int64_t memory_limit = 0;
  std::atomic<bool> is_initialized{false};  // read by initialized() without the lock
  std::vector<ResolvedTuning> resolved;
  OptimizationReport optimization;
  std::unique_ptr<SessionProfiler> profiler;  // only with options.profile
  Subgraphs subgraph_builder{*this};

  // Resolves every step's tuning once; the caller holds run_mutex.
  void initialize_locked() {
    if (is_initialized) return;
    ensure_pool();
    if (profiler && options.profile_counters && !profiler->counting())
      profiler->enable_counters(pool->worker_thread_ids(),
                                options.counter_opener ? options.counter_opener : system_counter_opener());
    auto generation = registry->snapshot();
    resolved.clear();
    for (auto& step : steps) {
      ResolvedTuning r;
      r.node = step.label;
      r.key = step.def->schema.key;
      r.values = step.def->schema.defaults();
      r.generation = generation->number();
      if (const TuningValues* published = generation->find(r.key, thread_count, idle_workers_spin(options.parameters))) {
        // The publisher validated these; a stale or foreign set still must not reach a kernel.
        if (step.def->schema.validate(*published).empty()) {
          r.values = *published;
          r.source = TuningSource::published_profile;
        }
      }
      step.kernel->apply_tuning(r.values);
      resolved.push_back(std::move(r));
    }
    is_initialized = true;
  }

  int slot(const std::string& name) {
    auto [it, inserted] = slot_of.emplace(name, static_cast<int>(slots.size()));
    if (inserted) {
      slots.emplace_back();
      constant_slot.push_back(false);
      sequences.emplace_back();
      sequence_slot.push_back(false);
    }
    return it->second;
  }

  void build();
  // The value a slot holds (error messages only: a linear search).
  const std::string& slot_name(int id) const {
    for (const auto& [name, slot_id] : slot_of)
      if (slot_id == id) return name;
    static const std::string unnamed = "?";
    return unnamed;
  }
  void apply_memory_limit();
  void bind_inputs(RuntimeContext& context);
  // Checks `given` (nullptr: absent) against input k and binds it to its slot.
  // Symbolic input dims bound so far in this run (cleared per run, capacity kept: a steady
  // state allocates nothing; models have few symbols, so a linear search).
  using BoundSymbols = std::vector<std::pair<const std::string*, int64_t>>;
  BoundSymbols bound_symbols;
  void bind_input(std::size_t k, const Tensor* given, BoundSymbols& symbols);
  // The same for any value (run(values)).
  void bind_value(std::size_t k, const Value& given, BoundSymbols& symbols);
  // The tensor run forms: InputError naming the first sequence-typed graph input or output.
  void refuse_sequences() const;
  void run_steps();
  void fuse_activations();
  void start_profiler();
  std::size_t step_index(const Step& step) const { return static_cast<std::size_t>(&step - steps.data()); }
  void plan_memory();
  // Inputs are only borrowed for a run: drop our references so callers own them again. The slots
  // keep their shape capacity, so binding the next run's inputs allocates nothing.
  void release_inputs() {
    for (int id : input_slots) {
      slots[static_cast<std::size_t>(id)].release();
      sequences[static_cast<std::size_t>(id)].reset();
    }
  }
};

void RuntimeSession::Impl::build() {
  const auto& graph = model.graph();
  table = options.kernels != nullptr ? options.kernels : &cpu_kernel_table();
  registry = options.registry != nullptr ? options.registry : &process_tuning_registry();
  thread_count = effective_threads(options.parameters);
  if (options.thread_pool && options.thread_pool->threads() != thread_count)
    throw InvalidValueError(fmt::format("the shared thread pool has {} threads but the session asks for {}",
                                        options.thread_pool->threads(), thread_count));
  if (options.thread_pool) {
    // A shared pool's spin and placement are its own: a session asking for others would silently not get them.
    const ThreadPoolOptions wanted = thread_pool_options(options.parameters);
    if (options.thread_pool->spin() != wanted.spin || options.thread_pool->cpus() != wanted.cpus)
      throw InvalidValueError(fmt::format(
          "the shared thread pool spins {} us on CPUs [{}] but the session asks for {} us on CPUs [{}]",
          options.thread_pool->spin().count(), format_cpu_list(options.thread_pool->cpus()), wanted.spin.count(),
          format_cpu_list(wanted.cpus)));
  }

  std::unordered_map<std::string, ElementType> types;
  std::set<std::string> initializer_names;
  std::vector<std::string> problems;  // every unsupported input or node, reported together
  for (const auto& init : graph.initializer()) {
    if (init.name().empty()) throw ModelError(fmt::format("{}: an initializer has no name", model.origin()));
    int id = slot(init.name());
    try {
      slots[static_cast<std::size_t>(id)] = tensor_from_proto(init, model.external_data());
    } catch (const Error& e) {
      throw ModelError(fmt::format("{}: initializer '{}': {}", model.origin(), init.name(), e.what()));
    }
    constant_slot[static_cast<std::size_t>(id)] = true;
    types[init.name()] = slots[static_cast<std::size_t>(id)].element_type();
    initializer_names.insert(init.name());
  }
  std::unordered_map<std::string, ValueKind> kinds;  // values that are sequences (absent: tensors)
  for (const auto& input : graph.input()) {
    ValueInfo info = value_info_from_proto(input);
    ValueKind kind;
    bool optional;
    if (innermost_tensor_type(input.type(), kind, optional) == nullptr) {
      problems.push_back(fmt::format("graph input '{}' is not a tensor, a sequence of tensors or an optional of either",
                                     input.name()));
      continue;
    }
    if (!is_fixed_size(info.element_type)) {
      problems.push_back(fmt::format("graph input '{}' has element type {}, which the runtime does not hold{}",
                                     input.name(), element_type_name(info.element_type),
                                     info.element_type == ElementType::string
                                         ? fmt::format(" ({})", string_tensors_out_of_scope())
                                         : std::string()));
      continue;
    }
    int id = slot(input.name());
    if (info.kind == ValueKind::sequence) {
      if (initializer_names.contains(input.name()))
        throw ModelError(fmt::format("{}: graph input '{}' is a sequence but an initializer of that name is a tensor",
                                     model.origin(), input.name()));
      sequence_slot[static_cast<std::size_t>(id)] = true;
      kinds[input.name()] = ValueKind::sequence;
    }
    Tensor fallback;
    if (initializer_names.contains(input.name())) {
      fallback = slots[static_cast<std::size_t>(id)];  // an overridable default
      constant_slot[static_cast<std::size_t>(id)] = false;
    }
    types[input.name()] = info.element_type;
    inputs.push_back(std::move(info));
    input_slots.push_back(id);
    input_defaults.push_back(std::move(fallback));
  }

  // Topological order (Kahn): a node is ready when all its named inputs exist.
  const int node_count = graph.node_size();
  std::set<std::string> available;
  for (const auto& [name, _] : types) available.insert(name);
  for (const auto& input : graph.input()) available.insert(input.name());  // rejected ones too
  std::map<std::string, int> producer;
  for (int i = 0; i < node_count; ++i)
    for (const auto& out : graph.node(i).output()) {
      if (out.empty()) continue;
      if (available.contains(out) || !producer.emplace(out, i).second)
        throw ModelError(fmt::format("{}: value '{}' is produced more than once ({})", model.origin(), out,
                                     node_label(graph.node(i), static_cast<std::size_t>(i))));
    }
  std::vector<int> order;
  std::vector<bool> placed(static_cast<std::size_t>(node_count), false);
  std::deque<int> pending;
  std::vector<int> missing_count(static_cast<std::size_t>(node_count), 0);
  std::multimap<std::string, int> waiting;
  // A control-flow node also waits for the outer values its graphs read.
  std::vector<std::vector<std::string>> implicit(static_cast<std::size_t>(node_count));
  for (int i = 0; i < node_count; ++i)
    if (has_subgraphs(graph.node(i))) implicit[static_cast<std::size_t>(i)] = implicit_inputs(graph.node(i));
  for (int i = 0; i < node_count; ++i) {
    std::vector<std::string> reads(graph.node(i).input().begin(), graph.node(i).input().end());
    reads.insert(reads.end(), implicit[static_cast<std::size_t>(i)].begin(), implicit[static_cast<std::size_t>(i)].end());
    std::sort(reads.begin(), reads.end());
    reads.erase(std::unique(reads.begin(), reads.end()), reads.end());
    for (const auto& in : reads) {
      if (in.empty() || available.contains(in)) continue;
      if (!producer.contains(in))
        throw ModelError(fmt::format("{}: {} reads '{}', which no node, graph input or initializer provides",
                                     model.origin(), node_label(graph.node(i), static_cast<std::size_t>(i)), in));
      ++missing_count[static_cast<std::size_t>(i)];
      waiting.emplace(in, i);
    }
    if (missing_count[static_cast<std::size_t>(i)] == 0) pending.push_back(i);
  }
  while (!pending.empty()) {
    int i = pending.front();
    pending.pop_front();
    order.push_back(i);
    for (const auto& out : graph.node(i).output()) {
      auto [begin, end] = waiting.equal_range(out);
      for (auto it = begin; it != end; ++it)
        if (--missing_count[static_cast<std::size_t>(it->second)] == 0) pending.push_back(it->second);
    }
  }
  if (static_cast<int>(order.size()) != node_count)
    throw ModelError(fmt::format("{}: the graph has a cycle ({} of {} nodes cannot be ordered)", model.origin(),
                                 node_count - static_cast<int>(order.size()), node_count));

  // Choose and create a kernel for every node; collect every problem before reporting.
  const CpuFeatures& features = host_cpu_features();
  for (int i : order) {
    const onnx::NodeProto& node = graph.node(i);
    std::string label = node_label(node, static_cast<std::size_t>(i));
    const int64_t opset = model.opset_version(node.domain());
    bool inputs_known = true;
    std::vector<ElementType> input_types;
    std::vector<ValueKind> input_kinds;
    std::vector<const Tensor*> constants;
    const std::vector<std::string>& outer = implicit[static_cast<std::size_t>(i)];
    std::vector<std::string> reads(node.input().begin(), node.input().end());
    reads.insert(reads.end(), outer.begin(), outer.end());
    for (const auto& in : reads) {
      if (in.empty()) {
        input_types.push_back(ElementType::undefined);
        input_kinds.push_back(ValueKind::tensor);
        constants.push_back(nullptr);
        continue;
      }
      auto it = types.find(in);
      if (it == types.end()) {
        inputs_known = false;  // its producer failed; that node is already reported
        break;
      }
      input_types.push_back(it->second);
      auto kind = kinds.find(in);
      input_kinds.push_back(kind == kinds.end() ? ValueKind::tensor : kind->second);
      auto s = slot_of.find(in);
      bool is_constant = s != slot_of.end() && constant_slot[static_cast<std::size_t>(s->second)];
      constants.push_back(is_constant ? &slots[static_cast<std::size_t>(s->second)] : nullptr);
    }
    if (!inputs_known) {
      // Its input's producer is already reported; still report an operator we lack entirely.
      bool is_constant_op = node.op_type() == "Constant" && (node.domain().empty() || node.domain() == "ai.onnx");
      if (!is_constant_op && !table->implements(node.domain(), node.op_type()))
        problems.push_back(fmt::format("{} (opset {}): operator {} is not implemented{}", label, opset, node.op_type(),
                                       out_of_scope_reason(node.domain(), node.op_type()).empty()
                                           ? std::string()
                                           : fmt::format(": {}", out_of_scope_reason(node.domain(), node.op_type()))));
      continue;
    }
    if ((node.domain().empty() || node.domain() == "ai.onnx") && node.op_type() == "Constant") {
      try {
        if (node.output_size() != 1) throw ModelError(fmt::format("{}: Constant must have one output", label));
        int id = slot(node.output(0));
        slots[static_cast<std::size_t>(id)] = constant_value(node, label, model.external_data());
        constant_slot[static_cast<std::size_t>(id)] = true;
        types[node.output(0)] = slots[static_cast<std::size_t>(id)].element_type();
      } catch (const Error& e) {
        problems.push_back(e.what());
      }
      continue;
    }
    if (opset == 0) {
      problems.push_back(fmt::format("{}: the model imports no opset for domain '{}'", label, node.domain()));
      continue;
    }
    // Only these operators take sequences (value.h); any other sees tensors only.
    static const std::set<std::string, std::less<>> kTakesSequences = {
        "Identity", "If", "Loop", "Scan", "SequenceMap", "SequenceAt", "SequenceInsert", "SequenceErase",
        "SequenceLength", "ConcatFromSequence", "Optional", "OptionalGetElement", "OptionalHasElement"};
    const bool default_domain = node.domain().empty() || node.domain() == "ai.onnx";
    if (!(default_domain && kTakesSequences.contains(node.op_type()))) {
      const auto sequence = std::find(input_kinds.begin(), input_kinds.end(), ValueKind::sequence);
      if (sequence != input_kinds.end()) {
        problems.push_back(fmt::format("{}: input '{}' is a sequence, which {} does not take (it takes tensors)", label,
                                       reads[static_cast<std::size_t>(sequence - input_kinds.begin())], node.op_type()));
        continue;
      }
    }
    KernelCreateInfo info{node, opset, input_types, constants};
    info.input_kinds = input_kinds;
    if (has_subgraphs(node)) {
      info.implicit_inputs = outer;
      info.subgraphs = &subgraph_builder;
    }
    ElementType selector = ElementType::undefined;
    int type_input = 0;
    // The selecting input index is per definition; probe with input 0 first, then the def's own.
    // An omitted input 0 (Loop's trip count) selects by the first input given.
    for (std::size_t k = 0; k < static_cast<std::size_t>(node.input_size()); ++k)
      if (!node.input(static_cast<int>(k)).empty()) {
        selector = input_types[k];
        break;
      }
    // A node with no input at all (RandomUniform, RandomNormal) has one definition, keyed by the
    // float32 its dtype defaults to; the kernel's output type comes from its attributes.
    if (std::none_of(node.input().begin(), node.input().end(), [](const std::string& n) { return !n.empty(); }))
      selector = ElementType::float32;
    KernelChoice choice = table->choose(node.domain(), node.op_type(), opset, selector, features);
    if (choice.def != nullptr && choice.def->type_input != 0) {
      type_input = choice.def->type_input;
      ElementType other = static_cast<std::size_t>(type_input) < input_types.size()
                              ? input_types[static_cast<std::size_t>(type_input)]
                              : ElementType::undefined;
      choice = table->choose(node.domain(), node.op_type(), opset, other, features);
      selector = other;
    }
    if (choice.def == nullptr) {
      problems.push_back(fmt::format("{} (opset {}): {}", label, opset, choice.miss_reason));
      continue;
    }
    Step step;
    step.node_index = static_cast<std::size_t>(i);
    step.label = label;
    step.def = choice.def;
    try {
      step.kernel = choice.def->create(info);
      std::vector<ElementType> out_types = step.kernel->inferred_output_types();
      const std::vector<ValueKind> out_kinds = step.kernel->output_kinds();
      if (out_types.empty())
        out_types = choice.def->output_types
                        ? choice.def->output_types(info)
                        : std::vector<ElementType>(static_cast<std::size_t>(node.output_size()), selector);
      for (int o = 0; o < node.output_size(); ++o) {
        const std::string& name = node.output(o);
        if (name.empty()) {
          step.outputs.push_back(-1);
          continue;
        }
        step.outputs.push_back(slot(name));
        if (static_cast<std::size_t>(o) < out_kinds.size() && out_kinds[static_cast<std::size_t>(o)] == ValueKind::sequence) {
          kinds[name] = ValueKind::sequence;
          sequence_slot[static_cast<std::size_t>(step.outputs.back())] = true;
        }
        types[name] = static_cast<std::size_t>(o) < out_types.size() ? out_types[static_cast<std::size_t>(o)] : selector;
      }
    } catch (const Error& e) {
      problems.push_back(e.what());
      continue;
    }
    for (const auto& in : reads) step.inputs.push_back(in.empty() ? -1 : slot(in));
    steps.push_back(std::move(step));
  }
  std::map<std::string, int> output_position;
  for (const auto& output : graph.output()) {
    // One slot per name: a second listing would be handed the first one's moved-out buffer.
    auto [first, unique] = output_position.emplace(output.name(), static_cast<int>(output_position.size()));
    if (!unique)
      throw ModelError(fmt::format("{}: graph output '{}' is listed twice (outputs {} and {}); output names must be unique",
                                   model.origin(), output.name(), first->second, output_position.size()));
    ValueInfo info = value_info_from_proto(output);
    if (!types.contains(output.name()) && problems.empty())
      throw ModelError(fmt::format("{}: graph output '{}' is not produced by any node", model.origin(), output.name()));
    if (info.element_type == ElementType::undefined && types.contains(output.name()))
      info.element_type = types[output.name()];
    // The kind is what the graph computes (a subgraph's outputs often declare no type); a declared
    // kind that disagrees is the model's error.
    const ValueKind produced = kinds.contains(output.name()) ? ValueKind::sequence : ValueKind::tensor;
    if (types.contains(output.name()) && output.type().value_case() != onnx::TypeProto::VALUE_NOT_SET &&
        info.kind != produced)
      problems.push_back(fmt::format("graph output '{}' is declared {} but the graph computes a {}", output.name(),
                                     value_type_name(info.kind, info.optional), value_kind_name(produced)));
    info.kind = produced;
    if (info.kind == ValueKind::sequence) info.has_shape = false;
    outputs.push_back(std::move(info));
    output_slots.push_back(slot(output.name()));
  }
  sequence_io = std::any_of(inputs.begin(), inputs.end(), [](const ValueInfo& v) { return v.kind == ValueKind::sequence; }) ||
                std::any_of(outputs.begin(), outputs.end(), [](const ValueInfo& v) { return v.kind == ValueKind::sequence; });
  output_private.assign(output_slots.size(), false);
  output_bound.assign(output_slots.size(), false);
  output_displaced.resize(output_slots.size());
  output_of_slot.assign(slots.size(), -1);
  for (std::size_t k = 0; k < output_slots.size(); ++k) output_of_slot[static_cast<std::size_t>(output_slots[k])] = static_cast<int>(k);
  for (int id : output_slots)
    output_shared.push_back(constant_slot[static_cast<std::size_t>(id)] ||
                            std::find(input_slots.begin(), input_slots.end(), id) != input_slots.end());
  if (problems.empty() && options.fuse_activations) fuse_activations();
  if (problems.empty()) plan_memory();
  if (!problems.empty()) {
    std::string list;
    for (const auto& p : problems) list += fmt::format("\n  - {}", p);
    throw UnsupportedError(fmt::format("{}: {} node{} cannot run:{}", model.origin(), problems.size(),
                                       problems.size() == 1 ? "" : "s", list));
  }
}

void RuntimeSession::Impl::bind_inputs(RuntimeContext& context) {
  bound_symbols.clear();
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    auto it = context.values().find(inputs[k].name);
    bind_input(k, it == context.values().end() ? nullptr : &it->second, bound_symbols);
  }
}

void RuntimeSession::Impl::bind_input(std::size_t k, const Tensor* given_or_null, BoundSymbols& symbols) {
  const ValueInfo& info = inputs[k];
  Tensor& slot_tensor = slots[static_cast<std::size_t>(input_slots[k])];
  if (given_or_null == nullptr) {
    if (!input_defaults[k].empty()) {
      slot_tensor = input_defaults[k];
      return;
    }
    if (info.optional) {
      slot_tensor.release();  // an absent optional
      return;
    }
    throw InputError(fmt::format("{}: missing input '{}' ({})", model.origin(), info.name, describe_value_info(info)));
  }
  const Tensor& given = *given_or_null;
  if (given.element_type() != info.element_type)
    throw InputError(fmt::format("{}: input '{}' must be {} but is {}", model.origin(), info.name,
                                 describe_value_info(info), given.describe()));
  if (info.has_shape) {
    if (given.rank() != info.shape.size())
      throw InputError(fmt::format("{}: input '{}' must have rank {} ({}) but has shape {}", model.origin(), info.name,
                                   info.shape.size(), describe_value_info(info), shape_to_string(given.shape())));
    for (std::size_t d = 0; d < info.shape.size(); ++d) {
      int64_t actual = given.shape()[d];
      if (info.shape[d] >= 0 && info.shape[d] != actual)
        throw InputError(fmt::format("{}: input '{}' dimension {} must be {} but is {} (shape {})", model.origin(),
                                     info.name, d, info.shape[d], actual, shape_to_string(given.shape())));
      if (info.shape[d] < 0 && !info.symbols[d].empty()) {
        auto sym = std::find_if(symbols.begin(), symbols.end(),
                                [&](const auto& bound) { return *bound.first == info.symbols[d]; });
        if (sym == symbols.end()) symbols.emplace_back(&info.symbols[d], actual);
        else if (sym->second != actual)
          throw InputError(fmt::format("{}: input '{}' dimension {} ('{}') is {} but '{}' is {} elsewhere",
                                       model.origin(), info.name, d, info.symbols[d], actual, info.symbols[d],
                                       sym->second));
      }
    }
  }
  slot_tensor = given;  // shares storage; kernels never write inputs
}

void RuntimeSession::Impl::bind_value(std::size_t k, const Value& given, BoundSymbols& symbols) {
  const ValueInfo& info = inputs[k];
  const auto id = static_cast<std::size_t>(input_slots[k]);
  if (info.kind == ValueKind::tensor) {
    if (given.is_sequence())
      throw InputError(fmt::format("{}: input '{}' must be {} but is {}", model.origin(), info.name,
                                   describe_value_info(info), given.describe()));
    bind_input(k, given.is_none() ? nullptr : &given.tensor(), symbols);
    return;
  }
  if (given.is_none()) {
    if (!info.optional)
      throw InputError(fmt::format("{}: missing input '{}' ({})", model.origin(), info.name, describe_value_info(info)));
    sequences[id].reset();
    return;
  }
  if (!given.is_sequence() ||
      (info.element_type != ElementType::undefined && given.sequence().element_type() != info.element_type))
    throw InputError(fmt::format("{}: input '{}' must be {} but is {}", model.origin(), info.name,
                                 describe_value_info(info), given.describe()));
  sequences[id] = given.sequence();  // shares the tensors; kernels never write a sequence's tensors
}

void RuntimeSession::Impl::refuse_sequences() const {
  if (!sequence_io) return;
  for (const auto* list : {&inputs, &outputs})
    for (const ValueInfo& v : *list)
      if (v.kind == ValueKind::sequence)
        throw InputError(fmt::format(
            "{}: graph {} '{}' is a sequence ({}), which run with tensors cannot {}; use RuntimeSession::run with "
            "values (onnx_light/runtime/value.h)",
            model.origin(), list == &inputs ? "input" : "output", v.name, describe_value_info(v),
            list == &inputs ? "take" : "return"));
}

void RuntimeSession::Impl::fuse_activations() {
  // Readers of every slot: step inputs and graph outputs (a value the caller sees is never fused away).
  std::vector<int> readers(slots.size(), 0);
  for (const auto& step : steps)
    for (int id : step.inputs)
      if (id >= 0) ++readers[static_cast<std::size_t>(id)];
  for (int id : output_slots) ++readers[static_cast<std::size_t>(id)];
  std::vector<bool> dropped(steps.size(), false);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (dropped[i] || steps[i].outputs.size() != 1 || steps[i].outputs[0] < 0) continue;
    const int produced = steps[i].outputs[0];
    if (readers[static_cast<std::size_t>(produced)] != 1) continue;
    for (std::size_t j = i + 1; j < steps.size(); ++j) {
      const Step& relu = steps[j];
      if (std::find(relu.inputs.begin(), relu.inputs.end(), produced) == relu.inputs.end()) continue;
      const onnx::NodeProto& node = model.graph().node(static_cast<int>(relu.node_index));
      const bool is_relu = node.op_type() == "Relu" && (node.domain().empty() || node.domain() == "ai.onnx") &&
                           relu.inputs.size() == 1 && relu.outputs.size() == 1 && relu.outputs[0] >= 0;
      if (is_relu && steps[i].kernel->fuse_relu()) {
        steps[i].outputs[0] = relu.outputs[0];
        steps[i].label += fmt::format(" + {}", relu.label);
        steps[i].fused.push_back(relu.node_index);
        dropped[j] = true;
      }
      break;  // the only reader
    }
  }
  std::vector<Step> kept;
  for (std::size_t i = 0; i < steps.size(); ++i)
    if (!dropped[i]) kept.push_back(std::move(steps[i]));
  steps = std::move(kept);
}

void RuntimeSession::Impl::plan_memory() {
  // Values the session must keep for the whole run: graph inputs, outputs and constants.
  std::vector<bool> pinned(slots.size(), false);
  for (std::size_t id = 0; id < slots.size(); ++id) pinned[id] = constant_slot[id];
  for (int id : input_slots) pinned[static_cast<std::size_t>(id)] = true;
  for (int id : output_slots) pinned[static_cast<std::size_t>(id)] = true;
  // Last step touching each value (a value nobody reads goes right after its producer).
  std::vector<int> last(slots.size(), -1);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    for (int id : steps[i].outputs)
      if (id >= 0) last[static_cast<std::size_t>(id)] = static_cast<int>(i);
    for (int id : steps[i].inputs)
      if (id >= 0) last[static_cast<std::size_t>(id)] = static_cast<int>(i);
  }
  release_after.assign(steps.size(), {});
  planned_releases = 0;
  for (std::size_t id = 0; id < slots.size(); ++id) {
    if (pinned[id] || last[id] < 0) continue;
    release_after[static_cast<std::size_t>(last[id])].push_back(static_cast<int>(id));
    ++planned_releases;
  }
  // In place: input 0 is released after this very step and is not also one of its outputs.
  planned_in_place = 0;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    Step& step = steps[i];
    step.in_place = -1;
    if (step.inputs.empty() || step.outputs.empty() || !step.kernel->may_overwrite_input0()) continue;
    const int in = step.inputs[0];
    if (in < 0 || step.outputs[0] < 0 || pinned[static_cast<std::size_t>(in)] ||
        last[static_cast<std::size_t>(in)] != static_cast<int>(i) ||
        std::find(step.outputs.begin(), step.outputs.end(), in) != step.outputs.end())
      continue;
    step.in_place = in;
    ++planned_in_place;
  }
}

namespace {

// Called from a handler: rethrows `e` as it is when its message already names the node, else the
// same error type with the node's label in front.
template <typename E>
[[noreturn]] void rethrow_with_label(const std::string& label, const E& e) {
  const std::string what = e.what();
  if (what.rfind(label, 0) == 0) throw;
  throw E(fmt::format("{}: {}", label, what));
}

}  // namespace

void RuntimeSession::Impl::start_profiler() {
  std::vector<SessionProfiler::Step> described;
  for (const Step& step : steps) {
    SessionProfiler::Step d;
    d.label = step.label;
    d.domain = model.graph().node(static_cast<int>(step.node_index)).domain();
    d.implementation = step.def->implementation;
    std::vector<std::size_t> nodes{step.node_index};
    nodes.insert(nodes.end(), step.fused.begin(), step.fused.end());
    for (std::size_t k : nodes) {
      const onnx::NodeProto& node = model.graph().node(static_cast<int>(k));
      const char* sep = k == step.node_index ? "" : " + ";
      d.node += sep + (node.name().empty() ? fmt::format("#{}", k) : node.name());
      d.op_type += sep + node.op_type();
    }
    described.push_back(std::move(d));
  }
  profiler = std::make_unique<SessionProfiler>(std::move(described), options.profile_event_capacity);
}

void RuntimeSession::Impl::run_steps() {
  ScopedDenormalMode mode(options.flush_denormals);
  if (profiler) profiler->begin_run();
  // Workers keep spinning between the nodes of this run instead of parking after each region
  // (a wake costs ~30 us on this VM, more than many nodes take); they park after the run.
  ThreadPool::AwakeScope awake(*pool);
  last_run_values_bytes = 0;
  last_run_in_place = 0;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    Step& step = steps[i];
    Execution execution(*this, step);
    const int64_t profile_begin = profiler ? profiler->begin_step(step_index(step), execution) : 0;
    try {
      step.kernel->run(execution);
    } catch (const InputError& e) {
      rethrow_with_label(step.label, e);
    } catch (const InvalidValueError& e) {
      rethrow_with_label(step.label, e);  // e.g. an output shape too large to address
    } catch (const std::bad_alloc&) {
      throw InputError(fmt::format("{}: out of memory while computing its outputs", step.label));
    }
    if (profiler)
      profiler->end_step(step_index(step), profile_begin, step.kernel->variant());
    for (int id : step.outputs)
      if (id >= 0) last_run_values_bytes += static_cast<int64_t>(slots[static_cast<std::size_t>(id)].byte_size());
    // Values no later node reads: their blocks go back to the pool for the next values. The slot
    // keeps its shape capacity, so this allocates nothing.
    for (int id : release_after[i]) {
      buffers->recycle(slots[static_cast<std::size_t>(id)]);
      sequences[static_cast<std::size_t>(id)].reset();
    }
  }
  if (profiler) profiler->end_run();
}

void RuntimeSession::Impl::apply_memory_limit() {
  if (options.max_memory_bytes < 0)
    throw InvalidValueError(fmt::format("max_memory_bytes is negative ({})", options.max_memory_bytes));
  memory_limit = options.max_memory_bytes > 0 ? options.max_memory_bytes : default_session_memory_limit();
  int64_t weights = 0;
  for (std::size_t id = 0; id < slots.size(); ++id)
    if (constant_slot[id]) weights += static_cast<int64_t>(slots[id].byte_size());
  if (weights > memory_limit)
    throw MemoryLimitError(fmt::format("{}: the weights (initializers and constants) need {} ({} bytes), over the "
                                       "session's memory limit of {}; raise it with --max-memory or "
                                       "RuntimeSessionOptions.max_memory_bytes",
                                       model.origin(), format_bytes(weights), weights, format_bytes(memory_limit)));
  buffers->set_limit(static_cast<std::size_t>(memory_limit), static_cast<std::size_t>(weights));
}

RuntimeSession::RuntimeSession(Model model, RuntimeSessionOptions options)
    : impl_(std::make_unique<Impl>(std::move(model), std::move(options))) {
  const KernelTable& table = impl_->options.kernels != nullptr ? *impl_->options.kernels : cpu_kernel_table();
  validate_model(impl_->model, impl_->options.allow_newer_opset);
  impl_->model = optimize_model(impl_->model, impl_->options.optimization, table, impl_->optimization);
  impl_->build();
  impl_->apply_memory_limit();
  if (impl_->options.profile) impl_->start_profiler();
}

RuntimeSession::~RuntimeSession() = default;

void RuntimeSession::initialize() {
  std::lock_guard<std::mutex> lock(impl_->run_mutex);
  impl_->initialize_locked();
}

bool RuntimeSession::initialized() const { return impl_->is_initialized; }

void RuntimeSession::run(RuntimeContext& context) {
  Impl& s = *impl_;
  s.refuse_sequences();
  std::lock_guard<std::mutex> lock(s.run_mutex);
  s.initialize_locked();
  // The context's values are never written in place: results go to session buffers and replace
  // the context's entries only once every node has run, so a failed run leaves the context as it
  // was. Last run's outputs go back to the session's pool when the context lets go of them, so a
  // loop alternates between two buffers per output and allocates no tensor memory.
  try {
    s.bind_inputs(context);
    s.run_steps();
  } catch (...) {
    s.release_inputs();
    throw;
  }
  for (std::size_t k = 0; k < s.outputs.size(); ++k) {
    std::size_t id = static_cast<std::size_t>(s.output_slots[k]);
    // Graph outputs that are inputs or constants are shared; computed ones are handed over.
    if (s.output_shared[k])
      context.set(s.outputs[k].name, s.slots[id]);
    else
      context.set(s.outputs[k].name, std::move(s.slots[id]));
  }
  s.release_inputs();
}

void RuntimeSession::run(std::span<const Tensor> inputs, std::span<Tensor> outputs) {
  Impl& s = *impl_;
  if (inputs.size() != s.inputs.size() || outputs.size() != s.outputs.size())
    throw InputError(fmt::format("{}: run takes {} input(s) and {} output(s) in graph order, got {} and {}",
                                 s.model.origin(), s.inputs.size(), s.outputs.size(), inputs.size(), outputs.size()));
  s.refuse_sequences();
  std::lock_guard<std::mutex> lock(s.run_mutex);
  s.initialize_locked();
  // Which caller tensors may be written in place: caller memory (views) and buffers nobody else
  // holds. Two of them sharing bytes cannot both hold their result: refused. One that shares bytes
  // with an input would be overwritten while still read: computed privately and copied at the end.
  auto writable = [&](std::size_t k) {
    return !s.output_shared[k] && (outputs[k].is_view() || outputs[k].exclusively_owned());
  };
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    s.output_private[k] = false;
    if (!writable(k)) continue;
    for (std::size_t j = 0; j < k; ++j)
      if (writable(j) && overlaps(outputs[j], outputs[k]))
        throw InputError(fmt::format("{}: outputs {} ('{}') and {} ('{}') share memory; each output needs its own buffer",
                                     s.model.origin(), j, s.outputs[j].name, k, s.outputs[k].name));
    for (const Tensor& input : inputs)
      if (overlaps(input, outputs[k])) s.output_private[k] = true;
  }
  // Bind the caller's buffers to their slots (a swap: no allocation, and a failed run swaps back).
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    if (!writable(k) || s.output_private[k]) continue;
    std::swap(s.slots[static_cast<std::size_t>(s.output_slots[k])], outputs[k]);
    s.output_bound[k] = true;
  }
  auto hand_back = [&](bool succeeded) {
    for (std::size_t k = 0; k < outputs.size(); ++k) {
      Tensor& slot = s.slots[static_cast<std::size_t>(s.output_slots[k])];
      if (s.output_shared[k]) {
        if (succeeded) outputs[k] = slot;
      } else if (s.output_private[k]) {
        // The session keeps its private buffer for the next run; the caller's gets the bytes.
        if (!succeeded) continue;
        if (slot.element_type() == outputs[k].element_type() && slot.shape() == outputs[k].shape())
          std::memcpy(outputs[k].raw_data(), slot.raw_data(), slot.byte_size());
        else
          outputs[k] = std::move(slot);
      } else if (succeeded) {
        outputs[k] = std::move(slot);  // the caller's own buffer, or a new one when it did not fit
      } else if (s.output_bound[k]) {
        std::swap(slot, outputs[k]);  // the caller's buffer back (written in place up to the failure)
      } else if (!s.output_displaced[k].empty()) {
        outputs[k] = std::move(s.output_displaced[k]);  // the caller's buffer that did not fit, untouched
      }
      s.output_bound[k] = false;
      s.output_displaced[k].release();
    }
    s.release_inputs();
  };
  s.bound_symbols.clear();
  try {
    for (std::size_t k = 0; k < inputs.size(); ++k)
      s.bind_input(k, inputs[k].empty() ? nullptr : &inputs[k], s.bound_symbols);
    s.run_steps();
  } catch (...) {
    hand_back(/*succeeded=*/false);
    throw;
  }
  hand_back(/*succeeded=*/true);
}

void RuntimeSession::run(std::span<const Value> inputs, std::span<Value> outputs) {
  Impl& s = *impl_;
  if (inputs.size() != s.inputs.size() || outputs.size() != s.outputs.size())
    throw InputError(fmt::format("{}: run takes {} input(s) and {} output(s) in graph order, got {} and {}",
                                 s.model.origin(), s.inputs.size(), s.outputs.size(), inputs.size(), outputs.size()));
  std::lock_guard<std::mutex> lock(s.run_mutex);
  s.initialize_locked();
  s.bound_symbols.clear();
  try {
    for (std::size_t k = 0; k < inputs.size(); ++k) s.bind_value(k, inputs[k], s.bound_symbols);
    s.run_steps();
  } catch (...) {
    s.release_inputs();
    throw;
  }
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    const auto id = static_cast<std::size_t>(s.output_slots[k]);
    if (s.sequence_slot[id]) {
      std::optional<TensorSequence>& sequence = s.sequences[id];
      if (!sequence) outputs[k] = Value();
      else if (s.output_shared[k]) outputs[k] = Value(*sequence);
      else outputs[k] = Value(std::move(*sequence));
      if (!s.output_shared[k]) sequence.reset();
    } else {
      // Graph outputs that are inputs or constants are shared; computed ones are handed over.
      outputs[k] = s.output_shared[k] ? Value(s.slots[id]) : Value(std::move(s.slots[id]));
    }
  }
  s.release_inputs();
}

const std::vector<ValueInfo>& RuntimeSession::inputs() const { return impl_->inputs; }
const std::vector<ValueInfo>& RuntimeSession::outputs() const { return impl_->outputs; }
int RuntimeSession::threads() const { return impl_->thread_count; }
uint64_t RuntimeSession::thread_pool_id() {
  std::lock_guard<std::mutex> lock(impl_->run_mutex);
  return impl_->ensure_pool()->id();
}
std::vector<ResolvedTuning> RuntimeSession::resolved_tuning() const { return impl_->resolved; }
const Model& RuntimeSession::model() const { return impl_->model; }
const OptimizationReport& RuntimeSession::optimization_report() const { return impl_->optimization; }

SessionProfile RuntimeSession::profile() const {
  if (!impl_->profiler) return {};
  SessionProfile p = impl_->profiler->profile();
  // Nodes of control-flow graphs follow the session's own (trace events index those first).
  for (const auto& step : impl_->steps)
    for (const auto& [name, session] : step.kernel->subgraph_sessions()) {
      for (NodeProfile n : session->profile().nodes) {
        n.node = fmt::format("{} / {}", name, n.node);
        n.parent = n.parent.empty() ? name : fmt::format("{} / {}", name, n.parent);
        n.share = p.nodes_us > 0 ? n.total_us / p.nodes_us : 0.0;
        p.nodes.push_back(std::move(n));
      }
    }
  return p;
}

void RuntimeSession::reset_profile() {
  if (impl_->profiler) impl_->profiler->reset();
  for (const auto& step : impl_->steps)
    for (const auto& [name, session] : step.kernel->subgraph_sessions()) const_cast<RuntimeSession*>(session)->reset_profile();
}

SessionMemoryReport RuntimeSession::memory_report() const {
  const Impl& s = *impl_;
  SessionMemoryReport report;
  for (std::size_t id = 0; id < s.slots.size(); ++id)
    if (s.constant_slot[id]) report.weights_bytes += static_cast<int64_t>(s.slots[id].byte_size());
  report.peak_activation_bytes = static_cast<int64_t>(s.buffers->peak_outstanding_bytes());
  report.last_run_values_bytes = s.last_run_values_bytes;
  report.planned_releases = s.planned_releases;
  report.planned_in_place = s.planned_in_place;
  report.last_run_in_place = s.last_run_in_place;
  report.memory_limit_bytes = s.memory_limit;
  return report;
}

ParallelRegionReport RuntimeSession::parallel_region_report() const {
  if (!impl_->options.parallel_region_collector) return {};
  return impl_->options.parallel_region_collector->report();
}

Shape bind_dimensions(const ValueInfo& info, const std::map<std::string, int64_t>& dims,
                      std::vector<UnboundDimension>& unbound) {
  Shape shape = info.shape;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] >= 0) continue;
    const std::string& symbol = d < info.symbols.size() ? info.symbols[d] : std::string();
    const auto it = symbol.empty() ? dims.end() : dims.find(symbol);
    if (it != dims.end()) shape[d] = it->second;
    else unbound.push_back({d, symbol});
  }
  return shape;
}

std::string describe_unbound(const std::vector<UnboundDimension>& unbound) {
  std::string out;
  for (const auto& u : unbound)
    out += fmt::format("{}dimension {} is symbolic ({})", out.empty() ? "" : ", ", u.axis,
                       u.symbol.empty() ? std::string("unnamed") : fmt::format("'{}'", u.symbol));
  return out;
}

}  // namespace onnx_light::runtime
