#pragma once
// Choosing registered keys (kernel + element type, by default the implementation this host
// dispatches to) and looking schemas up by key.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "onnx_light/runtime/cpu_features.h"
#include "onnx_light/runtime/kernel_table.h"
#include "onnx_light/runtime/tuning_key.h"
#include "onnx_light/runtime/tuning_schema.h"

namespace onnx_light::tune {

// Implementation filter value that selects every implementation, not only the dispatched one.
inline constexpr std::string_view kAllImplementations = "all";

struct KeySelection {
  std::vector<std::string> kernels;     // op types; empty: every kernel
  std::vector<int32_t> element_types;   // TensorProto.DataType; empty: every type
  // "" : the implementation this host dispatches to; "all": every one; else that one.
  std::string implementation;
  std::string library;                  // "": any
  std::optional<int32_t> device;        // unset: any

  // True when no filter is set.
  bool empty() const;
  // Literal match of a (cached) key against the filters; "" and "all" accept any implementation.
  bool matches(const runtime::TuningKey& key) const;
};

// Calibratable: the calibration engine has a routine for it (a threshold parameter to search and
// a calibration workload to run it on).
bool is_calibratable(const runtime::KernelDef& def);

// "unknown kernel 'Abz': did you mean Abs?" when no registered key has this op type; nullopt when
// one does.
std::optional<std::string> unknown_kernel_message(const runtime::KernelTable& table, const std::string& kernel);

// Exact-key lookup over a kernel table, plus the ABI check behind `stale`.
class SchemaIndex {
 public:
  explicit SchemaIndex(const runtime::KernelTable& table);
  const runtime::TuningSchema* find(const runtime::TuningKey& key) const;
  // The registered ABIs of the key's identity (all of the key but tuning_abi); empty if unknown.
  const std::set<int32_t>* registered_abis(const runtime::TuningKey& key) const;
  // Same identity registered under another ABI.
  bool is_stale(const runtime::TuningKey& key) const;

 private:
  std::map<runtime::TuningKey, const runtime::TuningSchema*> by_key_;
  std::map<runtime::TuningKey, std::set<int32_t>> abis_;  // key with tuning_abi = 0
};

// The schemas `selection` names, sorted by key, one per key. Where the implementation filter is
// empty each (kernel, element type) yields the implementation dispatched on `features`.
// Throws NotFoundError when a named kernel is unknown or none of its variants passes the filters.
std::vector<const runtime::TuningSchema*> select_schemas(const runtime::KernelTable& table,
                                                         const KeySelection& selection,
                                                         const runtime::CpuFeatures& features);
// The same selection as kernel definitions (the first registered one of each key).
std::vector<const runtime::KernelDef*> select_definitions(const runtime::KernelTable& table,
                                                          const KeySelection& selection,
                                                          const runtime::CpuFeatures& features);

// The one schema for kernel + element type (+ implementation, library, device). Throws
// NotFoundError when there is none.
const runtime::TuningSchema& resolve_schema(const runtime::KernelTable& table, const std::string& kernel,
                                            int32_t element_type, const std::string& implementation,
                                            const std::string& library, int32_t device,
                                            const runtime::CpuFeatures& features);

}  // namespace onnx_light::tune
