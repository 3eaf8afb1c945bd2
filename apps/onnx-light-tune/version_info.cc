#include "version_info.h"

#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "onnx_light/runtime/cpu_features.h"
#include "onnx_light/runtime/kernel_table.h"
#include "onnx_light/runtime/runtime_parameters.h"

namespace onnx_light::cli {

std::string version_text() {
  std::set<std::string> implementations;
  for (const auto& def : runtime::cpu_kernel_table().definitions()) implementations.insert(def.implementation);
  const auto& features = runtime::host_cpu_features();
  return fmt::format(
      "onnx-light-tune {}\ncompiler: {}\nbuild type: {}\nkernel implementations: {}\nkernels: {}\n"
      "host: {} physical cores, features: {}\n",
      ONNX_LIGHT_VERSION, ONNX_LIGHT_COMPILER, ONNX_LIGHT_BUILD_TYPE, fmt::join(implementations, ", "),
      runtime::cpu_kernel_table().op_types().size(), runtime::physical_core_count(),
      fmt::join(features.names(), " "));
}

}  // namespace onnx_light::cli
