#pragma once
// A registry that runs the named operators' kernels in parallel even on tiny inputs (every parallel
// threshold at 1), for tests that compare results across thread counts.
#include <initializer_list>
#include <memory>
#include <string_view>
#include <vector>

#include "onnx_light/runtime/kernel_table.h"
#include "onnx_light/runtime/tuning_registry.h"

namespace onnx_light::test {

inline std::unique_ptr<runtime::TuningRegistry> parallel_registry(std::initializer_list<std::string_view> op_types,
                                                                  int max_threads = 3) {
  auto registry = std::make_unique<runtime::TuningRegistry>();
  std::vector<runtime::PublishedProfile> profiles;
  for (const auto& def : runtime::cpu_kernel_table().definitions()) {
    bool named = false;
    for (std::string_view op : op_types) named = named || def.op_type == op;
    if (!named) continue;
    runtime::TuningValues values = def.schema.defaults();
    for (const auto& spec : def.schema.parameters)
      if (spec.role == runtime::ParameterRole::threshold) values[spec.name] = int64_t{1};
    for (int threads = 1; threads <= max_threads; ++threads) profiles.push_back({def.schema.key, threads, values});
  }
  registry->publish(std::move(profiles));
  return registry;
}

}  // namespace onnx_light::test
