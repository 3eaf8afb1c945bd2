// export, import, merge and diff of cache files (issue 21, "Moving caches").
#include "onnx_light/tune/cache_transfer.h"

#include <algorithm>
#include <limits>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cache_text.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/tune/cache_path.h"
#include "onnx_light/tune/cache_update.h"
#include "onnx_light/tune/classification.h"
#include "onnx_light/tune/reports.h"
#include "operation_support.h"

namespace onnx_light::tune {

std::string_view conflict_policy_name(ConflictPolicy policy) {
  switch (policy) {
    case ConflictPolicy::fail: return "fail";
    case ConflictPolicy::keep: return "keep";
    case ConflictPolicy::replace: return "replace";
    case ConflictPolicy::newest: return "newest";
  }
  return "unknown";
}

ConflictPolicy parse_conflict_policy(std::string_view text) {
  for (auto policy : {ConflictPolicy::fail, ConflictPolicy::keep, ConflictPolicy::replace, ConflictPolicy::newest}) {
    if (conflict_policy_name(policy) == text) return policy;
  }
  throw InvalidValueError(
      fmt::format("unknown conflict policy '{}' (use fail, keep, replace or newest)", text));
}

namespace {

namespace fs = std::filesystem;

// At most this many invalid profiles are named in one error message (the count says the rest).
constexpr std::size_t kProblemsNamed = 10;

// {source, index, values, provenance}: one side of a conflict or a change.
nlohmann::json side_to_json(const SourcedProfile& side) {
  return nlohmann::json{{"source", side.source},
                        {"index", side.index},
                        {"values", values_to_json(side.profile.values)},
                        {"provenance", provenance_to_json(side.profile.provenance)}};
}

// Key fields + device_name and every host field of a profile's identity.
nlohmann::json identity_to_json(const CacheProfile& profile) {
  nlohmann::json object = key_to_json(profile.key);
  profile.host.to_json(object);
  return object;
}

template <typename T>
nlohmann::json array_of(const std::vector<T>& items) {
  nlohmann::json array = nlohmann::json::array();
  for (const auto& item : items) array.push_back(item.to_json());
  return array;
}

nlohmann::json inputs_to_json(const std::vector<TransferInput>& inputs) {
  nlohmann::json array = nlohmann::json::array();
  for (const auto& input : inputs) array.push_back({{"path", input.path}, {"profiles", input.profiles}});
  return array;
}

Diagnostic note(std::string message) {
  Diagnostic diagnostic;
  diagnostic.message = std::move(message);
  return diagnostic;
}

// Reads an input file; a file that is not a usable cache throws (see the header).
CacheFile read_input(const std::string& path) {
  CacheFile file = read_cache_file(path);
  switch (file.status) {
    case FileStatus::loaded: break;
    case FileStatus::not_found: throw NotFoundError(fmt::format("{}: no such cache file", path));
    case FileStatus::unreadable: throw IoError(fmt::format("{}; nothing was written", file.error));
    case FileStatus::malformed:
      throw InvalidValueError(fmt::format("{} is malformed ({}); nothing was written", path, file.error));
  }
  return file;
}

// Why profile `index` of `file` cannot be carried to another cache, one message per problem
// (each names the file, the profile and the field); empty when it can.
std::vector<std::string> carry_problems(const CacheFile& file, std::size_t index, const Classification& classification) {
  const CacheProfile& profile = file.profiles[index];
  std::vector<std::string> problems;
  if (!profile.readable()) {
    for (const auto& problem : profile.problems) {
      problems.push_back(fmt::format("{}: {}", describe_profile(profile, index, file.path), problem.message));
    }
    return problems;
  }
  if (classification.value == ProfileClass::invalid) {
    for (const auto& diagnostic : classification.diagnostics) problems.push_back(diagnostic.message);
  }
  if (auto problem = profile_write_problem(profile)) {
    problems.push_back(fmt::format("{}: {}", describe_profile(profile, index, file.path), problem->message));
  }
  return problems;
}

// Reads every input and checks every profile of every one before anything is written.
std::vector<CacheFile> read_valid_inputs(const std::vector<std::string>& paths, const SchemaIndex& schemas,
                                         std::string_view verb) {
  if (paths.empty()) throw InvalidValueError(fmt::format("{}: no cache file given", verb));
  std::vector<CacheFile> files;
  files.reserve(paths.size());
  for (const auto& path : paths) files.push_back(read_input(path));
  std::vector<std::string> problems;
  for (const auto& file : files) {
    const std::vector<Classification> classes = validate_profiles(file, schemas);
    for (std::size_t i = 0; i < file.profiles.size(); ++i) {
      for (auto& problem : carry_problems(file, i, classes[i])) problems.push_back(std::move(problem));
    }
  }
  if (!problems.empty()) {
    const std::size_t named = std::min(problems.size(), kProblemsNamed);
    throw InvalidValueError(fmt::format(
        "{}: nothing was written: {} problem{} in the input{}: {}{}; fix or remove those profiles (and "
        "'onnx-light-tune inspect FILE' shows them)",
        verb, problems.size(), problems.size() == 1 ? "" : "s", paths.size() == 1 ? "" : "s",
        fmt::join(problems.begin(), problems.begin() + static_cast<std::ptrdiff_t>(named), "; "),
        problems.size() > named ? fmt::format("; and {} more", problems.size() - named) : ""));
  }
  return files;
}

std::vector<TransferInput> summarize(const std::vector<CacheFile>& files) {
  std::vector<TransferInput> inputs;
  for (const auto& file : files) inputs.push_back({file.path.string(), file.profiles.size()});
  return inputs;
}

// provenance.written as an instant; unreadable dates sort before every readable one.
std::pair<int64_t, int32_t> written_instant(const CacheProfile& profile) {
  return date_time_instant(profile.provenance.written)
      .value_or(std::make_pair(std::numeric_limits<int64_t>::min(), int32_t{0}));
}

// One profile per identity out of ordered sources, conflicts resolved by the policy: the merge
// of import (source 0 is the cache) and of merge.
class ProfileFold {
 public:
  struct Candidate {
    const CacheProfile* profile = nullptr;
    std::size_t source = 0;
    std::size_t index = 0;
  };

  // base_is_cache: source 0 is the cache being imported into; its profile stays when an input
  // brings the same values (nothing to write), and its repeated profiles are not conflicts.
  ProfileFold(ConflictPolicy policy, bool base_is_cache, std::vector<std::string> sources)
      : policy_(policy), base_is_cache_(base_is_cache), sources_(std::move(sources)) {}

  void add(const CacheFile& file, std::size_t source) {
    winners_.reserve(winners_.size() + file.profiles.size());
    for (std::size_t i = 0; i < file.profiles.size(); ++i) {
      const CacheProfile& profile = file.profiles[i];
      if (!profile.readable()) continue;  // only in the cache (inputs are validated): kept as written
      const Candidate candidate{&profile, source, i};
      auto [it, inserted] = winners_.try_emplace(&profile, Winner{candidate, base_is_cache_ && source == 0});
      if (inserted) {
        order_.push_back(&profile);
        continue;
      }
      if (base_is_cache_ && source == 0) continue;  // a repeated profile of the cache: the first is used
      consider(it->second, candidate);
    }
  }

  const std::vector<ProfileConflict>& conflicts() const { return conflicts_; }
  bool unresolved() const { return policy_ == ConflictPolicy::fail && !conflicts_.empty(); }

  // The winning profile of every identity, in the order identities were first seen.
  std::vector<Candidate> winners() const {
    std::vector<Candidate> result;
    result.reserve(order_.size());
    for (const CacheProfile* first : order_) result.push_back(winners_.at(first).current);
    return result;
  }
  bool in_base(const CacheProfile& profile) const {
    const auto it = winners_.find(&profile);
    return it != winners_.end() && it->second.in_base;
  }
  bool is_winner(const CacheProfile& profile) const {
    const auto it = winners_.find(&profile);
    return it != winners_.end() && it->second.current.profile == &profile;
  }
  SourcedProfile sourced(const Candidate& candidate) const {
    return SourcedProfile{*candidate.profile, sources_[candidate.source], candidate.index};
  }

 private:
  struct Winner {
    Candidate current;
    bool in_base = false;  // the identity is in the cache (source 0 of an import)
  };

  void consider(Winner& winner, const Candidate& candidate) {
    Candidate& current = winner.current;
    if (current.profile->values == candidate.profile->values) {
      // The same profile. Keep the cache's as it is; otherwise the newest provenance (then the
      // greatest), a choice the order of the inputs cannot change.
      if (base_is_cache_ && current.source == 0) return;
      const auto mine = std::make_pair(written_instant(*current.profile), current.profile->provenance);
      const auto theirs = std::make_pair(written_instant(*candidate.profile), candidate.profile->provenance);
      if (theirs > mine) current = candidate;
      return;
    }
    bool replace = false;
    switch (policy_) {
      case ConflictPolicy::fail:
      case ConflictPolicy::keep: break;
      case ConflictPolicy::replace: replace = true; break;
      case ConflictPolicy::newest: {
        const auto mine = date_time_instant(current.profile->provenance.written);
        const auto theirs = date_time_instant(candidate.profile->provenance.written);
        replace = mine && theirs && *theirs > *mine;
        break;
      }
    }
    conflicts_.push_back(ProfileConflict{
        sourced(current), sourced(candidate),
        policy_ == ConflictPolicy::fail ? "unresolved" : replace ? "replaced" : "kept"});
    if (replace) current = candidate;
  }

  ConflictPolicy policy_;
  bool base_is_cache_;
  std::vector<std::string> sources_;
  std::unordered_map<const CacheProfile*, Winner, ProfileIdentityHash, ProfileIdentityEqual> winners_;
  std::vector<const CacheProfile*> order_;
  std::vector<ProfileConflict> conflicts_;
};

// Writes `profiles` as the whole of `output` with the locked update; "updated" or why not.
UpdateResult write_output(const std::string& output, std::vector<CacheProfile> profiles, const UpdateOptions& options) {
  return update_cache(
      output,
      [&](const CacheFile&) {
        CacheEdit edit;
        edit.upserts = std::move(profiles);
        edit.replace_all = true;
        return edit;
      },
      options);
}

}  // namespace

// ---- reports ------------------------------------------------------------------------------------

nlohmann::json SourcedProfile::to_json() const {
  nlohmann::json object = profile_to_json(profile);
  object["source"] = source;
  object["index"] = index;
  return object;
}

nlohmann::json ProfileConflict::to_json() const {
  nlohmann::json object = identity_to_json(existing.profile);
  object["resolution"] = resolution;
  object["existing"] = side_to_json(existing);
  object["incoming"] = side_to_json(incoming);
  return object;
}

nlohmann::json ChangedProfile::to_json() const {
  nlohmann::json object = identity_to_json(a.profile);
  object["changed_values"] = changed_values;
  object["a"] = side_to_json(a);
  object["b"] = side_to_json(b);
  return object;
}

nlohmann::json ExportReport::to_json() const {
  nlohmann::json described;
  if (host) {
    described = nlohmann::json::object();
    host->to_json(described);
    described.erase("effective_threads");  // every thread count of that host
  }
  nlohmann::json exported = nlohmann::json::array();
  for (const auto& profile : profiles) exported.push_back(profile_to_json(profile));
  return nlohmann::json{{"status", status},
                        {"path", path},
                        {"output", output},
                        {"all_hosts", !host.has_value()},
                        {"host", std::move(described)},
                        {"profiles", std::move(exported)},
                        {"exported_count", profiles.size()},
                        {"skipped_count", skipped},
                        {"diagnostics", diagnostics_to_json(diagnostics)}};
}

nlohmann::json ImportReport::to_json() const {
  return nlohmann::json{{"status", status},
                        {"path", path},
                        {"files", inputs_to_json(files)},
                        {"on_conflict", conflict_policy_name(on_conflict)},
                        {"added", array_of(added)},
                        {"replaced", array_of(replaced)},
                        {"kept", array_of(kept)},
                        {"conflicts", array_of(conflicts)},
                        {"added_count", added.size()},
                        {"replaced_count", replaced.size()},
                        {"kept_count", kept.size()},
                        {"conflict_count", conflicts.size()},
                        {"diagnostics", diagnostics_to_json(diagnostics)}};
}

nlohmann::json MergeReport::to_json() const {
  return nlohmann::json{{"status", status},
                        {"output", output},
                        {"inputs", inputs_to_json(inputs)},
                        {"on_conflict", conflict_policy_name(on_conflict)},
                        {"profile_count", profile_count},
                        {"conflicts", array_of(conflicts)},
                        {"conflict_count", conflicts.size()},
                        {"diagnostics", diagnostics_to_json(diagnostics)}};
}

nlohmann::json DiffReport::to_json() const {
  return nlohmann::json{{"a", {{"path", a.path}, {"profiles", a.profiles}}},
                        {"b", {{"path", b.path}, {"profiles", b.profiles}}},
                        {"identical", identical()},
                        {"added", array_of(added)},
                        {"removed", array_of(removed)},
                        {"changed", array_of(changed)},
                        {"added_count", added.size()},
                        {"removed_count", removed.size()},
                        {"changed_count", changed.size()},
                        {"unchanged_count", unchanged},
                        {"diagnostics", diagnostics_to_json(diagnostics)}};
}

// ---- operations ---------------------------------------------------------------------------------

ExportReport export_kernel_tuning_cache(const ExportOptions& options, const OperationContext& context) {
  const detail::Environment environment = detail::resolve(context);
  ExportReport report;
  report.output = options.output;
  if (!options.all_hosts) report.host = environment.machine;
  const fs::path path = resolve_cache_path(options.path);
  report.path = path.string();
  const CacheFile file = read_input(report.path);
  detail::check_named_kernels(options.filter, environment.kernels, {&file});
  std::optional<int64_t> threads;
  if (options.threads) threads = environment.session_threads(options.threads);
  const SchemaIndex schemas(environment.kernels);
  const std::vector<Classification> classes = validate_profiles(file, schemas);
  for (std::size_t i = 0; i < file.profiles.size(); ++i) {
    const CacheProfile& profile = file.profiles[i];
    if (profile.readable() &&
        (!options.filter.matches(profile.key) || (threads && profile.host.effective_threads != *threads) ||
         (!options.all_hosts && !profile.host.same_machine(environment.machine)))) {
      continue;
    }
    const std::vector<std::string> problems = carry_problems(file, i, classes[i]);
    if (!problems.empty()) {
      // Left out, so that the file always imports; unreadable profiles (whose host is unknown) too.
      ++report.skipped;
      report.diagnostics.push_back(note(fmt::format("left out: {}", fmt::join(problems, "; "))));
      continue;
    }
    report.profiles.push_back(profile);
  }
  if (report.profiles.empty()) {
    report.diagnostics.push_back(note(fmt::format(
        "no profile of {} matches the selection{}; the output is an empty cache", report.path,
        options.all_hosts ? "" : fmt::format(" for host {} (--all-hosts exports every host's)",
                                             environment.machine.summary()))));
  }
  std::stable_sort(report.profiles.begin(), report.profiles.end(), profile_less);
  if (options.output == "-") {
    report.text = serialize_cache(report.profiles);
    report.status = "exported";
    return report;
  }
  const UpdateResult written =
      write_output(options.output, report.profiles, detail::update_options_for(context, environment.kernels));
  report.status = written.ok() ? "exported" : std::string(update_status_name(written.status));
  report.diagnostics.insert(report.diagnostics.end(), written.diagnostics.begin(), written.diagnostics.end());
  return report;
}

ImportReport import_kernel_tuning_cache(const ImportOptions& options, const OperationContext& context) {
  const detail::Environment environment = detail::resolve(context);
  ImportReport report;
  report.on_conflict = options.on_conflict;
  const fs::path path = resolve_cache_path(options.path);
  report.path = path.string();
  const SchemaIndex schemas(environment.kernels);
  const std::vector<CacheFile> files = read_valid_inputs(options.files, schemas, "import");
  report.files = summarize(files);

  bool unresolved = false;
  const UpdateResult update = update_cache(
      path,
      [&](const CacheFile& current) {
        // Decided against the cache as it is under the lock: a writer that got in first counts.
        std::vector<std::string> sources{report.path};
        for (const auto& file : files) sources.push_back(file.path.string());
        ProfileFold fold(options.on_conflict, /*base_is_cache=*/true, std::move(sources));
        fold.add(current, 0);
        for (std::size_t f = 0; f < files.size(); ++f) fold.add(files[f], f + 1);
        report.added.clear();
        report.replaced.clear();
        report.kept.clear();
        report.conflicts = fold.conflicts();
        unresolved = fold.unresolved();
        CacheEdit edit;
        for (std::size_t f = 0; f < files.size(); ++f) {
          for (std::size_t i = 0; i < files[f].profiles.size(); ++i) {
            const CacheProfile& profile = files[f].profiles[i];
            SourcedProfile sourced{profile, files[f].path.string(), i};
            if (unresolved || !fold.is_winner(profile)) {
              report.kept.push_back(std::move(sourced));
            } else {
              (fold.in_base(profile) ? report.replaced : report.added).push_back(std::move(sourced));
              edit.upserts.push_back(profile);
            }
          }
        }
        return edit;
      },
      detail::update_options_for(context, environment.kernels));
  report.diagnostics = update.diagnostics;
  if (!update.ok()) {
    report.status = update_status_name(update.status);
    report.added.clear();  // nothing was written
    report.replaced.clear();
    report.kept.clear();
  } else if (unresolved) {
    report.status = "conflict";
    report.diagnostics.push_back(note(fmt::format(
        "{} conflict{} (same key and host, other values); nothing was written: choose --on-conflict keep, "
        "replace or newest",
        report.conflicts.size(), report.conflicts.size() == 1 ? "" : "s")));
  } else {
    report.status = report.added.empty() && report.replaced.empty() ? "unchanged" : "imported";
  }
  return report;
}

MergeReport merge_kernel_tuning_caches(const MergeOptions& options, const OperationContext& context) {
  const detail::Environment environment = detail::resolve(context);
  MergeReport report;
  report.output = options.output;
  report.on_conflict = options.on_conflict;
  const SchemaIndex schemas(environment.kernels);
  const std::vector<CacheFile> files = read_valid_inputs(options.files, schemas, "merge");
  report.inputs = summarize(files);
  std::vector<std::string> sources;
  for (const auto& file : files) sources.push_back(file.path.string());
  ProfileFold fold(options.on_conflict, /*base_is_cache=*/false, std::move(sources));
  for (std::size_t f = 0; f < files.size(); ++f) fold.add(files[f], f);
  report.conflicts = fold.conflicts();
  if (fold.unresolved()) {
    report.status = "conflict";
    report.diagnostics.push_back(note(fmt::format(
        "{} conflict{} (same key and host, other values); nothing was written: choose --on-conflict keep, "
        "replace or newest",
        report.conflicts.size(), report.conflicts.size() == 1 ? "" : "s")));
    return report;
  }
  std::vector<CacheProfile> merged;
  for (const auto& winner : fold.winners()) merged.push_back(*winner.profile);
  report.profile_count = merged.size();
  if (options.output == "-") {
    report.text = serialize_cache(std::move(merged));
    report.status = "merged";
    return report;
  }
  const UpdateResult written =
      write_output(options.output, std::move(merged), detail::update_options_for(context, environment.kernels));
  report.status = written.ok() ? "merged" : std::string(update_status_name(written.status));
  report.diagnostics = written.diagnostics;
  return report;
}

DiffReport diff_kernel_tuning_caches(const DiffOptions& options) {
  DiffReport report;
  const CacheFile a = read_input(options.a);
  const CacheFile b = read_input(options.b);
  report.a = {options.a, a.profiles.size()};
  report.b = {options.b, b.profiles.size()};
  using Index = std::unordered_map<const CacheProfile*, std::size_t, ProfileIdentityHash, ProfileIdentityEqual>;
  // Identity -> index of its first profile; unreadable and repeated profiles are not compared.
  auto index_of = [&report](const CacheFile& file) {
    Index index;
    index.reserve(file.profiles.size());
    for (std::size_t i = 0; i < file.profiles.size(); ++i) {
      const CacheProfile& profile = file.profiles[i];
      if (!profile.readable()) {
        report.diagnostics.push_back(note(fmt::format("{}: unreadable ({}); not compared",
                                                      describe_profile(profile, i, file.path),
                                                      profile.problems.front().message)));
      } else if (const auto [it, inserted] = index.try_emplace(&profile, i); !inserted) {
        report.diagnostics.push_back(note(fmt::format("{}: same key and host as profile {}; not compared",
                                                      describe_profile(profile, i, file.path), it->second)));
      }
    }
    return index;
  };
  const Index in_a = index_of(a);
  const Index in_b = index_of(b);
  for (const auto& [profile, i] : in_b) {
    const auto match = in_a.find(profile);
    if (match == in_a.end()) {
      report.added.push_back({*profile, options.b, i});
    } else if (match->first->values != profile->values) {
      ChangedProfile changed{{*match->first, options.a, match->second}, {*profile, options.b, i}, {}};
      const runtime::TuningValues& old_values = match->first->values;
      const runtime::TuningValues& new_values = profile->values;
      for (const auto& [name, value] : old_values) {
        const auto it = new_values.find(name);
        if (it == new_values.end() || it->second != value) changed.changed_values.push_back(name);
      }
      for (const auto& [name, value] : new_values) {
        if (!old_values.contains(name)) changed.changed_values.push_back(name);
      }
      std::sort(changed.changed_values.begin(), changed.changed_values.end());
      report.changed.push_back(std::move(changed));
    } else {
      ++report.unchanged;
    }
  }
  for (const auto& [profile, i] : in_a) {
    if (!in_b.contains(profile)) report.removed.push_back({*profile, options.a, i});
  }
  auto by_identity = [](const SourcedProfile& x, const SourcedProfile& y) { return profile_less(x.profile, y.profile); };
  std::sort(report.added.begin(), report.added.end(), by_identity);
  std::sort(report.removed.begin(), report.removed.end(), by_identity);
  std::sort(report.changed.begin(), report.changed.end(),
            [](const ChangedProfile& x, const ChangedProfile& y) { return profile_less(x.a.profile, y.a.profile); });
  return report;
}

}  // namespace onnx_light::tune
