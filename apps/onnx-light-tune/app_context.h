#pragma once
// State shared by the verbs of one CLI invocation: global options and the output streams.
// Verbs register their options in register_<verb>() and set `action`; main runs it and maps
// exceptions to exit codes.
#include <cstdint>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace onnx_light::cli {

enum class ColorMode { automatic, always, never };

// The values of --color, in the order help, man pages and completions show them.
inline const std::vector<std::pair<std::string, ColorMode>>& color_mode_names() {
  static const std::vector<std::pair<std::string, ColorMode>> names{
      {"auto", ColorMode::automatic}, {"always", ColorMode::always}, {"never", ColorMode::never}};
  return names;
}

struct AppContext {
  std::string cache_path;  // --cache; empty means the default path
  bool system_cache = false;  // --system: cache_path is the system cache
  int64_t lock_timeout_s = 30;  // --lock-timeout; 0 waits forever
  int verbosity = 0;       // -v raises, -q lowers
  ColorMode color = ColorMode::automatic;
  std::ostream* out = &std::cout;  // results only
  std::ostream* err = &std::cerr;  // logs, progress, errors
  // The selected verb's work; returns the exit code.
  std::function<int()> action;
  // Set by verbs that read every profile of a cache (inspect, list, propose, load, import, merge,
  // export, diff, remove): main then grows the heap with huge pages first. Verbs that run models
  // keep the ordinary heap (and its resident size).
  bool reads_whole_cache = false;

  bool use_color(bool stream_is_tty) const;
};

// Exit codes shared by every verb.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;

}  // namespace onnx_light::cli
