// The write-side operations: set and remove.
#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cache_text.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/tune/cache_path.h"
#include "onnx_light/tune/cache_update.h"
#include "onnx_light/tune/operations.h"
#include "operation_support.h"

namespace onnx_light::tune {

using runtime::TuningValue;
using runtime::TuningValues;

runtime::TuningValues parse_assignments(const runtime::TuningSchema& schema,
                                        const std::vector<std::string>& assignments) {
  TuningValues values;
  for (const auto& assignment : assignments) {
    const auto equals = assignment.find('=');
    if (equals == std::string::npos || equals == 0) {
      throw InvalidValueError(fmt::format("'{}' is not NAME=VALUE (e.g. parallel.minimum_elements=16384)", assignment));
    }
    const std::string name = assignment.substr(0, equals);
    const runtime::ParameterSpec* spec = schema.find(name);
    if (spec == nullptr) {
      throw NotFoundError(fmt::format("{} has no parameter '{}'; its parameters are: {}", schema.key.to_string(), name,
                                      fmt::join(schema.parameter_names(), ", ")));
    }
    TuningValue value = runtime::parse_value(std::string_view(assignment).substr(equals + 1), spec->type, name);
    if (!values.emplace(name, std::move(value)).second) {
      throw InvalidValueError(fmt::format("'{}' is given twice", name));
    }
  }
  return values;
}

namespace {

// Checks the caller's values: unknown names first (NotFoundError), then types
// (TypeMismatchError), then rules (InvalidValueError); every problem of the worst kind is named.
TuningValues validate_given(const runtime::TuningSchema& schema, const TuningValues& given) {
  std::vector<std::string> unknown, mistyped, broken;
  TuningValues values;
  for (const auto& [name, original] : given) {
    const runtime::ParameterSpec* spec = schema.find(name);
    if (spec == nullptr) {
      unknown.push_back(fmt::format("'{}'", name));
      continue;
    }
    TuningValue value = original;
    // An integer is a fine double (Python users write 1 for 1.0); nothing else converts.
    if (spec->type == runtime::ValueType::float64 && std::holds_alternative<int64_t>(value)) {
      value = static_cast<double>(std::get<int64_t>(value));
    }
    if (runtime::value_type_of(value) != spec->type) {
      mistyped.push_back(fmt::format("'{}' must be {}, got {} {}", name, runtime::value_type_name(spec->type),
                                     runtime::value_type_name(runtime::value_type_of(value)),
                                     runtime::format_value(value)));
      continue;
    }
    if (const auto* text = std::get_if<std::string>(&value); text != nullptr && !is_valid_utf8(*text)) {
      broken.push_back(fmt::format("'{}' is not valid UTF-8", name));
      continue;
    }
    if (std::string message = spec->validate(value); !message.empty()) {
      broken.push_back(std::move(message));
      continue;
    }
    values.emplace(name, std::move(value));
  }
  const std::string key = schema.key.to_string();
  if (!unknown.empty()) {
    throw NotFoundError(fmt::format("{}: unknown parameter {}; its parameters are: {}", key, fmt::join(unknown, ", "),
                                    fmt::join(schema.parameter_names(), ", ")));
  }
  if (!mistyped.empty()) throw TypeMismatchError(fmt::format("{}: {}", key, fmt::join(mistyped, "; ")));
  if (!broken.empty()) throw InvalidValueError(fmt::format("{}: {}; nothing was written", key, fmt::join(broken, "; ")));
  return values;
}

const CacheProfile* find_profile(const CacheFile& file, const runtime::TuningKey& key, const HostDescriptor& host) {
  for (const auto& profile : file.profiles) {
    if (profile.readable() && profile.key == key && profile.host == host) return &profile;
  }
  return nullptr;
}

// A cached value usable to fill an omitted parameter: present, of the right type, valid.
const TuningValue* usable(const CacheProfile* profile, const runtime::ParameterSpec& spec) {
  if (profile == nullptr) return nullptr;
  const auto it = profile->values.find(spec.name);
  if (it == profile->values.end() || runtime::value_type_of(it->second) != spec.type) return nullptr;
  return spec.validate(it->second).empty() ? &it->second : nullptr;
}

}  // namespace

SetReport set_kernel_tuning_parameters(const SetOptions& options, const OperationContext& context) {
  const detail::Environment environment = detail::resolve(context);
  const int64_t threads = resolve_threads(options.num_threads.value_or(0));
  const runtime::TuningSchema& schema =
      resolve_schema(environment.kernels, options.kernel, options.element_type, options.implementation,
                     options.library, options.device, environment.features);
  const TuningValues given = validate_given(schema, options.values);
  const std::filesystem::path path = resolve_cache_path(options.path);
  const HostDescriptor host = environment.machine.with_threads(threads);

  // The system layer is read-only, so it can be read outside the lock.
  std::optional<CacheFile> system;
  if (environment.system_path) {
    std::error_code error;
    if (!std::filesystem::equivalent(*environment.system_path, path, error)) {
      system = read_cache_file(*environment.system_path);
    }
  }
  const CacheProfile* system_profile =
      system && system->status == FileStatus::loaded ? find_profile(*system, schema.key, host) : nullptr;

  SetReport report;
  report.path = path.string();
  report.key = schema.key;
  report.effective_threads = threads;
  std::vector<Diagnostic> fill_notes;
  UpdateOptions update_options;
  update_options.prune_stale = options.prune_stale;
  update_options.kernels = &environment.kernels;
  const UpdateResult update = update_cache(
      path,
      [&](const CacheFile& current) {
        // Filled under the lock, from the file as it is now, so concurrent partial sets of one
        // key do not undo each other.
        const CacheProfile* user_profile = find_profile(current, schema.key, host);
        CacheProfile profile;
        profile.key = schema.key;
        profile.host = host;
        report.changes.clear();
        fill_notes.clear();
        for (const auto& spec : schema.parameters) {
          ValueChange change;
          change.name = spec.name;
          if (const TuningValue* cached = usable(user_profile, spec)) {
            change.old_value = *cached;
            change.old_origin = ValueOrigin::user_cache;
          } else if (const TuningValue* base = usable(system_profile, spec)) {
            change.old_value = *base;
            change.old_origin = ValueOrigin::system_cache;
          } else {
            change.old_value = spec.default_value;
            change.old_origin = ValueOrigin::default_value;
            if (user_profile != nullptr && user_profile->values.contains(spec.name)) {
              Diagnostic note;
              note.key = schema.key;
              note.message = fmt::format("the cached {} = {} is not valid for {}; replaced by the default {}",
                                         spec.name, runtime::format_value(user_profile->values.at(spec.name)),
                                         schema.key.to_string(), runtime::format_value(spec.default_value));
              fill_notes.push_back(std::move(note));
            }
          }
          const auto it = given.find(spec.name);
          change.given = it != given.end();
          change.new_value = change.given ? it->second : change.old_value;
          profile.values.emplace(spec.name, change.new_value);
          report.changes.push_back(std::move(change));
        }
        profile.provenance = Provenance{options.source, utc_timestamp_now(), environment.tool_version};
        report.values = profile.values;
        return CacheEdit{{std::move(profile)}, nullptr};
      },
      update_options);

  report.status = update.status;
  report.diagnostics = update.diagnostics;
  report.diagnostics.insert(report.diagnostics.end(), fill_notes.begin(), fill_notes.end());
  for (const auto& profile : update.updated) report.updated.push_back(profile.key);
  for (const auto& profile : update.preserved) {
    if (profile.readable()) report.preserved.push_back(profile.key);
  }
  for (const auto& profile : update.pruned) report.pruned.push_back(profile.key);
  report.updated = detail::unique_sorted(std::move(report.updated));
  report.preserved = detail::unique_sorted(std::move(report.preserved));
  report.pruned = detail::unique_sorted(std::move(report.pruned));
  if (update.ok() && options.load) {
    LoadOptions load;
    load.path = report.path;
    report.load = load_kernel_tuning_cache(load, context);
  }
  return report;
}

RemoveReport remove_kernel_tuning_cache(const RemoveOptions& options, const OperationContext& context) {
  const std::filesystem::path path = resolve_cache_path(options.path);
  RemoveReport report;
  report.path = path.string();
  if (options.filter.empty() && !options.threads) {
    RemoveFileResult removed = remove_cache_file(path);
    report.status = !removed.existed ? "not_found"
                    : removed.status == UpdateStatus::updated ? "removed"
                                                               : std::string(update_status_name(removed.status));
    for (const auto& file : removed.removed_files) report.removed_files.push_back(file.string());
    report.diagnostics = std::move(removed.diagnostics);
    return report;
  }
  const std::optional<int64_t> threads =
      options.threads ? std::optional<int64_t>(resolve_threads(*options.threads)) : std::nullopt;
  const detail::Environment environment = detail::resolve(context);
  bool existed = true;
  UpdateOptions update_options;
  update_options.kernels = &environment.kernels;
  if (!std::filesystem::exists(path)) {
    report.status = "not_found";
    return report;
  }
  const UpdateResult update = update_cache(
      path,
      [&](const CacheFile& current) {
        existed = current.status == FileStatus::loaded;
        CacheEdit edit;
        edit.erase = [&](const CacheProfile& profile) {
          return profile.readable() && options.filter.matches(profile.key) &&
                 (!threads || profile.host.effective_threads == *threads);
        };
        return edit;
      },
      update_options);
  if (!update.ok()) {
    report.status = update_status_name(update.status);
  } else if (!existed) {
    report.status = "not_found";
  } else {
    report.status = update.removed.empty() ? "unchanged" : "removed";
  }
  for (const auto& profile : update.removed) report.removed.push_back(profile.key);
  for (const auto& profile : update.preserved) {
    if (profile.readable()) report.preserved.push_back(profile.key);
  }
  report.removed = detail::unique_sorted(std::move(report.removed));
  report.preserved = detail::unique_sorted(std::move(report.preserved));
  report.diagnostics = update.diagnostics;
  return report;
}

}  // namespace onnx_light::tune
