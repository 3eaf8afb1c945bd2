// `onnx-light-tune completion bash|zsh|fish`: prints a completion script for the shell, generated
// from this binary's own CLI definition (the verbs and their options, walked from the CLI11 App)
// and the runtime's kernel table (kernel names, element types, implementations and parameter
// names). The build runs it to produce <build>/completions/, which `cmake --install` installs, so
// the scripts cannot drift from the binary. The verb is hidden from --help.
#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli_common.h"
#include "cli_usage.h"
#include "onnx_light/runtime/element_type.h"
#include "onnx_light/runtime/kernel_table.h"
#include "onnx_light/tune/kernel_selection.h"
#include "verbs.h"

namespace onnx_light::cli {

namespace {

constexpr std::string_view kProgram = "onnx-light-tune";

// What the value of an option (or a positional word) can be completed with.
enum class Values {
  none, file, directory, kernel, element_type, implementation, color, spin, affinity, parameter, conflict, host_class
};

std::string_view values_name(Values v) {
  switch (v) {
    case Values::none: return "none";
    case Values::file: return "file";
    case Values::directory: return "directory";
    case Values::kernel: return "kernel";
    case Values::element_type: return "element_type";
    case Values::implementation: return "implementation";
    case Values::color: return "color";
    case Values::spin: return "spin";
    case Values::affinity: return "affinity";
    case Values::parameter: return "parameter";
    case Values::conflict: return "conflict";
    case Values::host_class: return "host_class";
  }
  return "none";
}

struct OptionSpec {
  std::vector<std::string> flags;  // "-v", "--verbose"
  std::string description;
  std::string value_name;  // empty for a flag
  bool repeatable = false;
  bool list = false;       // takes comma-separated values (--kernel Abs,Add)
  bool exclusive = false;  // --help, --version: nothing else goes with them
  Values values = Values::none;

  bool takes_value() const { return !value_name.empty(); }
};

struct PositionalSpec {
  std::string name;
  Values first = Values::none;  // the first positional word
  Values rest = Values::none;   // the following ones
  bool repeatable = false;
};

struct VerbSpec {
  std::string name;
  std::string description;
  std::vector<OptionSpec> options;
  std::optional<PositionalSpec> positional;
};

struct Vocabulary {
  std::vector<std::string> kernels;
  std::vector<std::string> element_types;
  std::vector<std::string> implementations;
  std::vector<std::string> colors;
  std::vector<std::string> spins;       // --spin's named policies (microseconds are typed)
  std::vector<std::string> affinities;  // --affinity's policies
  std::vector<std::string> conflicts;   // --on-conflict's policies (import, merge)
  std::vector<std::string> host_classes;  // --host-class (export), --match (set, calibrate)
  // Kernels sharing one list of parameter names, grouped so the scripts stay small.
  std::vector<std::pair<std::vector<std::string>, std::vector<std::string>>> parameter_groups;
  std::vector<std::string> all_parameters;
};

struct CompletionModel {
  std::vector<OptionSpec> globals;
  std::vector<VerbSpec> verbs;
  Vocabulary words;
};

bool starts_with(std::string_view text, std::string_view prefix) { return text.substr(0, prefix.size()) == prefix; }

// The first clause of a help text: enough for a menu.
std::string short_description(std::string text) {
  for (std::string_view cut : {"\n", "; ", ": ", " ("}) {
    if (auto at = text.find(cut); at != std::string::npos) text.resize(at);
  }
  return text;
}

// How an option's values complete. The rules read the names and type names the verbs declare;
// add one here when a verb gains an option whose values can be listed.
Values option_values(const CLI::Option& option) {
  const std::string name = option.get_lnames().empty() ? option.get_name() : option.get_lnames().front();
  const std::string type = option.get_type_name();
  if (name == "color") return Values::color;
  if (name == "spin") return Values::spin;
  if (name == "affinity") return Values::affinity;
  if (name == "on-conflict") return Values::conflict;
  if (name == "host-class" || name == "match") return Values::host_class;
  if (starts_with(type, "KERNEL") || name == "kernel" || name == "kernels") return Values::kernel;
  if (starts_with(type, "TYPE") || name == "element-type") return Values::element_type;
  if (name == "implementation") return Values::implementation;
  if (name == "parameter") return Values::parameter;
  if (name == "output-dir" || starts_with(type, "DIR")) return Values::directory;
  if (starts_with(type, "PATH") || starts_with(type, "FILE") || type.find(":FILE") != std::string::npos ||
      name == "cache" || name == "report" || name == "path" || name == "model")
    return Values::file;
  return Values::none;
}

OptionSpec option_spec(const CLI::Option& option) {
  OptionSpec spec;
  for (const auto& s : option.get_snames()) spec.flags.push_back("-" + s);
  for (const auto& l : option.get_lnames()) spec.flags.push_back("--" + l);
  spec.description = short_description(option.get_description());
  const bool flag = option.get_expected_max() == 0;  // add_flag sets expected(0)
  if (!flag) {
    spec.value_name = option.get_option_text().empty() ? option.get_type_name() : option.get_option_text();
    if (auto colon = spec.value_name.find(':'); colon != std::string::npos) spec.value_name.resize(colon);
    if (spec.value_name.empty()) spec.value_name = "VALUE";
    spec.values = option_values(option);
    spec.list = option.get_delimiter() == ',';
  }
  spec.repeatable = option.get_expected_max() > 1 || option.get_multi_option_policy() == CLI::MultiOptionPolicy::TakeAll;
  spec.exclusive = std::find(spec.flags.begin(), spec.flags.end(), "--help") != spec.flags.end() ||
                   std::find(spec.flags.begin(), spec.flags.end(), "--version") != spec.flags.end();
  return spec;
}

std::optional<PositionalSpec> positional_spec(const CLI::App& verb) {
  for (const CLI::Option* option : verb.get_options()) {
    if (option->nonpositional()) continue;
    PositionalSpec spec;
    spec.name = option->get_name();
    spec.repeatable = option->get_expected_max() > 1;
    if (starts_with(option->get_type_name(), "KERNEL NAME=VALUE")) {
      // set: a kernel, then NAME=VALUE assignments for its parameters.
      spec.first = Values::kernel;
      spec.rest = Values::parameter;
    } else {
      spec.first = option_values(*option);
      spec.rest = spec.repeatable ? spec.first : Values::none;
    }
    return spec;
  }
  return std::nullopt;
}

Vocabulary vocabulary() {
  Vocabulary words;
  const runtime::KernelTable& table = runtime::cpu_kernel_table();
  std::set<std::string> kernels;
  std::set<int32_t> types;
  std::set<std::string> implementations;
  std::map<std::string, std::set<std::string>> parameters;
  std::set<std::string> all_parameters;
  for (const auto& def : table.definitions()) {
    kernels.insert(def.op_type);
    types.insert(static_cast<int32_t>(def.element_type));
    implementations.insert(def.implementation);
    auto& names = parameters[def.op_type];
    for (const auto& name : def.schema.parameter_names()) {
      names.insert(name);
      all_parameters.insert(name);
    }
  }
  words.kernels.assign(kernels.begin(), kernels.end());
  for (int32_t type : types)
    words.element_types.emplace_back(runtime::element_type_name(static_cast<runtime::ElementType>(type)));
  words.implementations.emplace_back(tune::kAllImplementations);
  words.implementations.insert(words.implementations.end(), implementations.begin(), implementations.end());
  for (const auto& [name, mode] : color_mode_names()) words.colors.push_back(name);
  words.spins = {"none", "short", "long"};
  words.affinities = {"none", "physical_cores"};
  words.conflicts = conflict_policy_names();
  words.host_classes = host_match_names();
  std::map<std::vector<std::string>, std::vector<std::string>> groups;
  for (const auto& [kernel, names] : parameters) {
    if (!names.empty()) groups[std::vector<std::string>(names.begin(), names.end())].push_back(kernel);
  }
  for (auto& [names, group_kernels] : groups) words.parameter_groups.emplace_back(group_kernels, names);
  words.all_parameters.assign(all_parameters.begin(), all_parameters.end());
  return words;
}

CompletionModel completion_model(const CLI::App& app) {
  CompletionModel model;
  for (const CLI::Option* option : app.get_options()) {
    if (option->nonpositional()) model.globals.push_back(option_spec(*option));
  }
  for (const CLI::App* verb : app.get_subcommands([](const CLI::App* sub) { return !sub->get_group().empty(); })) {
    VerbSpec spec;
    spec.name = verb->get_name();
    spec.description = short_description(verb->get_description());
    for (const CLI::Option* option : verb->get_options()) {
      if (option->nonpositional()) spec.options.push_back(option_spec(*option));
    }
    spec.positional = positional_spec(*verb);
    model.verbs.push_back(std::move(spec));
  }
  model.words = vocabulary();
  return model;
}

std::string join(const std::vector<std::string>& items, std::string_view separator = " ") {
  return fmt::format("{}", fmt::join(items, separator));
}

// Every flag of `options` and then of `more`, each once.
std::vector<std::string> all_flags(const std::vector<OptionSpec>& options, const std::vector<OptionSpec>& more = {}) {
  std::vector<std::string> flags;
  for (const auto* list : {&options, &more}) {
    for (const auto& o : *list) {
      for (const auto& f : o.flags)
        if (std::find(flags.begin(), flags.end(), f) == flags.end()) flags.push_back(f);
    }
  }
  return flags;
}

// 'text' for sh-like shells (bash, zsh).
std::string sh_quote(std::string_view text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'') quoted += "'\\''";
    else quoted += c;
  }
  return quoted + "'";
}

std::string header(std::string_view shell) {
  return fmt::format(
      "# {} completion for {}.\n"
      "# Generated by `{} completion {}` ({} {}) from the CLI definition\n"
      "# and the runtime's kernel table. Do not edit: regenerate it from the binary.\n",
      shell, kProgram, kProgram, shell, kProgram, ONNX_LIGHT_VERSION);
}

// ---------------------------------------------------------------------------------------------
// bash: self-contained (no bash-completion helpers needed); handles --opt=value and comma lists.

std::string bash_script(const CompletionModel& m) {
  std::string s = header("bash");
  s += "\n";
  s += fmt::format("_onnx_light_tune_kernels={}\n", sh_quote(join(m.words.kernels)));
  s += fmt::format("_onnx_light_tune_element_types={}\n", sh_quote(join(m.words.element_types)));
  s += fmt::format("_onnx_light_tune_implementations={}\n", sh_quote(join(m.words.implementations)));
  s += fmt::format("_onnx_light_tune_colors={}\n", sh_quote(join(m.words.colors)));
  s += fmt::format("_onnx_light_tune_spins={}\n", sh_quote(join(m.words.spins)));
  s += fmt::format("_onnx_light_tune_affinities={}\n", sh_quote(join(m.words.affinities)));
  s += fmt::format("_onnx_light_tune_conflicts={}\n", sh_quote(join(m.words.conflicts)));
  s += fmt::format("_onnx_light_tune_host_classes={}\n\n", sh_quote(join(m.words.host_classes)));

  s += "# The parameter names of kernel $1, each followed by '=' (every name for an unknown kernel).\n";
  s += "_onnx_light_tune_parameters() {\n  case \"$1\" in\n";
  for (const auto& [kernels, names] : m.words.parameter_groups) {
    std::vector<std::string> assignments;
    for (const auto& n : names) assignments.push_back(n + "=");
    s += fmt::format("    {}) echo {} ;;\n", join(kernels, "|"), sh_quote(join(assignments)));
  }
  std::vector<std::string> every;
  for (const auto& n : m.words.all_parameters) every.push_back(n + "=");
  s += fmt::format("    *) echo {} ;;\n  esac\n}}\n\n", sh_quote(join(every)));

  s += R"SH(# COMPREPLY: the words of $1 that start with $cur; with $2 = list, completes the item after
# the last comma of a comma-separated list.
_onnx_light_tune_words() {
  local prefix="" item="$cur" w
  if [[ $2 == list && $cur == *,* ]]; then
    prefix="${cur%,*},"
    item="${cur##*,}"
  fi
  COMPREPLY=()
  for w in $1; do
    [[ $w == "$item"* ]] && COMPREPLY+=("$prefix$w")
  done
}

# COMPREPLY for a value of kind $1 ($2: list or empty; $3: the kernel, for parameter names).
_onnx_light_tune_values() {
  case "$1" in
    kernel) _onnx_light_tune_words "$_onnx_light_tune_kernels" "$2" ;;
    element_type) _onnx_light_tune_words "$_onnx_light_tune_element_types" "$2" ;;
    implementation) _onnx_light_tune_words "$_onnx_light_tune_implementations" ;;
    color) _onnx_light_tune_words "$_onnx_light_tune_colors" ;;
    spin) _onnx_light_tune_words "$_onnx_light_tune_spins" ;;
    affinity) _onnx_light_tune_words "$_onnx_light_tune_affinities" ;;
    conflict) _onnx_light_tune_words "$_onnx_light_tune_conflicts" ;;
    host_class) _onnx_light_tune_words "$_onnx_light_tune_host_classes" ;;
    parameter)
      _onnx_light_tune_words "$(_onnx_light_tune_parameters "$3")"
      compopt -o nospace 2>/dev/null
      ;;
    file)
      compopt -o filenames 2>/dev/null
      mapfile -t COMPREPLY < <(compgen -f -- "$cur")
      ;;
    directory)
      compopt -o filenames 2>/dev/null
      mapfile -t COMPREPLY < <(compgen -d -- "$cur")
      ;;
    *) COMPREPLY=() ;;
  esac
}

)SH";

  // Options taking a value: prints "KIND [list]" and succeeds; fails for flags and unknown words.
  s += "# For an option taking a value in verb $1, prints the kind of its values (and 'list' for\n"
       "# comma-separated ones); fails for flags and other words.\n";
  s += "_onnx_light_tune_option_values() {\n  case \"$1:$2\" in\n";
  auto option_arms = [&](const std::string& verb_pattern, const std::vector<OptionSpec>& options) {
    for (const auto& o : options) {
      if (!o.takes_value()) continue;
      std::vector<std::string> patterns;
      for (const auto& f : o.flags) patterns.push_back(verb_pattern + ":" + f);
      s += fmt::format("    {}) echo {}{} ;;\n", join(patterns, "|"), values_name(o.values), o.list ? " list" : "");
    }
  };
  option_arms("*", m.globals);
  for (const auto& v : m.verbs) option_arms(v.name, v.options);
  s += "    *) return 1 ;;\n  esac\n}\n\n";

  std::vector<std::string> verb_names;
  for (const auto& v : m.verbs) verb_names.push_back(v.name);
  const std::string global_flags = join(all_flags(m.globals));

  s += R"SH(_onnx_light_tune() {
  local cur="${COMP_WORDS[COMP_CWORD]}" prev="" cword=$COMP_CWORD after_eq=0 verb="" word kind list i
  local -a positionals=()
  # bash splits --opt=value and NAME=VALUE at '=' (COMP_WORDBREAKS).
  if [[ $cur == "=" ]]; then
    cur=""
    prev="${COMP_WORDS[cword-1]}"
    after_eq=1
  elif ((cword >= 2)) && [[ ${COMP_WORDS[cword-1]} == "=" ]]; then
    prev="${COMP_WORDS[cword-2]}"
    after_eq=1
  elif ((cword >= 1)); then
    prev="${COMP_WORDS[cword-1]}"
  fi
  # The verb and the positional words before the cursor, skipping option values.
  for ((i = 1; i < cword; i++)); do
    word="${COMP_WORDS[i]}"
    if [[ $word == "=" ]]; then
      ((i++))
      continue
    fi
    if [[ $word == -* ]]; then
      if _onnx_light_tune_option_values "$verb" "$word" >/dev/null && [[ ${COMP_WORDS[i+1]} != "=" ]]; then
        ((i++))
      fi
      continue
    fi
    if [[ -z $verb ]]; then
      verb="$word"
    else
      positionals+=("$word")
    fi
  done
  if kind=$(_onnx_light_tune_option_values "$verb" "$prev"); then
    read -r kind list <<<"$kind"
    _onnx_light_tune_values "$kind" "$list" "${positionals[0]}"
    return 0
  fi
  if ((after_eq)); then
    COMPREPLY=()
    return 0
  fi
  if [[ -z $verb ]]; then
    if [[ $cur == -* ]]; then
)SH";
  s += fmt::format("      _onnx_light_tune_words {}\n", sh_quote(global_flags));
  s += "    else\n";
  s += fmt::format("      _onnx_light_tune_words {}\n", sh_quote(join(verb_names)));
  s += "    fi\n    return 0\n  fi\n";
  s += "  local count=${#positionals[@]}\n";
  s += "  case \"$verb\" in\n";
  for (const auto& v : m.verbs) {
    const std::string flags = sh_quote(join(all_flags(v.options, m.globals)));
    s += fmt::format("    {})\n", v.name);
    if (!v.positional) {
      s += fmt::format("      _onnx_light_tune_words {}\n      ;;\n", flags);
      continue;
    }
    s += fmt::format("      if [[ $cur == -* ]]; then\n        _onnx_light_tune_words {}\n", flags);
    const auto& p = *v.positional;
    s += fmt::format("      elif ((count == 0)); then\n        _onnx_light_tune_values {}\n", values_name(p.first));
    s += fmt::format("      else\n        _onnx_light_tune_values {} \"\" \"${{positionals[0]}}\"\n      fi\n      ;;\n",
                     values_name(p.rest));
  }
  s += "  esac\n  return 0\n}\n\n";
  s += fmt::format("complete -F _onnx_light_tune {}\n", kProgram);
  return s;
}

// ---------------------------------------------------------------------------------------------
// zsh: an autoloadable #compdef function built on _arguments.

// Inside [...] of an _arguments spec, and in _describe items.
std::string zsh_description(std::string_view text) {
  std::string escaped;
  for (char c : text) {
    if (c == '[' || c == ']' || c == ':' || c == '\\') escaped += '\\';
    escaped += c;
  }
  return escaped;
}

std::string zsh_action(Values values, bool list, const Vocabulary& words) {
  switch (values) {
    case Values::none: return " ";
    case Values::file: return "_files";
    case Values::directory: return "_files -/";
    case Values::kernel: return list ? "_sequence _onnx_light_tune_kernel" : "_onnx_light_tune_kernel";
    case Values::element_type: return list ? "_sequence _onnx_light_tune_element_type" : "_onnx_light_tune_element_type";
    case Values::implementation: return fmt::format("({})", join(words.implementations));
    case Values::color: return fmt::format("({})", join(words.colors));
    case Values::spin: return fmt::format("({})", join(words.spins));
    case Values::affinity: return fmt::format("({})", join(words.affinities));
    case Values::conflict: return fmt::format("({})", join(words.conflicts));
    case Values::host_class: return fmt::format("({})", join(words.host_classes));
    case Values::parameter: return "_onnx_light_tune_parameter";
  }
  return " ";
}

std::string zsh_option(const OptionSpec& o, const Vocabulary& words) {
  std::string prefix;
  if (o.exclusive) prefix = "(- *)";
  else if (o.repeatable) prefix = "*";
  else if (o.flags.size() > 1) prefix = "(" + join(o.flags) + ")";
  std::vector<std::string> names;
  for (const auto& f : o.flags) {
    if (!o.takes_value()) names.push_back(f);
    else names.push_back(f + (starts_with(f, "--") ? "=" : "+"));
  }
  std::string rest = "[" + zsh_description(o.description) + "]";
  if (o.takes_value())
    rest += ":" + zsh_description(o.value_name) + ":" + zsh_action(o.values, o.list, words);
  if (names.size() == 1) return sh_quote(prefix + names.front() + rest);
  return (prefix.empty() ? "" : sh_quote(prefix)) + "{" + join(names, ",") + "}" + sh_quote(rest);
}

std::string zsh_script(const CompletionModel& m) {
  std::string s = fmt::format("#compdef {}\n", kProgram);
  s += header("zsh");
  s += "\n";
  s += fmt::format("_onnx_light_tune_kernel() {{\n  local -a kernels=({})\n"
                   "  _wanted kernels expl kernel compadd -a kernels\n}}\n\n",
                   join(m.words.kernels));
  s += fmt::format("_onnx_light_tune_element_type() {{\n  local -a types=({})\n"
                   "  _wanted element-types expl 'element type' compadd -a types\n}}\n\n",
                   join(m.words.element_types));
  s += "# NAME= for the parameters of the kernel named first on the line (all names otherwise).\n";
  s += "_onnx_light_tune_parameter() {\n  local -a names\n  case $line[1] in\n";
  for (const auto& [kernels, names] : m.words.parameter_groups)
    s += fmt::format("    {}) names=({}) ;;\n", join(kernels, "|"), join(names));
  s += fmt::format("    *) names=({}) ;;\n  esac\n", join(m.words.all_parameters));
  s += "  _wanted parameters expl 'tuning parameter' compadd -S = -a names\n}\n\n";

  std::vector<std::string> global_specs;
  for (const auto& o : m.globals) global_specs.push_back(zsh_option(o, m.words));
  std::vector<std::string> global_after;  // global options after the verb (not --version/--help)
  for (const auto& o : m.globals)
    if (!o.exclusive) global_after.push_back(zsh_option(o, m.words));

  s += "_onnx-light-tune() {\n";
  s += "  local curcontext=\"$curcontext\" state state_descr line ret=1\n";
  s += "  typeset -A opt_args\n";
  s += "  _arguments -C -s -S \\\n";
  for (const auto& spec : global_specs) s += "    " + spec + " \\\n";
  s += "    '1: :->verb' \\\n    '*:: :->args' && ret=0\n";
  s += "  case $state in\n    verb)\n      local -a verbs=(\n";
  for (const auto& v : m.verbs)
    s += fmt::format("        {}\n", sh_quote(zsh_description(v.name) + ":" + zsh_description(v.description)));
  s += "      )\n      _describe -t verbs 'onnx-light-tune verb' verbs && ret=0\n      ;;\n";
  s += "    args)\n      curcontext=\"${curcontext%:*:*}:onnx-light-tune-$words[1]:\"\n";
  s += "      case $words[1] in\n";
  for (const auto& v : m.verbs) {
    s += fmt::format("        {})\n          _arguments -s -S \\\n", v.name);
    for (const auto& o : v.options) s += "            " + zsh_option(o, m.words) + " \\\n";
    for (const auto& spec : global_after) s += "            " + spec + " \\\n";
    if (v.positional) {
      const auto& p = *v.positional;
      auto label = [&](Values values) {
        switch (values) {
          case Values::kernel: return std::string("kernel");
          case Values::parameter: return std::string("NAME=VALUE");
          case Values::file: return std::string("file");
          default: return zsh_description(p.name);
        }
      };
      if (p.first == p.rest && p.repeatable) {
        s += "            " + sh_quote("*:" + label(p.first) + ":" + zsh_action(p.first, false, m.words)) + " \\\n";
      } else {
        s += "            " + sh_quote("1:" + label(p.first) + ":" + zsh_action(p.first, false, m.words)) + " \\\n";
        if (p.repeatable)
          s += "            " + sh_quote("*:" + label(p.rest) + ":" + zsh_action(p.rest, false, m.words)) + " \\\n";
      }
    }
    s += "            && ret=0\n          ;;\n";
  }
  s += "      esac\n      ;;\n  esac\n  return ret\n}\n\n";
  s += "_onnx-light-tune \"$@\"\n";
  return s;
}

// ---------------------------------------------------------------------------------------------
// fish: `complete` lines plus helper functions that find the verb and the positional words.

std::string fish_quote(std::string_view text) {
  std::string quoted = "'";
  for (char c : text) {
    if (c == '\'' || c == '\\') quoted += '\\';
    quoted += c;
  }
  return quoted + "'";
}

std::string fish_value_flags(const OptionSpec& o) {
  if (!o.takes_value()) return "";
  switch (o.values) {
    case Values::file: return " -r -F";
    case Values::directory: return " -x -a '(__fish_complete_directories)'";
    case Values::kernel:
      return o.list ? " -x -a '(__onnx_light_tune_comma __onnx_light_tune_kernels)'" : " -x -a '(__onnx_light_tune_kernels)'";
    case Values::element_type:
      return o.list ? " -x -a '(__onnx_light_tune_comma __onnx_light_tune_element_types)'"
                    : " -x -a '(__onnx_light_tune_element_types)'";
    case Values::implementation: return " -x -a '(__onnx_light_tune_implementations)'";
    case Values::color: return " -x -a '(__onnx_light_tune_colors)'";
    case Values::spin: return " -x -a '(__onnx_light_tune_spins)'";
    case Values::affinity: return " -x -a '(__onnx_light_tune_affinities)'";
    case Values::conflict: return " -x -a '(__onnx_light_tune_conflicts)'";
    case Values::host_class: return " -x -a '(__onnx_light_tune_host_classes)'";
    case Values::parameter: return " -x -a '(__onnx_light_tune_parameters)'";
    case Values::none: return " -x";
  }
  return " -x";
}

std::string fish_option(const OptionSpec& o, const std::string& condition) {
  std::string line = fmt::format("complete -c {}", kProgram);
  if (!condition.empty()) line += " -n " + fish_quote(condition);
  for (const auto& f : o.flags) {
    if (starts_with(f, "--")) line += " -l " + f.substr(2);
    else line += " -s " + f.substr(1);
  }
  line += fish_value_flags(o);
  line += " -d " + fish_quote(o.description);
  return line + "\n";
}

std::string fish_positional(Values values) {
  switch (values) {
    case Values::file: return "-F";
    case Values::directory: return "-x -a '(__fish_complete_directories)'";
    case Values::kernel: return "-x -a '(__onnx_light_tune_kernels)'";
    case Values::element_type: return "-x -a '(__onnx_light_tune_element_types)'";
    case Values::implementation: return "-x -a '(__onnx_light_tune_implementations)'";
    case Values::color: return "-x -a '(__onnx_light_tune_colors)'";
    case Values::spin: return "-x -a '(__onnx_light_tune_spins)'";
    case Values::affinity: return "-x -a '(__onnx_light_tune_affinities)'";
    case Values::conflict: return "-x -a '(__onnx_light_tune_conflicts)'";
    case Values::host_class: return "-x -a '(__onnx_light_tune_host_classes)'";
    case Values::parameter: return "-x -a '(__onnx_light_tune_parameters)'";
    case Values::none: return "";
  }
  return "";
}

std::string fish_script(const CompletionModel& m) {
  std::string s = header("fish");
  s += "\n";
  auto list_function = [&](std::string_view name, const std::vector<std::string>& items, std::string_view what) {
    s += fmt::format("function {} --description {}\n    printf '%s\\n' {}\nend\n\n", name, fish_quote(what), join(items));
  };
  list_function("__onnx_light_tune_kernels", m.words.kernels, "Kernel names of the runtime's kernel table");
  list_function("__onnx_light_tune_element_types", m.words.element_types, "Element types of the kernel table");
  list_function("__onnx_light_tune_implementations", m.words.implementations, "Kernel implementations");
  list_function("__onnx_light_tune_colors", m.words.colors, "Values of --color");
  list_function("__onnx_light_tune_spins", m.words.spins, "Named values of --spin");
  list_function("__onnx_light_tune_affinities", m.words.affinities, "Values of --affinity");
  list_function("__onnx_light_tune_conflicts", m.words.conflicts, "Values of --on-conflict");
  list_function("__onnx_light_tune_host_classes", m.words.host_classes, "Values of --host-class and --match");

  s += "# Runs the list function $argv[1], prefixing each word with what the current token holds up to\n"
       "# its last comma (--kernel Abs,A<TAB>).\n";
  s += "function __onnx_light_tune_comma\n"
       "    set -l token (string replace -r -- '^--[^=]*=' '' (commandline -ct))\n"
       "    set -l prefix (string match -r -- '^.*,' $token)\n"
       "    for word in ($argv[1])\n"
       "        echo \"$prefix$word\"\n"
       "    end\n"
       "end\n\n";

  s += "# Succeeds when $argv[2] is an option taking a value in verb $argv[1].\n";
  s += "function __onnx_light_tune_takes_value\n    switch \"$argv[1]:$argv[2]\"\n";
  std::vector<std::string> patterns;
  auto add_patterns = [&](const std::string& verb, const std::vector<OptionSpec>& options) {
    for (const auto& o : options)
      if (o.takes_value())
        for (const auto& f : o.flags) patterns.push_back(fish_quote(verb + ":" + f));
  };
  add_patterns("*", m.globals);
  for (const auto& v : m.verbs) add_patterns(v.name, v.options);
  s += fmt::format("        case {}\n            return 0\n    end\n    return 1\nend\n\n", join(patterns));

  s += "# Prints the verb, then the positional words before the cursor (option values skipped).\n";
  s += R"SH(function __onnx_light_tune_args
    set -l tokens (commandline -opc)
    set -e tokens[1]
    set -l verb
    set -l skip 0
    for token in $tokens
        if test $skip -eq 1
            set skip 0
            continue
        end
        switch $token
            case '--*=*'
                continue
            case '-*'
                if __onnx_light_tune_takes_value "$verb" $token
                    set skip 1
                end
                continue
        end
        if test -z "$verb"
            set verb $token
        end
        echo $token
    end
end

function __onnx_light_tune_needs_verb
    test (count (__onnx_light_tune_args)) -eq 0
end

# Succeeds when the verb is $argv[1] and (with $argv[2]) that many positional words were given.
function __onnx_light_tune_verb_is
    set -l args (__onnx_light_tune_args)
    test "$args[1]" = "$argv[1]"; or return 1
    set -q argv[2]; or return 0
    test (math (count $args) - 1) -eq $argv[2]
end

# NAME= for each parameter of the kernel named first after the verb (every name otherwise).
function __onnx_light_tune_parameters
    set -l args (__onnx_light_tune_args)
    switch "$args[2]"
)SH";
  for (const auto& [kernels, names] : m.words.parameter_groups) {
    std::vector<std::string> quoted, assignments;
    for (const auto& k : kernels) quoted.push_back(fish_quote(k));
    for (const auto& n : names) assignments.push_back(n + "=");
    s += fmt::format("        case {}\n            printf '%s\\n' {}\n", join(quoted), join(assignments));
  }
  std::vector<std::string> every;
  for (const auto& n : m.words.all_parameters) every.push_back(n + "=");
  s += fmt::format("        case '*'\n            printf '%s\\n' {}\n    end\nend\n\n", join(every));

  s += fmt::format("complete -c {} -f\n\n# Options before the verb.\n", kProgram);
  for (const auto& o : m.globals) s += fish_option(o, "");
  s += "\n# Verbs.\n";
  for (const auto& v : m.verbs)
    s += fmt::format("complete -c {} -n __onnx_light_tune_needs_verb -a {} -d {}\n", kProgram, v.name,
                     fish_quote(v.description));
  for (const auto& v : m.verbs) {
    s += fmt::format("\n# {}\n", v.name);
    const std::string condition = "__onnx_light_tune_verb_is " + v.name;
    for (const auto& o : v.options) s += fish_option(o, condition);
    if (!v.positional) continue;
    const auto& p = *v.positional;
    if (p.first == p.rest && p.repeatable) {
      if (auto flags = fish_positional(p.first); !flags.empty())
        s += fmt::format("complete -c {} -n {} {}\n", kProgram, fish_quote(condition), flags);
      continue;
    }
    if (auto flags = fish_positional(p.first); !flags.empty())
      s += fmt::format("complete -c {} -n {} {}\n", kProgram, fish_quote(condition + " 0"), flags);
    if (p.repeatable) {
      if (auto flags = fish_positional(p.rest); !flags.empty())
        s += fmt::format("complete -c {} -n {} {}\n", kProgram,
                         fish_quote(condition + "; and not __onnx_light_tune_verb_is " + v.name + " 0"), flags);
    }
  }
  return s;
}

}  // namespace

std::string completion_script(const CLI::App& app, const std::string& shell) {
  const CompletionModel model = completion_model(app);
  if (shell == "bash") return bash_script(model);
  if (shell == "zsh") return zsh_script(model);
  if (shell == "fish") return fish_script(model);
  throw std::invalid_argument("unknown shell " + shell);
}

void register_completion(CLI::App& app, AppContext& context) {
  auto shell = std::make_shared<std::string>();
  CLI::App* verb = app.add_subcommand("completion", "Print a completion script for bash, zsh or fish");
  verb->group("");  // hidden: not a user-facing verb, used by the build and by packagers
  verb->add_option("shell", *shell, "bash, zsh or fish")->required()->check(one_of({"bash", "zsh", "fish"}));
  verb->footer(
      "The script is generated from this binary's verbs and options and from the runtime's kernel\n"
      "table; the build writes them to <build>/completions/ and 'cmake --install' installs them.\n"
      "Examples:\n"
      "  source <(onnx-light-tune completion bash)\n"
      "  onnx-light-tune completion zsh > ~/.zfunc/_onnx-light-tune\n"
      "  onnx-light-tune completion fish > ~/.config/fish/completions/onnx-light-tune.fish");
  verb->callback([shell, &app, &context] {
    context.action = [shell, &app, &context] {
      *context.out << completion_script(app, *shell);
      return kExitOk;
    };
  });
}

}  // namespace onnx_light::cli
