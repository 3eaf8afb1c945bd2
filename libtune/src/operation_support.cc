#include "operation_support.h"

#include <algorithm>

#include <fmt/format.h>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/kernel_table.h"
#include "onnx_light/tune/cache_path.h"

#ifndef ONNX_LIGHT_VERSION
#define ONNX_LIGHT_VERSION "0.0.0"
#endif

namespace onnx_light::tune {

std::string_view tool_version() { return ONNX_LIGHT_VERSION; }

void work_as_host(OperationContext& context, const HostDescriptor& host, runtime::CpuFeatures& features) {
  features = dispatch_features(host);
  context.machine = host;
  context.machine_threads = host.effective_threads;
  context.features = &features;
}

namespace detail {

Environment resolve(const OperationContext& context) {
  return Environment{
      context.kernels != nullptr ? *context.kernels : runtime::cpu_kernel_table(),
      context.registry != nullptr ? *context.registry : runtime::process_tuning_registry(),
      context.features != nullptr ? *context.features : runtime::host_cpu_features(),
      context.machine ? context.machine->with_threads(0) : this_machine(),
      context.system_cache_path ? (context.system_cache_path->empty()
                                       ? std::nullopt
                                       : std::optional<std::filesystem::path>(*context.system_cache_path))
                                : system_kernel_tuning_cache_path(),
      context.tool_version.empty() ? std::string(tool_version()) : context.tool_version,
      context.machine_threads,
  };
}

int64_t Environment::session_threads(std::optional<int64_t> requested) const {
  if (machine_threads && requested.value_or(0) == 0) return resolve_threads(*machine_threads);
  return resolve_threads(requested.value_or(0));
}

bool Layers::any_loaded() const {
  return std::any_of(layers.begin(), layers.end(), [](const Layer& l) { return l.file.status == FileStatus::loaded; });
}

namespace {

bool same_file(const std::filesystem::path& a, const std::filesystem::path& b) {
  std::error_code error;
  if (std::filesystem::equivalent(a, b, error)) return true;
  return a.lexically_normal() == b.lexically_normal();
}

}  // namespace

Layers read_layers(const std::filesystem::path& user_path, const Environment& environment,
                   const SchemaIndex& schemas) {
  Layers result;
  Layer& user = result.layers.emplace_back();
  user.layer = CacheLayer::user;
  user.file = read_cache_file(user_path);
  if (environment.system_path && !same_file(*environment.system_path, user_path)) {
    Layer system;
    system.layer = CacheLayer::system;
    system.file = read_cache_file(*environment.system_path);
    result.layers.push_back(std::move(system));
  }
  for (Layer& layer : result.layers) {
    layer.classes = classify_profiles(layer.file, layer.layer, schemas, environment.machine);
  }
  return result;
}

UpdateOptions update_options_for(const OperationContext& context, const runtime::KernelTable& kernels) {
  UpdateOptions options;
  options.kernels = &kernels;
  options.on_lock_wait = context.on_lock_wait;
  options.lock_timeout_ms = context.lock_timeout_ms;
  return options;
}

void check_named_kernels(const KeySelection& selection, const runtime::KernelTable& kernels,
                         const std::vector<const CacheFile*>& files) {
  for (const auto& kernel : selection.kernels) {
    auto message = unknown_kernel_message(kernels, kernel);
    if (!message) continue;
    const bool cached = std::any_of(files.begin(), files.end(), [&](const CacheFile* file) {
      return std::any_of(file->profiles.begin(), file->profiles.end(),
                         [&](const CacheProfile& profile) { return profile.key.kernel == kernel; });
    });
    if (!cached) throw NotFoundError(*message + " (and no cached profile names it)");
  }
}

std::optional<Diagnostic> file_diagnostic(const Layer& layer) {
  const FileStatus status = layer.file.status;
  if (status == FileStatus::loaded || status == FileStatus::not_found) return std::nullopt;
  Diagnostic diagnostic;
  if (layer.layer == CacheLayer::system) {
    diagnostic.message = fmt::format("system cache {} is {} ({}); its profiles are ignored",
                                     layer.file.path.string(), file_status_name(status), layer.file.error);
  } else if (status == FileStatus::malformed) {
    diagnostic.message = fmt::format("{} is malformed ({}); no profile was read from it and updates leave it "
                                     "unchanged: fix it, or remove it with 'onnx-light-tune remove'",
                                     layer.file.path.string(), layer.file.error);
  } else {
    diagnostic.message = fmt::format("{} is unreadable ({}); check its permissions", layer.file.path.string(),
                                     layer.file.error);
  }
  return diagnostic;
}

bool outranks(const LocalProfile& candidate, const LocalProfile& current) {
  const HostDescriptor& a = candidate.profile->host;
  const HostDescriptor& b = current.profile->host;
  const int rank_a = host_match_specificity(a.match), rank_b = host_match_specificity(b.match);
  if (rank_a != rank_b) return rank_a > rank_b;
  return a.match == HostMatch::isa && candidate.layer == current.layer && a.features.size() > b.features.size();
}

void offer_loaded(LoadedIndex& index, const LocalProfile& candidate) {
  const HostDescriptor& host = candidate.profile->host;
  auto [it, inserted] =
      index.try_emplace(std::make_tuple(candidate.profile->key, host.effective_threads, host.idle_spin), candidate);
  if (!inserted && outranks(candidate, it->second)) it->second = candidate;
}

LoadedIndex index_loaded(const Layers& layers) {
  LoadedIndex index;
  for (const Layer& layer : layers.layers) {  // user first: it stays at equal specificity
    for (std::size_t i = 0; i < layer.file.profiles.size(); ++i) {
      if (layer.classes[i].value != ProfileClass::loaded) continue;
      offer_loaded(index, LocalProfile{&layer.file.profiles[i], layer.layer, i});
    }
  }
  return index;
}

std::vector<runtime::TuningKey> unique_sorted(std::vector<runtime::TuningKey> keys) {
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

}  // namespace detail
}  // namespace onnx_light::tune
