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
  const int64_t threads = environment.session_threads(options.num_threads);
  const runtime::TuningSchema& schema =
      resolve_schema(environment.kernels, options.kernel, options.element_type, options.implementation,
                     options.library, options.device, environment.features);
  const TuningValues given = validate_given(schema, options.values);
  const std::filesystem::path path = resolve_cache_path(options.path);
  const HostDescriptor host = environment.machine.with_conditions(threads, options.idle_spin).generalised(options.match);

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
  UpdateOptions update_options = detail::update_options_for(context, environment.kernels);
  update_options.prune_stale = options.prune_stale;
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
        profile.provenance = provenance_now(options.source, environment.tool_version);
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

bool RemoveOptions::whole_file() const {
  return filter.empty() && !threads && classes.empty() && !foreign && hostname.empty();
}

namespace {

// Which profiles of `file` the options select, each with its classification.
class RemovalSelection {
 public:
  RemovalSelection(const RemoveOptions& options, const detail::Environment& environment)
      : options_(options), environment_(environment), schemas_(environment.kernels) {
    if (options.threads) threads_ = resolve_threads(*options.threads);
  }

  // Classifies `file` and returns, per profile, whether it goes.
  std::vector<bool> select(const CacheFile& file) {
    detail::check_named_kernels(options_.filter, environment_.kernels, {&file});
    classes_ = classify_profiles(file, CacheLayer::user, schemas_, environment_.machine);
    std::vector<bool> chosen(file.profiles.size(), false);
    for (std::size_t i = 0; i < file.profiles.size(); ++i) chosen[i] = matches(file.profiles[i], classes_[i].value);
    return chosen;
  }
  ProfileClass classification(std::size_t index) const { return classes_[index].value; }

 private:
  bool matches(const CacheProfile& profile, ProfileClass value) const {
    if (options_.whole_file()) return true;
    // Key, threads and host filters need a profile whose key and host could be read.
    const bool needs_structure = !options_.filter.empty() || threads_ || options_.foreign;
    if (needs_structure && !profile.readable()) return false;
    if (!options_.filter.empty() && !options_.filter.matches(profile.key)) return false;
    if (threads_ && profile.host.effective_threads != *threads_) return false;
    if (options_.foreign && profile.host.matches(environment_.machine)) return false;
    if (!options_.hostname.empty() && profile.provenance.hostname != options_.hostname) return false;
    if (!options_.classes.empty() &&
        std::find(options_.classes.begin(), options_.classes.end(), value) == options_.classes.end()) {
      return false;
    }
    return true;
  }

  const RemoveOptions& options_;
  const detail::Environment& environment_;
  SchemaIndex schemas_;
  std::optional<int64_t> threads_;
  std::vector<Classification> classes_;
};

InspectedProfile removed_entry(const CacheProfile& profile, std::size_t index, ProfileClass value) {
  InspectedProfile entry;
  entry.index = index;
  entry.layer = CacheLayer::user;
  entry.profile = profile;
  entry.classification = value;
  return entry;
}

}  // namespace

RemoveReport remove_kernel_tuning_cache(const RemoveOptions& options, const OperationContext& context) {
  const std::filesystem::path path = resolve_cache_path(options.path);
  const detail::Environment environment = detail::resolve(context);
  RemoveReport report;
  report.path = path.string();
  report.dry_run = options.dry_run;
  RemovalSelection selection(options, environment);

  if (options.dry_run) {
    const CacheFile file = read_cache_file(path);
    if (file.status == FileStatus::not_found) {
      detail::check_named_kernels(options.filter, environment.kernels, {});
      report.status = "not_found";
      return report;
    }
    if (file.status != FileStatus::loaded && !options.whole_file()) {
      // What a filtered removal would answer: the file cannot be edited.
      report.status = file_status_name(file.status);
      Diagnostic diagnostic;
      diagnostic.message = fmt::format("{} is {} ({}); only a removal without filters can delete it", path.string(),
                                       file_status_name(file.status), file.error);
      report.diagnostics.push_back(std::move(diagnostic));
      return report;
    }
    const std::vector<bool> chosen = selection.select(file);
    for (std::size_t i = 0; i < file.profiles.size(); ++i) {
      if (chosen[i]) {
        report.removed_profiles.push_back(removed_entry(file.profiles[i], i, selection.classification(i)));
        if (file.profiles[i].readable()) report.removed.push_back(file.profiles[i].key);
      } else {
        ++report.preserved_profiles;
        if (file.profiles[i].readable()) report.preserved.push_back(file.profiles[i].key);
      }
    }
    if (options.whole_file()) {
      report.removed_files.push_back(path.string());
      std::error_code error;
      if (std::filesystem::exists(lock_path_for(path), error)) report.removed_files.push_back(lock_path_for(path).string());
    }
    report.status = report.removed_profiles.empty() && !options.whole_file() ? "unchanged" : "would_remove";
    report.removed = detail::unique_sorted(std::move(report.removed));
    report.preserved = detail::unique_sorted(std::move(report.preserved));
    return report;
  }

  if (options.whole_file()) {
    const CacheFile before = read_cache_file(path);  // to report what went
    RemoveFileResult removed = remove_cache_file(path, detail::update_options_for(context, environment.kernels));
    report.status = removed.status != UpdateStatus::updated ? std::string(update_status_name(removed.status))
                    : !removed.existed                        ? "not_found"
                                                              : "removed";
    for (const auto& file : removed.removed_files) report.removed_files.push_back(file.string());
    if (report.status == "removed") {
      selection.select(before);  // classifies what the file held
      for (std::size_t i = 0; i < before.profiles.size(); ++i) {
        report.removed_profiles.push_back(removed_entry(before.profiles[i], i, selection.classification(i)));
        if (before.profiles[i].readable()) report.removed.push_back(before.profiles[i].key);
      }
      report.removed = detail::unique_sorted(std::move(report.removed));
    }
    report.diagnostics = std::move(removed.diagnostics);
    return report;
  }

  if (!std::filesystem::exists(path)) {
    detail::check_named_kernels(options.filter, environment.kernels, {});
    report.status = "not_found";
    return report;
  }
  bool existed = true;
  const UpdateOptions update_options = detail::update_options_for(context, environment.kernels);
  std::set<const CacheProfile*> erase;  // profiles of the file as read under the lock
  std::vector<std::size_t> erased_indices;  // their indices, in file order
  std::vector<ProfileClass> erased_classes;
  const UpdateResult update = update_cache(
      path,
      [&](const CacheFile& current) {
        existed = current.status == FileStatus::loaded;
        const std::vector<bool> chosen = selection.select(current);
        erase.clear();
        erased_indices.clear();
        erased_classes.clear();
        for (std::size_t i = 0; i < current.profiles.size(); ++i) {
          if (!chosen[i]) continue;
          erase.insert(&current.profiles[i]);
          erased_indices.push_back(i);
          erased_classes.push_back(selection.classification(i));
        }
        CacheEdit edit;
        edit.erase = [&](const CacheProfile& profile) { return erase.contains(&profile); };
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
  // update.removed is in file order, as erased_indices.
  for (std::size_t n = 0; n < update.removed.size() && n < erased_indices.size(); ++n) {
    const CacheProfile& profile = update.removed[n];
    report.removed_profiles.push_back(removed_entry(profile, erased_indices[n], erased_classes[n]));
    if (profile.readable()) report.removed.push_back(profile.key);
  }
  for (const auto& profile : update.preserved) {
    ++report.preserved_profiles;
    if (profile.readable()) report.preserved.push_back(profile.key);
  }
  report.removed = detail::unique_sorted(std::move(report.removed));
  report.preserved = detail::unique_sorted(std::move(report.preserved));
  report.diagnostics = update.diagnostics;
  return report;
}

}  // namespace onnx_light::tune
