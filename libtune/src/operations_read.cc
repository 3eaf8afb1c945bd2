// The read-side operations: list (kernel_tuning_parameters), propose, inspect, load.
#include <algorithm>
#include <iterator>
#include <set>

#include <fmt/format.h>

#include "onnx_light/runtime/tuning_registry.h"
#include "onnx_light/tune/cache_path.h"
#include "onnx_light/tune/operations.h"
#include "operation_support.h"

namespace onnx_light::tune {

using detail::Environment;
using detail::Layers;

namespace {

runtime::TuningKey identity_of(runtime::TuningKey key) {
  key.tuning_abi = 0;
  return key;
}

// The loaded profiles each profile in force shadows (same key, threads and spin class), in one
// pass over both layers: a fleet's cache holds tens of thousands of profiles.
std::map<const CacheProfile*, std::vector<ShadowedProfile>> shadows_by_winner(const Layers& layers,
                                                                              const detail::LoadedIndex& loaded) {
  std::map<const CacheProfile*, std::vector<ShadowedProfile>> result;
  for (const auto& layer : layers.layers) {
    for (std::size_t i = 0; i < layer.file.profiles.size(); ++i) {
      if (layer.classes[i].value != ProfileClass::loaded) continue;
      const CacheProfile& profile = layer.file.profiles[i];
      const auto it = loaded.find({profile.key, profile.host.effective_threads, profile.host.idle_spin});
      if (it == loaded.end() || it->second.profile == &profile) continue;
      result[it->second.profile].push_back(ShadowedProfile{layer.layer, i, profile.host.match});
    }
  }
  return result;
}

// Kernel entries of the selected keys with their cached (local) and active values.
struct EntryScan {
  std::vector<KernelTuningEntry> entries;
  std::vector<Diagnostic> diagnostics;
  std::string path;
  FileStatus status = FileStatus::not_found;
  std::string system_path;
  FileStatus system_status = FileStatus::not_found;
  int64_t threads = 0;
};

EntryScan scan_entries(const KeySelection& selection, const std::string& path_text,
                       std::optional<int64_t> num_threads, bool idle_spin, const OperationContext& context) {
  const Environment environment = detail::resolve(context);
  EntryScan scan;
  scan.threads = environment.session_threads(num_threads);
  const auto definitions = select_definitions(environment.kernels, selection, environment.features);
  const std::filesystem::path path = resolve_cache_path(path_text);
  const SchemaIndex index(environment.kernels);
  const Layers layers = detail::read_layers(path, environment, index);
  scan.path = path.string();
  scan.status = layers.user().file.status;
  if (const auto* system = layers.system()) {
    scan.system_path = system->file.path.string();
    scan.system_status = system->file.status;
  }
  std::set<runtime::TuningKey> identities;
  for (const auto* def : definitions) identities.insert(identity_of(def->schema.key));
  for (const auto& layer : layers.layers) {
    if (auto diagnostic = detail::file_diagnostic(layer)) scan.diagnostics.push_back(std::move(*diagnostic));
    // Problems of this machine's profiles for the selected kernels (other machines' are not news).
    for (std::size_t i = 0; i < layer.file.profiles.size(); ++i) {
      const auto& classification = layer.classes[i];
      const CacheProfile& profile = layer.file.profiles[i];
      if (classification.value == ProfileClass::loaded || !identities.contains(identity_of(profile.key))) continue;
      if (profile.readable() && !profile.host.matches(environment.machine)) continue;
      scan.diagnostics.insert(scan.diagnostics.end(), classification.diagnostics.begin(),
                              classification.diagnostics.end());
    }
  }
  const detail::LoadedIndex loaded = detail::index_loaded(layers);
  auto shadows = shadows_by_winner(layers, loaded);
  const auto snapshot = environment.registry.snapshot();
  for (const auto* def : definitions) {
    const runtime::TuningSchema* schema = &def->schema;
    KernelTuningEntry entry;
    entry.key = schema->key;
    entry.parameter_names = schema->parameter_names();
    entry.defaults = schema->defaults();
    entry.calibratable = is_calibratable(*def);
    if (const auto it = loaded.find({schema->key, scan.threads, idle_spin}); it != loaded.end()) {
      entry.cached_values = it->second.profile->values;
      entry.cached_layer = it->second.layer;
      entry.matched_by = it->second.profile->host.match;
      if (auto found = shadows.find(it->second.profile); found != shadows.end()) entry.shadows = found->second;
    }
    const runtime::TuningValues* published = snapshot ? snapshot->find(schema->key, static_cast<int>(scan.threads), idle_spin)
                                                         : nullptr;
    entry.active_values = published != nullptr ? *published : entry.defaults;
    entry.active_source =
        published != nullptr ? runtime::TuningSource::published_profile : runtime::TuningSource::portable_default;
    scan.entries.push_back(std::move(entry));
  }
  return scan;
}

bool accepts(const KeySelection& filter, std::optional<int64_t> threads, const CacheProfile& profile) {
  if (!profile.readable()) return filter.empty() && !threads;  // partial keys only show unfiltered
  return filter.matches(profile.key) && (!threads || profile.host.effective_threads == *threads);
}

}  // namespace

KernelParametersReport kernel_tuning_parameters(const ParametersOptions& options, const OperationContext& context) {
  EntryScan scan = scan_entries(options.selection, options.path, options.num_threads, options.idle_spin, context);
  KernelParametersReport report;
  report.cache_path = std::move(scan.path);
  report.cache_status = scan.status;
  report.diagnostics = std::move(scan.diagnostics);
  report.kernels = std::move(scan.entries);
  report.effective_threads = scan.threads;
  report.system_path = std::move(scan.system_path);
  report.system_status = scan.system_status;
  return report;
}

ProposalReport propose_kernel_tuning_updates(const ProposeOptions& options, const OperationContext& context) {
  EntryScan scan = scan_entries(options.selection, options.path, options.num_threads, options.idle_spin, context);
  ProposalReport report;
  report.cache_path = std::move(scan.path);
  report.cache_status = scan.status;
  report.diagnostics = std::move(scan.diagnostics);
  report.effective_threads = scan.threads;
  for (auto& entry : scan.entries) {
    if (entry.cached_values) {
      report.covered.push_back(entry);
    } else {
      report.missing.push_back(entry);
      (entry.calibratable ? report.calibratable : report.unsupported).push_back(entry);
    }
    report.selected.push_back(std::move(entry));
  }
  return report;
}

InspectReport inspect_kernel_tuning_cache(const InspectOptions& options, const OperationContext& context) {
  const Environment environment = detail::resolve(context);
  InspectReport report;
  const int64_t threads = environment.session_threads(options.threads);
  // Assigned, not a conditional expression: GCC 12 -O2 reports a false maybe-uninitialized.
  std::optional<int64_t> thread_filter;
  if (options.threads) thread_filter = threads;
  report.effective_threads = threads;
  const std::filesystem::path path = resolve_cache_path(options.path);
  const SchemaIndex index(environment.kernels);
  Environment scope = environment;
  if (options.user_only) scope.system_path.reset();
  Layers layers = detail::read_layers(path, scope, index);  // profiles are moved into the report
  std::vector<const CacheFile*> files;
  for (const auto& layer : layers.layers) files.push_back(&layer.file);
  detail::check_named_kernels(options.filter, environment.kernels, files);
  report.path = path.string();
  report.status = layers.user().file.status;
  if (const auto* system = layers.system()) {
    report.system_path = system->file.path.string();
    report.system_status = system->file.status;
    report.system_profiles = system->file.profiles.size();
  }
  // The profile in force for each condition, and what it shadows, found before the profiles are
  // moved into the report.
  const detail::LoadedIndex in_force = detail::index_loaded(layers);
  auto shadows = shadows_by_winner(layers, in_force);
  // (key, host) of the user layer's profiles, for `shadowed`; only needed when a system layer exists.
  std::set<std::pair<runtime::TuningKey, HostDescriptor>> user_profiles;
  if (layers.system() != nullptr) {
    for (const auto& profile : layers.user().file.profiles) {
      if (profile.readable()) user_profiles.emplace(profile.key, profile.host);
    }
  }
  report.profiles.reserve(layers.user().file.profiles.size());
  for (auto& layer : layers.layers) {
    if (auto diagnostic = detail::file_diagnostic(layer)) report.diagnostics.push_back(std::move(*diagnostic));
    for (std::size_t i = 0; i < layer.file.profiles.size(); ++i) {
      CacheProfile& profile = layer.file.profiles[i];
      if (!accepts(options.filter, thread_filter, profile)) continue;
      Classification& classification = layer.classes[i];  // moved into the report, as the profile
      InspectedProfile inspected;
      inspected.index = i;
      inspected.layer = layer.layer;
      inspected.classification = classification.value;
      inspected.local = classification.value == ProfileClass::loaded && profile.host.effective_threads == threads &&
                        profile.host.idle_spin == options.idle_spin;
      inspected.shadowed = layer.layer == CacheLayer::system && profile.readable() &&
                           user_profiles.contains({profile.key, profile.host});
      if (classification.value == ProfileClass::loaded) {
        inspected.matched_by = profile.host.match;
        const detail::LocalProfile& winner =
            in_force.at(std::make_tuple(profile.key, profile.host.effective_threads, profile.host.idle_spin));
        inspected.in_force = winner.profile == &profile;
        if (auto found = shadows.find(&profile); found != shadows.end()) inspected.shadows = std::move(found->second);
        if (!inspected.in_force) {
          inspected.shadowed = true;
          inspected.shadowed_by = ShadowedProfile{winner.layer, winner.index, winner.profile->host.match};
        }
      }
      inspected.profile = std::move(profile);
      report.profiles.push_back(std::move(inspected));
      report.diagnostics.insert(report.diagnostics.end(), std::make_move_iterator(classification.diagnostics.begin()),
                                std::make_move_iterator(classification.diagnostics.end()));
    }
  }
  return report;
}

LoadReport load_kernel_tuning_cache(const LoadOptions& options, const OperationContext& context) {
  const Environment environment = detail::resolve(context);
  LoadReport report;
  const int64_t threads = environment.session_threads(options.num_threads);
  std::optional<int64_t> thread_filter;
  if (options.num_threads) thread_filter = threads;
  report.effective_threads = threads;
  // Resolve the selection first: an unknown kernel is an error before anything is published.
  std::vector<const runtime::TuningSchema*> selected;
  if (!options.selection.empty()) {
    selected = select_schemas(environment.kernels, options.selection, environment.features);
  }
  const std::filesystem::path path = resolve_cache_path(options.path);
  const SchemaIndex index(environment.kernels);
  const Layers layers = detail::read_layers(path, environment, index);
  report.path = path.string();
  report.status = layers.user().file.status;

  detail::LoadedIndex publish;  // the profile in force for each condition
  for (const auto& layer : layers.layers) {
    if (auto diagnostic = detail::file_diagnostic(layer)) report.diagnostics.push_back(std::move(*diagnostic));
    for (std::size_t i = 0; i < layer.file.profiles.size(); ++i) {
      const CacheProfile& profile = layer.file.profiles[i];
      if (!accepts(options.selection, thread_filter, profile)) continue;
      const Classification& classification = layer.classes[i];
      switch (classification.value) {
        case ProfileClass::loaded:
          report.loaded.push_back(profile.key);
          detail::offer_loaded(publish, detail::LocalProfile{&profile, layer.layer, i});
          break;
        case ProfileClass::stale: report.stale.push_back(profile.key); break;
        case ProfileClass::incompatible: report.incompatible.push_back(profile.key); break;
        case ProfileClass::invalid: report.invalid.push_back(profile.key); break;
      }
      report.diagnostics.insert(report.diagnostics.end(), classification.diagnostics.begin(),
                                classification.diagnostics.end());
    }
  }
  for (const auto* schema : selected) {
    if (!publish.contains({schema->key, threads, options.idle_spin})) report.missing.push_back(schema->key);
  }
  report.loaded = detail::unique_sorted(std::move(report.loaded));
  report.stale = detail::unique_sorted(std::move(report.stale));
  report.incompatible = detail::unique_sorted(std::move(report.incompatible));
  report.invalid = detail::unique_sorted(std::move(report.invalid));

  if (layers.any_loaded()) {
    std::vector<runtime::PublishedProfile> profiles;
    profiles.reserve(publish.size());
    for (const auto& [id, in_force] : publish) {
      profiles.push_back(runtime::PublishedProfile{in_force.profile->key, static_cast<int>(std::get<1>(id)),
                                                   in_force.profile->values, std::get<2>(id)});
    }
    report.published_profiles = profiles.size();
    report.published_generation = environment.registry.publish(std::move(profiles), runtime::PublishMode::merge);
    report.published = true;
  } else {
    report.published_generation = environment.registry.published_generation();
  }
  return report;
}

}  // namespace onnx_light::tune
