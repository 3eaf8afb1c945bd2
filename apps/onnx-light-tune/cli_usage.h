#pragma once
// Usage errors and how the command line is explained: validators whose messages and help text say
// what is wanted (never CLI11's internals), the help formatter, "did you mean" for verbs and
// options, and the error report main prints (a human line on stderr, a JSON object on stdout
// with --json).
#include <cstdint>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "onnx_light/runtime/error.h"

namespace onnx_light::cli {

// A command line the tool cannot act on (exit status 2). The message names the flag or value.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An integer from `minimum` to `maximum`; "--threads: 'abc' is not a whole number".
CLI::Validator integer_in_range(int64_t minimum, int64_t maximum);
// One of `names` (case-insensitive; the value is rewritten to the listed spelling).
CLI::Validator one_of(std::vector<std::string> names);
// A byte count with an optional K, M or G suffix ("64M").
CLI::Validator byte_size();
// An existing regular file (or a readable special file such as /dev/stdin).
CLI::Validator existing_file();

// Help without validator descriptions in the option column ("N", not "N:INT in [0 - 65536]"),
// defaults as "[default: X]" after the description.
class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_option_name(const CLI::Option* option, bool is_positional) const override;
  std::string make_option_opts(const CLI::Option* option) const override;
  std::string make_option_desc(const CLI::Option* option) const override;
};

// The first word of argv that should be a verb but is not one ("inspekt"), with a suggestion;
// nullopt when the verb is known or absent. Values of the global options are skipped.
std::optional<std::string> unknown_verb_message(const CLI::App& app, int argc, const char* const* argv);

// A human message for a CLI11 parse error: unknown options with the nearest ones, a missing value
// named by its option, and the verb's --help to read.
std::string parse_error_message(const CLI::App& app, const CLI::ParseError& error);

// True when argv asks for --json (before a "--").
bool wants_json(int argc, const char* const* argv);

// The error kind --json reports for a library error: "not_found", "invalid_value", "type_mismatch",
// "model", "unsupported", "input", "io", "memory_limit", else "error".
const char* error_kind(const onnx_light::Error& error);

// "onnx-light-tune: error: MESSAGE" on `err`, and with `json` also
// {"error": {"message", "kind", "exit_status"}} on `out`. Returns exit_status.
int report_error(std::ostream& out, std::ostream& err, bool json, const std::string& kind, const std::string& message,
                 int exit_status);

}  // namespace onnx_light::cli
