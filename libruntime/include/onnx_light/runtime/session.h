#pragma once
// A session runs one model. Construction checks the whole graph (every unsupported node is
// listed at once); initialisation resolves tuning values once; run never reads the registry.
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "onnx_light/runtime/graph_optimizer.h"
#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/parallel_region_collector.h"
#include "onnx_light/runtime/runtime_parameters.h"
#include "onnx_light/runtime/session_profile.h"
#include "onnx_light/runtime/tensor.h"
#include "onnx_light/runtime/tuning_key.h"
#include "onnx_light/runtime/tuning_value.h"
#include "onnx_light/runtime/value.h"

namespace onnx_light::runtime {

class KernelTable;
class ThreadPool;
class TuningRegistry;

struct RuntimeSessionOptions {
  RuntimeParameters parameters;
  std::shared_ptr<ParallelRegionCollector> parallel_region_collector;
  TuningRegistry* registry = nullptr;       // nullptr: process_tuning_registry()
  const KernelTable* kernels = nullptr;     // nullptr: cpu_kernel_table()
  std::shared_ptr<ThreadPool> thread_pool;  // nullptr: shared or its own, as share_thread_pool says
  // Without thread_pool: true takes the process's pool for these parameters (threads, spin,
  // placement) from process_thread_pools(), shared with every other such session; false starts a
  // pool of the session's own.
  bool share_thread_pool = true;
  // A Relu whose input comes only from a kernel that can apply it as it stores (the packed
  // MatMul/Gemm) runs inside that kernel. Results are bit-identical either way.
  bool fuse_activations = true;
  // Denormal floats are flushed to zero (FTZ) and read as zero (DAZ) while the session's kernels
  // run, on every thread (x86). Arithmetic on denormals is ~100x slower per operation; results
  // differ from IEEE 754 only where a value or an intermediate is denormal (below ~1.2e-38 for
  // float). false keeps IEEE denormals (bit-exact to a reference that keeps them). Either way the
  // calling thread's own mode is restored after each run.
  bool flush_denormals = true;
  // Graph rewrites applied once at creation (graph_optimizer.h); `none` runs the graph as written.
  OptimizationLevel optimization = OptimizationLevel::all;
  // Per-node times, the implementation that ran and the parallel regions, read by
  // RuntimeSession::profile(). Off, a run reads no clock; on, two clock reads per node and per
  // parallel block. Trace events past `profile_event_capacity` are counted, not kept.
  bool profile = false;
  // With profile: per-node counters (hardware_counters.h) of the calling thread over each node and
  // of the pool's workers over the node's blocks; each thread reads its own (two read() calls per
  // node and per block). Unavailable counters are reported, never fatal.
  bool profile_counters = false;
  // Opens each counter (empty: perf_event_open). Tests substitute refusals here.
  CounterOpener counter_opener;
  std::size_t profile_event_capacity = std::size_t{1} << 16;
  // A model importing an ai.onnx opset newer than kNewestImplementedOpset (model_validation.h) is
  // refused unless this is set; it then runs with the kernels of the newest implemented opset.
  bool allow_newer_opset = false;
  // Most bytes of tensor memory the session holds at once: its weights, every value a run computes
  // (outputs the caller still holds included), and what the optimizer's constant folding makes. A
  // value that would pass it is not allocated: the run fails with MemoryLimitError naming the node,
  // the output, its shape and the bytes. Kernels' small scratch buffers are not counted.
  // 0: default_session_memory_limit() (memory_limit.h), three quarters of physical memory.
  int64_t max_memory_bytes = 0;
};

// Opset imports by domain ("" is ai.onnx).
using OpsetImports = std::map<std::string, int64_t>;
OpsetImports default_opset(int64_t version);

struct KernelContext {
  OpsetImports opsets;
  KernelContext() = default;
  explicit KernelContext(OpsetImports imports) : opsets(std::move(imports)) {}
};

// Named tensors: inputs before a run, inputs and outputs after it.
class RuntimeContext {
 public:
  RuntimeContext() = default;
  explicit RuntimeContext(KernelContext kernel_context) : kernel_context_(std::move(kernel_context)) {}
  void set(const std::string& name, Tensor tensor);
  // Throws NotFoundError naming the value.
  const Tensor& get(const std::string& name) const;
  bool contains(const std::string& name) const;
  void erase(const std::string& name);
  std::vector<std::string> names() const;
  const KernelContext& kernel_context() const { return kernel_context_; }
  std::map<std::string, Tensor>& values() { return values_; }

 private:
  KernelContext kernel_context_;
  std::map<std::string, Tensor> values_;
};

enum class TuningSource { portable_default, published_profile };
std::string_view tuning_source_name(TuningSource source);

// The values one node's kernel runs with, and where they came from.
struct ResolvedTuning {
  std::string node;
  TuningKey key;
  TuningValues values;
  TuningSource source = TuningSource::portable_default;
  uint64_t generation = 0;
};

// What a session's values occupy. Intermediate values go back to the session's buffer pool after
// the last node that reads them, so later values reuse their blocks (best fit).
struct SessionMemoryReport {
  int64_t weights_bytes = 0;            // initializers and Constant outputs, held for the session's life
  int64_t peak_activation_bytes = 0;    // most bytes of the session's pool held at once, since creation
  int64_t last_run_values_bytes = 0;    // bytes of every value the last run computed (unplanned: sum of all)
  int64_t planned_releases = 0;         // values released before the end of a run
  int64_t planned_in_place = 0;         // nodes allowed to write over their dying input 0
  int64_t last_run_in_place = 0;        // of those, how many did in the last run (same type and shape)
  int64_t memory_limit_bytes = 0;       // RuntimeSessionOptions::max_memory_bytes as applied
};

struct ValueInfo {
  std::string name;
  ElementType element_type = ElementType::undefined;
  // -1 for a symbolic or unknown dimension; `symbols` holds its name ("" when unnamed).
  Shape shape;
  std::vector<std::string> symbols;
  bool has_shape = false;
  // seq(tensor(T)) values are sequences of element_type (no shape); `optional` values may be
  // absent (ONNX optional(...)). Both go through run(values) (value.h).
  ValueKind kind = ValueKind::tensor;
  bool optional = false;
};

// A symbolic dimension of an input that the caller's bindings leave open.
struct UnboundDimension {
  std::size_t axis = 0;
  std::string symbol;  // "" when the model leaves the dimension unnamed
};
// `info`'s declared shape with each symbolic dimension taken from `dims` (symbol -> size); the
// ones `dims` cannot bind are appended to `unbound` and left -1, so that a caller can name them all.
Shape bind_dimensions(const ValueInfo& info, const std::map<std::string, int64_t>& dims,
                      std::vector<UnboundDimension>& unbound);
// "dimension 0 is symbolic ('N'), dimension 2 is symbolic (unnamed)".
std::string describe_unbound(const std::vector<UnboundDimension>& unbound);

class RuntimeSession {
 public:
  // Throws ModelError (bad graph) or UnsupportedError listing every offending node.
  RuntimeSession(Model model, RuntimeSessionOptions options = {});
  ~RuntimeSession();
  RuntimeSession(const RuntimeSession&) = delete;
  RuntimeSession& operator=(const RuntimeSession&) = delete;

  // Resolves tuning from the registry and configures kernels; the first run does it implicitly.
  void initialize();
  bool initialized() const;
  // Reads graph inputs from `context`, writes graph outputs into it.
  // Throws InputError naming the input (missing, wrong type, rank or dims).
  //
  // Threads: runs of one session are serialized (a second thread calling run waits for the first
  // to finish); sessions may run concurrently, also on a shared pool, whose parallel regions then
  // queue (ThreadPool::parallel_for).
  //
  // Ownership and aliasing (both run forms):
  // - Inputs are only read, never written, and the session keeps no reference to them after a run.
  // - run(context) never writes a tensor the context holds: results are computed in session
  //   buffers and replace the context's entries only when every node has run. A failed run leaves
  //   the context exactly as it was. A tensor the caller copied out of the context (it shares the
  //   storage) keeps its values for as long as it lives; last run's outputs return to the session's
  //   pool once nobody holds them, so a loop alternates between two buffers per output.
  void run(RuntimeContext& context);
  // The steady-state form: inputs in graph-input order (an empty tensor takes the input's
  // initializer default), outputs in graph-output order; nothing is looked up by name. An entry of
  // `outputs` that is caller memory (Tensor::borrow) or a buffer nobody else holds is written in
  // place when the result has its type and shape, so a loop over the same shapes allocates
  // nothing; any other entry is replaced by a new tensor (the caller's memory is not written).
  // - Two entries of `outputs` whose bytes overlap: refused with InputError naming both.
  // - An entry whose bytes overlap an input's: the result is computed in a private buffer and
  //   copied into the caller's memory after the last node, so `run({x}, {x})` is correct.
  // - On failure every entry of `outputs` is the caller's own tensor again; memory written in
  //   place holds whatever the kernels stored before the failure (as with ONNX Runtime's bound
  //   outputs); entries that were never written in place are unchanged.
  // Throws InputError on wrong counts and as run(context) does.
  // Both tensor forms refuse a graph with a sequence-typed input or output (InputError naming it);
  // an absent optional tensor is an empty tensor.
  void run(std::span<const Tensor> inputs, std::span<Tensor> outputs);
  // Any graph, sequences and optionals included (value.h): inputs in graph-input order (none takes
  // the input's initializer default, or is an absent optional; a missing required input is an
  // InputError), outputs in graph-output order, each replaced by the result (none for an absent
  // optional). Nothing is written in place. A sequence output holds the run's own copies of the
  // tensors its kernels inserted; a sequence passed through unchanged (Identity of an input) shares
  // the input's tensors, which the session never writes.
  void run(std::span<const Value> inputs, std::span<Value> outputs);

  const std::vector<ValueInfo>& inputs() const;
  const std::vector<ValueInfo>& outputs() const;
  int threads() const;
  // The pool the session runs on (ThreadPool::id): equal for sessions that share one.
  uint64_t thread_pool_id();
  // Per node, after initialisation.
  std::vector<ResolvedTuning> resolved_tuning() const;
  ParallelRegionReport parallel_region_report() const;
  // What profiling recorded since the session was built or reset_profile() (all runs, both
  // forms); empty when RuntimeSessionOptions::profile is off. Not concurrent with run().
  SessionProfile profile() const;
  void reset_profile();
  SessionMemoryReport memory_report() const;
  // The model as it runs (after the optimizer).
  const Model& model() const;
  const OptimizationReport& optimization_report() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace onnx_light::runtime
