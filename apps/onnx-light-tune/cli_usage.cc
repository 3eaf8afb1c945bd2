#include "cli_usage.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <charconv>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/tuning_value.h"
#include "onnx_light/tune/suggestion.h"

namespace onnx_light::cli {

// The error kind --json reports: "usage" for the command line, else the library's error type.
const char* error_kind(const onnx_light::Error& error) {
  if (dynamic_cast<const NotFoundError*>(&error) != nullptr) return "not_found";
  if (dynamic_cast<const InvalidValueError*>(&error) != nullptr) return "invalid_value";
  if (dynamic_cast<const TypeMismatchError*>(&error) != nullptr) return "type_mismatch";
  if (dynamic_cast<const ModelError*>(&error) != nullptr) return "model";
  if (dynamic_cast<const UnsupportedError*>(&error) != nullptr) return "unsupported";
  if (dynamic_cast<const InputError*>(&error) != nullptr) return "input";
  if (dynamic_cast<const IoError*>(&error) != nullptr) return "io";
  if (dynamic_cast<const MemoryLimitError*>(&error) != nullptr) return "memory_limit";
  return "error";
}

CLI::Validator integer_in_range(int64_t minimum, int64_t maximum) {
  return CLI::Validator(
      [minimum, maximum](std::string& text) -> std::string {
        int64_t value = 0;
        const char* end = text.data() + text.size();
        const auto [stop, error] = std::from_chars(text.data(), end, value);
        if (text.empty() || error != std::errc() || stop != end) {
          return fmt::format("'{}' is not a whole number (expected {} to {})", text, minimum, maximum);
        }
        if (value < minimum || value > maximum) {
          return fmt::format("{} is out of range (expected {} to {})", value, minimum, maximum);
        }
        return {};
      },
      "");
}

CLI::Validator one_of(std::vector<std::string> names) {
  return CLI::Validator(
      [names](std::string& text) -> std::string {
        for (const auto& name : names) {
          if (name.size() == text.size() &&
              std::equal(name.begin(), name.end(), text.begin(), [](char a, char b) {
                return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
              })) {
            text = name;
            return {};
          }
        }
        const auto near = tune::nearest_names(text, names);
        return fmt::format("'{}' is not one of {}{}", text, fmt::join(names, ", "),
                           near.empty() ? "" : fmt::format("; did you mean '{}'?", near.front()));
      },
      "");
}

CLI::Validator byte_size() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        try {
          const auto value = std::get<int64_t>(runtime::parse_value(text, runtime::ValueType::int64, "size"));
          if (value < 0) return fmt::format("'{}' is negative (expected a size such as 64M)", text);
        } catch (const onnx_light::Error&) {
          return fmt::format("'{}' is not a size (a whole number of bytes with an optional K, M or G suffix, such "
                             "as 64M)",
                             text);
        }
        return {};
      },
      "");
}

CLI::Validator existing_file() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        struct stat info {};
        if (::stat(text.c_str(), &info) != 0) return fmt::format("'{}': no such file", text);
        if (S_ISDIR(info.st_mode)) return fmt::format("'{}' is a directory, not a file", text);
        return {};
      },
      "");
}

namespace {

// CLI11 appends validator descriptions after a ':' ("N:INT in [0 - 65536]"); the name is what
// comes before it.
std::string bare_type_name(const CLI::Option* option) {
  std::string name = option->get_type_name();
  if (const auto colon = name.find(':'); colon != std::string::npos) name.erase(colon);
  return name;
}

}  // namespace

std::string HelpFormatter::make_option_name(const CLI::Option* option, bool is_positional) const {
  std::string name = CLI::Formatter::make_option_name(option, is_positional);
  // "--save,--no-save{false}": the default of a negated flag is an implementation detail.
  for (auto open = name.find('{'); open != std::string::npos; open = name.find('{')) {
    const auto close = name.find('}', open);
    if (close == std::string::npos) break;
    name.erase(open, close - open + 1);
  }
  return name;
}

std::string HelpFormatter::make_option_opts(const CLI::Option* option) const {
  if (!option->get_option_text().empty()) return " " + option->get_option_text();
  std::string text;
  if (option->get_type_size() != 0) {
    const std::string type = bare_type_name(option);
    if (!type.empty()) text += " " + type;
    if (option->get_expected_max() == CLI::detail::expected_max_vector_size) text += " ...";
    if (option->get_required()) text += " (required)";
  }
  return text;
}

std::string HelpFormatter::make_option_desc(const CLI::Option* option) const {
  std::string text = option->get_description();
  const std::string fallback = option->get_default_str();
  if (option->get_type_size() != 0 && !fallback.empty() && text.find("default") == std::string::npos) {
    text += fmt::format(" [default: {}]", fallback);
  }
  return text;
}

namespace {

std::vector<std::string> verb_names(const CLI::App& app) {
  std::vector<std::string> names;
  for (const auto* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (!sub->get_group().empty()) names.push_back(sub->get_name());  // hidden verbs have no group
  }
  return names;
}

// Every spelling of the options of `app` ("--long", "-l").
std::vector<std::string> option_spellings(const CLI::App& app) {
  std::vector<std::string> names;
  for (const auto* option : app.get_options()) {
    for (const auto& name : option->get_lnames()) names.push_back("--" + name);
    for (const auto& name : option->get_snames()) names.push_back("-" + name);
  }
  return names;
}

const CLI::App* deepest_parsed(const CLI::App& app) {
  for (const auto* sub : app.get_subcommands()) return deepest_parsed(*sub);
  return &app;
}

std::string help_hint(const CLI::App& app) {
  const CLI::App* verb = deepest_parsed(app);
  return verb == &app ? "see 'onnx-light-tune --help'"
                      : fmt::format("see 'onnx-light-tune {} --help'", verb->get_name());
}

}  // namespace

std::optional<std::string> unknown_verb_message(const CLI::App& app, int argc, const char* const* argv) {
  const std::vector<std::string> verbs = verb_names(app);
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--") return std::nullopt;
    if (word.starts_with("-")) {
      // A global option that takes a value in the next word.
      if (word.find('=') == std::string::npos) {
        const CLI::Option* option = app.get_option_no_throw(word);
        if (option != nullptr && option->get_expected_min() > 0) ++i;
      }
      continue;
    }
    const auto all = app.get_subcommands([](const CLI::App*) { return true; });
    if (std::any_of(all.begin(), all.end(), [&](const CLI::App* sub) { return sub->check_name(word); })) {
      return std::nullopt;
    }
    const auto near = tune::nearest_names(word, verbs);
    return fmt::format("unknown verb '{}'{}; the verbs are {}", word,
                       near.empty() ? "" : fmt::format(" (did you mean '{}'?)", fmt::join(near, "' or '")),
                       fmt::join(verbs, ", "));
  }
  return std::nullopt;
}

std::string parse_error_message(const CLI::App& app, const CLI::ParseError& error) {
  const CLI::App* verb = deepest_parsed(app);
  const std::string hint = help_hint(app);
  if (dynamic_cast<const CLI::ExtrasError*>(&error) != nullptr) {
    std::vector<std::string> parts;
    std::vector<std::string> candidates = option_spellings(*verb);
    if (verb != &app) {
      const auto global = option_spellings(app);
      candidates.insert(candidates.end(), global.begin(), global.end());
    }
    for (const auto& word : app.remaining(true)) {
      if (word.starts_with("-")) {
        const std::string name = word.substr(0, word.find('='));
        const auto near = tune::nearest_names(name, candidates);
        parts.push_back(fmt::format("unknown option '{}'{}", name,
                                    near.empty() ? "" : fmt::format(" (did you mean '{}'?)", fmt::join(near, "' or '"))));
      } else {
        parts.push_back(fmt::format("unexpected argument '{}'", word));
      }
    }
    if (parts.empty()) parts.push_back(error.what());
    return fmt::format("{}; {}", fmt::join(parts, "; "), hint);
  }
  std::string message = error.what();
  if (message == "A subcommand is required") message = "no verb given";
  // "--threads: 1 required N missing", "Expected exactly 1 arguments to --x, got 0".
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&error) != nullptr) {
    const auto colon = message.find(':');
    if (colon != std::string::npos && message.find("missing") != std::string::npos) {
      message = fmt::format("{} needs a value", message.substr(0, colon));
    }
  }
  if (!message.empty()) message[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(message[0])));
  return fmt::format("{}; {}", message, hint);
}

bool wants_json(int argc, const char* const* argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--") return false;
    if (word == "--json") return true;
  }
  return false;
}

int report_error(std::ostream& out, std::ostream& err, bool json, const std::string& kind, const std::string& message,
                 int exit_status) {
  err << "onnx-light-tune: error: " << message << "\n";
  err.flush();
  if (json) {
    const nlohmann::json object{{"error", {{"message", message}, {"kind", kind}, {"exit_status", exit_status}}}};
    out << object.dump(2) << "\n";
    out.flush();
  }
  return exit_status;
}

}  // namespace onnx_light::cli
