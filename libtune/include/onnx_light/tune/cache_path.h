#pragma once
// Where the tuning caches live. Two layers: the user cache (read and written) over a read-only
// system cache maintained by the administrator. Profiles of the user cache win.
#include <filesystem>
#include <optional>
#include <string_view>

namespace onnx_light::tune {

// $ONNX_LIGHT_TUNING_CACHE, else $XDG_CACHE_HOME/onnx-light/kernel_tuning.cache, else
// $HOME/.cache/onnx-light/kernel_tuning.cache, else the same under the password database's home
// directory (a relative XDG_CACHE_HOME is ignored, as the XDG spec says). Throws NotFoundError
// when none of them gives a path.
std::filesystem::path default_kernel_tuning_cache_path();
// `explicit_path` when not empty, else the default.
std::filesystem::path resolve_cache_path(std::string_view explicit_path);
// $ONNX_LIGHT_SYSTEM_TUNING_CACHE, else /etc/onnx-light/kernel_tuning.cache; nullopt when the
// variable is set to an empty string (no system layer).
std::optional<std::filesystem::path> system_kernel_tuning_cache_path();
// "<cache>.lock", the file writers flock.
std::filesystem::path lock_path_for(const std::filesystem::path& cache);

}  // namespace onnx_light::tune
