#pragma once
// The kernel life cycle: create (validate attributes, once per node), apply_tuning (copy typed
// tuning values, once per session initialisation), run (every call; reads nothing global).
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <onnx/onnx_pb.h>

#include "onnx_light/runtime/element_type.h"
#include "onnx_light/runtime/tensor.h"
#include "onnx_light/runtime/thread_pool.h"
#include "onnx_light/runtime/tuning_value.h"
#include "onnx_light/runtime/value.h"

namespace onnx_light::runtime {

class RuntimeSession;

// Builds the sessions of a control-flow node's graphs (If's branches), sharing the enclosing
// session's kernels, tuning registry, thread pool and options. `outer` are the names the graph
// reads from the enclosing scopes, with their element types: the built session takes them as its
// graph inputs, in that order. `outer_kinds` tells which of them are sequences (value.h; empty: all
// tensors); an outer sequence is declared optional in the built graph, so that an absent one reaches
// the kernel that reads it (which names it) instead of failing the whole graph.
class SubgraphBuilder {
 public:
  virtual ~SubgraphBuilder() = default;
  virtual std::unique_ptr<RuntimeSession> build(const onnx::GraphProto& graph, const std::vector<std::string>& outer,
                                                const std::vector<ElementType>& outer_types,
                                                const std::string& label,
                                                const std::vector<ValueKind>& outer_kinds = {}) const = 0;
};

// What a kernel sees when it is created for one node.
struct KernelCreateInfo {
  const onnx::NodeProto& node;
  int64_t opset = 0;                     // the node's domain opset version
  // Undefined for omitted optional inputs. A control-flow node's implicit inputs (the outer values
  // its graphs read, `implicit_inputs`) follow its own inputs here, in constant_inputs and in the
  // execution's inputs.
  std::vector<ElementType> input_types;
  // Inputs whose values are known before any run (initializers, Constant outputs); nullptr otherwise.
  std::vector<const Tensor*> constant_inputs;
  std::vector<std::string> implicit_inputs;
  const SubgraphBuilder* subgraphs = nullptr;  // set for nodes with graph attributes
  // Per input (same order as input_types): a tensor or a sequence (value.h); for a sequence,
  // input_types holds its element type. Empty or shorter: tensors.
  std::vector<ValueKind> input_kinds;
  ValueKind input_kind(std::size_t index) const {
    return index < input_kinds.size() ? input_kinds[index] : ValueKind::tensor;
  }

  // Attribute access; throw UnsupportedError/ModelError naming the node and attribute.
  const onnx::AttributeProto* attribute(std::string_view name) const;
  int64_t int_attribute(std::string_view name, int64_t fallback) const;
  float float_attribute(std::string_view name, float fallback) const;
  std::string string_attribute(std::string_view name, const std::string& fallback) const;
  std::vector<int64_t> ints_attribute(std::string_view name) const;
  bool has_attribute(std::string_view name) const { return attribute(name) != nullptr; }
  // "Abs node 'n0'" for messages.
  std::string node_label() const;
};

// Everything a kernel needs while it runs. Outputs are allocated through `output`, which reuses
// the previous run's buffer when type and shape repeat and nobody else holds it.
class KernelExecution {
 public:
  virtual ~KernelExecution() = default;
  virtual std::size_t input_count() const = 0;
  // nullptr for an omitted optional input.
  virtual const Tensor* input(std::size_t index) const = 0;
  virtual std::size_t output_count() const = 0;
  virtual Tensor& output(std::size_t index, ElementType type, const Shape& shape) = 0;
  // The same for a kernel that writes every element before reading any: new storage is not
  // zero-filled (the cost that dominates a fresh large output).
  virtual Tensor& output_for_overwrite(std::size_t index, ElementType type, const Shape& shape) {
    return output(index, type, shape);
  }
  // Threads of the session's pool.
  virtual int threads() const = 0;
  // A parallel region recorded under this node's label; returns admitted participants.
  virtual int parallel_for(int64_t n, int64_t grain, int admitted,
                           FunctionRef<void(int64_t, int64_t)> fn) = 0;
  // Node label for error messages ("Add node 'sum'").
  virtual const std::string& label() const = 0;
  // Participants for `work` measured against a parallel threshold (`minimum`, the same unit):
  // all of the pool from the threshold up, else one. Every threshold decision goes through here
  // so that a profiling session can report each node's work in its threshold's unit
  // (NodeProfile::threshold_work), which model-driven calibration places thresholds around.
  int admitted_threads(int64_t work, int64_t minimum) const {
    note_threshold_work(work);
    return admitted_threads_for(work, minimum, threads());
  }

  const Tensor& required_input(std::size_t index) const;

  // Sequences (value.h), for kernels whose output_kinds() name one. A sequence input is never
  // seen through input(), which gives nullptr for it; sequence_input gives nullptr for an omitted
  // input, an absent optional, or a tensor input.
  virtual const TensorSequence* sequence_input(std::size_t index) const {
    (void)index;
    return nullptr;
  }
  // Throws InputError naming the node when the input is absent.
  const TensorSequence& required_sequence_input(std::size_t index) const;
  // Stores a sequence output (the kernel's output_kinds() says output `index` is a sequence).
  virtual void set_sequence_output(std::size_t index, TensorSequence sequence);
  // Makes output `index` none: an absent optional (an empty tensor or no sequence).
  virtual void set_none_output(std::size_t index);
  // Called by admitted_threads (kernels call that); a profiling session keeps the node's largest
  // work per call, and wrapping executions forward it to the one they wrap.
  virtual void note_threshold_work(int64_t work) const { (void)work; }
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  // Values are complete and validated against the kernel's schema.
  virtual void apply_tuning(const TuningValues& values) { (void)values; }
  virtual void run(KernelExecution& execution) = 0;
  // Asks the kernel to apply ONNX Relu to its only output as it stores it, so that the session can
  // drop the Relu node that follows (one pass over the output instead of two, as ONNX Runtime's
  // Gemm + activation fusion). Returns false, changing nothing, when the kernel cannot.
  virtual bool fuse_relu() { return false; }
  // True when output 0 may be written into input 0's own storage (in place): every output element
  // depends only on the inputs' elements at its own index, which the kernel reads before it writes
  // that element, and output 0 is requested with output_for_overwrite. The session then lets an
  // elementwise node whose input 0 dies with it write over that input instead of taking a buffer.
  virtual bool may_overwrite_input0() const { return false; }
  // The code path the last run actually took, when it is not simply the definition's
  // implementation (e.g. "avx512" registered, "portable_loop" ran for a depthwise Conv whose groups
  // are thinner than the register tile). Self-describing, XNNPACK-style: "dwconv_3x3s1_avx512".
  // Empty: the definition's implementation ran. Profiles print this, so it must say what ran.
  virtual std::string_view variant() const { return {}; }
  // Output element types the kernel worked out while it was created (If: its branches' outputs);
  // empty: the definition's output_types decide.
  virtual std::vector<ElementType> inferred_output_types() const { return {}; }
  // Which outputs are sequences (value.h), worked out at creation; empty: every output is a tensor.
  // A sequence output's element type is its entry of the output types.
  virtual std::vector<ValueKind> output_kinds() const { return {}; }
  // The sessions a control-flow kernel runs its graphs in, each with its name ("If node 'x'
  // then_branch"): their profiles show under the enclosing session's.
  virtual std::vector<std::pair<std::string, const RuntimeSession*>> subgraph_sessions() const { return {}; }
};

using KernelFactory = std::function<std::unique_ptr<Kernel>(const KernelCreateInfo&)>;
// Output element types from the creation info (e.g. Cast reads `to`, Equal gives bool).
using OutputTypeFunction = std::function<std::vector<ElementType>(const KernelCreateInfo&)>;

}  // namespace onnx_light::runtime
