// export, import, merge and diff of cache files (issue 21, "Moving caches").
#include "onnx_light/tune/cache_transfer.h"

#include <algorithm>
#include <limits>
#include <ostream>
#include <unordered_map>
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
#include "pretty_json.h"

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
  object["match"] = host_match_name(profile.host.match);
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
      : policy_(policy), base_is_cache_(base_is_cache), sources_(std::move(sources)), slots_(sources_.size()) {}

  // Adds the profiles of source `source` (each source once, in order).
  void add(const CacheFile& file, std::size_t source) {
    slot_of_.reserve(slot_of_.size() + file.profiles.size());
    std::vector<std::size_t>& slots = slots_.at(source);
    slots.assign(file.profiles.size(), kNoSlot);
    for (std::size_t i = 0; i < file.profiles.size(); ++i) {
      const CacheProfile& profile = file.profiles[i];
      if (!profile.readable()) continue;  // only in the cache (inputs are validated): kept as written
      const Candidate candidate{&profile, source, i};
      const auto [it, inserted] = slot_of_.try_emplace(&profile, winners_.size());
      slots[i] = it->second;
      if (inserted) {
        winners_.push_back(Winner{candidate, base_is_cache_ && source == 0});
      } else if (!(base_is_cache_ && source == 0)) {  // a repeated profile of the cache: the first is used
        consider(winners_[it->second], candidate);
      }
    }
  }

  const std::vector<ProfileConflict>& conflicts() const { return conflicts_; }
  bool unresolved() const { return policy_ == ConflictPolicy::fail && !conflicts_.empty(); }

  // The winning profile of every identity, in the order identities were first seen.
  std::vector<Candidate> winners() const {
    std::vector<Candidate> result;
    result.reserve(winners_.size());
    for (const Winner& winner : winners_) result.push_back(winner.current);
    return result;
  }
  // Whether profile `index` of source `source` won its identity, and whether the cache (source
  // 0) had that identity: known from the add, no lookup.
  bool is_winner(std::size_t source, std::size_t index) const {
    const std::size_t slot = slots_.at(source).at(index);
    return slot != kNoSlot && winners_[slot].current.source == source && winners_[slot].current.index == index;
  }
  bool in_base(std::size_t source, std::size_t index) const {
    const std::size_t slot = slots_.at(source).at(index);
    return slot != kNoSlot && winners_[slot].in_base;
  }
  SourcedProfile sourced(const Candidate& candidate) const {
    return SourcedProfile{*candidate.profile, sources_[candidate.source], candidate.index};
  }

 private:
  static constexpr std::size_t kNoSlot = std::numeric_limits<std::size_t>::max();

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
  std::vector<Winner> winners_;  // one per identity, in the order first seen
  std::unordered_map<const CacheProfile*, std::size_t, ProfileIdentityHash, ProfileIdentityEqual> slot_of_;
  std::vector<std::vector<std::size_t>> slots_;  // per source, per profile: its identity's winner
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

namespace {

// An export's "host": the descriptor without effective_threads and idle_spin (every thread count
// and spin class of that host), or null for every host.
nlohmann::json exported_host_json(const std::optional<HostDescriptor>& host) {
  if (!host) return nullptr;
  nlohmann::json described = nlohmann::json::object();
  host->to_json(described);
  described.erase("effective_threads");
  described.erase("idle_spin");
  return described;
}

}  // namespace

nlohmann::json ExportReport::to_json() const {
  nlohmann::json exported = nlohmann::json::array();
  for (const auto& profile : profiles) exported.push_back(profile_to_json(profile));
  return nlohmann::json{{"status", status},
                        {"path", path},
                        {"output", output},
                        {"all_hosts", !host.has_value()},
                        {"host", exported_host_json(host)},
                        {"host_class", host_match_name(host_class)},
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

namespace {

using detail::PrettyJson;
using Drain = std::function<void()>;

void write_sourced(PrettyJson& w, const SourcedProfile& sourced) {
  detail::write_profile_object(w, sourced.profile, [&](detail::JsonMembers& m) {
    m.add("index", [&] { w.integer(static_cast<int64_t>(sourced.index)); });
    m.add("source", [&] { w.string(sourced.source); });
  });
}

// `key`: [items...], each written by write(item), with a drain after each.
template <typename Items, typename Write>
void write_array(PrettyJson& w, std::string_view key, const Items& items, const Drain& drain, Write write) {
  w.key(key);
  w.open('[');
  for (const auto& item : items) {
    w.item();
    write(item);
    drain();
  }
  w.close(']');
}

void write_count(PrettyJson& w, std::string_view key, std::size_t count) {
  w.key(key), w.integer(static_cast<int64_t>(count));
}

void write_diagnostics(PrettyJson& w, const std::vector<Diagnostic>& diagnostics, const Drain& drain) {
  write_array(w, "diagnostics", diagnostics, drain, [&](const Diagnostic& d) { detail::write_diagnostic(w, d); });
}

}  // namespace

// Keys in sorted order, as nlohmann writes to_json(); tests compare the two.
void ExportReport::write_json(std::ostream& out) const {
  detail::write_in_chunks(out, [this](std::string& text, const Drain& drain) {
    PrettyJson w(text);
    w.open('{');
    w.key("all_hosts"), w.boolean(!host.has_value());
    write_diagnostics(w, diagnostics, drain);
    write_count(w, "exported_count", profiles.size());
    w.key("host"), w.any(exported_host_json(host));
    w.key("host_class"), w.string(host_match_name(host_class));
    w.key("output"), w.string(output);
    w.key("path"), w.string(path);
    write_array(w, "profiles", profiles, drain,
                [&](const CacheProfile& p) { detail::write_profile_object(w, p, [](detail::JsonMembers&) {}); });
    write_count(w, "skipped_count", skipped);
    w.key("status"), w.string(status);
    w.close('}');
  });
}

void ImportReport::write_json(std::ostream& out) const {
  detail::write_in_chunks(out, [this](std::string& text, const Drain& drain) {
    PrettyJson w(text);
    auto sourced = [&](const SourcedProfile& p) { write_sourced(w, p); };
    w.open('{');
    write_array(w, "added", added, drain, sourced);
    write_count(w, "added_count", added.size());
    write_count(w, "conflict_count", conflicts.size());
    write_array(w, "conflicts", conflicts, drain, [&](const ProfileConflict& c) { w.any(c.to_json()); });
    write_diagnostics(w, diagnostics, drain);
    w.key("files"), w.any(inputs_to_json(files));
    write_array(w, "kept", kept, drain, sourced);
    write_count(w, "kept_count", kept.size());
    w.key("on_conflict"), w.string(conflict_policy_name(on_conflict));
    w.key("path"), w.string(path);
    write_array(w, "replaced", replaced, drain, sourced);
    write_count(w, "replaced_count", replaced.size());
    w.key("status"), w.string(status);
    w.close('}');
  });
}

void DiffReport::write_json(std::ostream& out) const {
  detail::write_in_chunks(out, [this](std::string& text, const Drain& drain) {
    PrettyJson w(text);
    auto sourced = [&](const SourcedProfile& p) { write_sourced(w, p); };
    w.open('{');
    w.key("a"), w.any({{"path", a.path}, {"profiles", a.profiles}});
    write_array(w, "added", added, drain, sourced);
    write_count(w, "added_count", added.size());
    w.key("b"), w.any({{"path", b.path}, {"profiles", b.profiles}});
    write_array(w, "changed", changed, drain, [&](const ChangedProfile& c) { w.any(c.to_json()); });
    write_count(w, "changed_count", changed.size());
    write_diagnostics(w, diagnostics, drain);
    w.key("identical"), w.boolean(identical());
    write_array(w, "removed", removed, drain, sourced);
    write_count(w, "removed_count", removed.size());
    write_count(w, "unchanged_count", unchanged);
    w.close('}');
  });
}

// ---- operations ---------------------------------------------------------------------------------

namespace {

std::string format_values_text(const runtime::TuningValues& values) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : values) parts.push_back(fmt::format("{}={}", name, runtime::format_value(value)));
  return fmt::format("{}", fmt::join(parts, " "));
}

// Export --host-class: every profile generalised to the class (those already as general stay).
// Profiles that become one identity merge when their values agree (the newest provenance stays);
// values that disagree make the class ambiguous, and nothing is written.
void generalise_profiles(ExportReport& report, HostMatch host_class) {
  std::vector<CacheProfile> generalised;
  generalised.reserve(report.profiles.size());
  for (const CacheProfile& profile : report.profiles) {
    CacheProfile copy = profile;
    copy.host = profile.host.generalised(host_class);
    generalised.push_back(std::move(copy));
  }
  std::vector<std::size_t> order(generalised.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return profile_less(generalised[a], generalised[b]); });
  std::vector<CacheProfile> result;
  std::vector<std::size_t> origin;  // index into report.profiles of each result's profile
  for (const std::size_t i : order) {
    CacheProfile& profile = generalised[i];
    if (!result.empty() && same_profile_identity(result.back(), profile)) {
      CacheProfile& kept = result.back();
      if (kept.values != profile.values) {
        const CacheProfile& a = report.profiles[origin.back()];
        const CacheProfile& b = report.profiles[i];
        throw InvalidValueError(fmt::format(
            "--host-class {}: {} on {} and on {} become one {} profile ({}) with different values ({} / {}); "
            "nothing was written: export them with --host-class exact, or select one with --as-host or --threads",
            host_match_name(host_class), profile.key.to_string(), a.host.summary(), b.host.summary(),
            host_match_name(host_class), profile.host.summary(), format_values_text(a.values),
            format_values_text(b.values)));
      }
      if (written_instant(profile) > written_instant(kept)) {
        kept.provenance = profile.provenance;
        origin.back() = i;
      }
      continue;
    }
    result.push_back(std::move(profile));
    origin.push_back(i);
  }
  report.profiles = std::move(result);
}

}  // namespace

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
         (!options.all_hosts && !profile.host.matches(environment.machine)))) {
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
  report.host_class = options.host_class;
  if (options.host_class != HostMatch::exact) generalise_profiles(report, options.host_class);
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
  std::vector<CacheFile> files = read_valid_inputs(options.files, schemas, "import");
  report.files = summarize(files);

  // What became of each profile of the files, decided under the lock; the report's lists are
  // filled afterwards by moving the profiles out of the files.
  enum class Outcome : uint8_t { kept, added, replaced };
  std::vector<std::vector<Outcome>> outcomes;
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
        report.conflicts = fold.conflicts();
        unresolved = fold.unresolved();
        CacheEdit edit;
        outcomes.assign(files.size(), {});
        for (std::size_t f = 0; f < files.size(); ++f) {
          outcomes[f].reserve(files[f].profiles.size());
          for (std::size_t i = 0; i < files[f].profiles.size(); ++i) {
            Outcome outcome = Outcome::kept;
            if (!unresolved && fold.is_winner(f + 1, i)) {
              outcome = fold.in_base(f + 1, i) ? Outcome::replaced : Outcome::added;
              edit.upserts.push_back(files[f].profiles[i]);
            }
            outcomes[f].push_back(outcome);
          }
        }
        return edit;
      },
      detail::update_options_for(context, environment.kernels));
  if (update.ok()) {
    for (std::size_t f = 0; f < outcomes.size(); ++f) {
      for (std::size_t i = 0; i < outcomes[f].size(); ++i) {
        auto& list = outcomes[f][i] == Outcome::added      ? report.added
                     : outcomes[f][i] == Outcome::replaced ? report.replaced
                                                           : report.kept;
        list.push_back({std::move(files[f].profiles[i]), files[f].path.string(), i});
      }
    }
  }
  report.diagnostics = update.diagnostics;
  if (!update.ok()) {
    report.status = update_status_name(update.status);  // nothing was written; the lists stay empty
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
  std::vector<CacheFile> files = read_valid_inputs(options.files, schemas, "merge");
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
  // Moved out of the inputs (the fold is done with them): no copy of a fleet's profiles.
  const std::vector<ProfileFold::Candidate> winners = fold.winners();
  std::vector<CacheProfile> merged;
  merged.reserve(winners.size());
  for (const auto& winner : winners) merged.push_back(std::move(files[winner.source].profiles[winner.index]));
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
