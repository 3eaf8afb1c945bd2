#pragma once
// The explicit kernel table, keyed by (domain, op type, opset range, element type), with an
// ordered list of implementations per key: the fastest first, the portable reference last.
// Built by RegisterCpuKernels; nothing registers itself at static initialisation.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "onnx_light/runtime/calibration_workload.h"
#include "onnx_light/runtime/cpu_features.h"
#include "onnx_light/runtime/element_type.h"
#include "onnx_light/runtime/kernel.h"
#include "onnx_light/runtime/tuning_schema.h"

namespace onnx_light::runtime {

struct KernelDef {
  std::string domain;  // "" is ai.onnx
  std::string op_type;
  int since_version = 1;
  int end_version = 1 << 30;  // inclusive
  ElementType element_type = ElementType::float32;
  int type_input = 0;  // the input whose element type selects this kernel
  std::string implementation = "portable";
  // Empty when usable on `features`, else why not ("needs avx2").
  std::function<std::string(const CpuFeatures&)> unavailable_reason;
  TuningSchema schema;  // schema.key names this exact variant
  KernelFactory create;
  OutputTypeFunction output_types;  // default: every output has the selecting input's type
  // How calibration exercises this kernel; empty when it cannot be calibrated automatically.
  CalibrationWorkloadFunction calibration_workload;
  int calibration_variants = 1;
  // Elements of the largest tensor of a calibration case of `work_size`, for the memory budget;
  // unset: work_size itself (elementwise kernels, whose work is their element count).
  std::function<int64_t(int64_t work_size)> calibration_elements;
};

// The outcome of choosing an implementation for one node.
struct KernelChoice {
  const KernelDef* def = nullptr;               // nullptr when nothing fits
  std::vector<std::string> skipped;             // "avx2: needs avx2" for every candidate passed over
  std::string miss_reason;                      // why def is nullptr
};

class KernelTable {
 public:
  // Adds a definition; throws InvalidValueError on an overlapping (op, type, opset, implementation).
  void add(KernelDef def);
  KernelChoice choose(std::string_view domain, std::string_view op_type, int64_t opset, ElementType type,
                      const CpuFeatures& features) const;
  // Every definition, in registration order.
  const std::vector<KernelDef>& definitions() const { return defs_; }
  std::vector<std::string> op_types() const;
  // True when some definition exists for (domain, op type), whatever the type or opset.
  bool implements(std::string_view domain, std::string_view op_type) const;
  // The definition whose schema key is `key`, or nullptr.
  const KernelDef* find_by_key(const TuningKey& key) const;
  // The implementation this host dispatches to for (op, type) of `domain` at the newest opset;
  // empty when none.
  std::string dispatched_implementation(std::string_view op_type, ElementType type, const CpuFeatures& features,
                                        std::string_view domain = "") const;

 private:
  std::vector<KernelDef> defs_;
  std::map<std::tuple<std::string, std::string, int32_t>, std::vector<std::size_t>> index_;
};

// Registers every CPU kernel of libruntime into `table`.
void RegisterCpuKernels(KernelTable& table);
// The process-wide CPU kernel table (built once by RegisterCpuKernels on first use).
const KernelTable& cpu_kernel_table();

}  // namespace onnx_light::runtime
