#include "onnx_light/tune/cache_path.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "onnx_light/runtime/error.h"

namespace onnx_light::tune {

namespace {

const char* non_empty_env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && value[0] != '\0' ? value : nullptr;
}

// The home directory the password database gives this user (services and cron jobs often run
// without HOME); "" when there is none.
std::string password_database_home() {
  long size = ::sysconf(_SC_GETPW_R_SIZE_MAX);
  std::vector<char> buffer(static_cast<std::size_t>(size > 0 ? size : 16384));
  passwd entry{};
  passwd* found = nullptr;
  if (::getpwuid_r(::geteuid(), &entry, buffer.data(), buffer.size(), &found) != 0 || found == nullptr ||
      found->pw_dir == nullptr || found->pw_dir[0] != '/') {
    return {};
  }
  return found->pw_dir;
}

}  // namespace

std::filesystem::path default_kernel_tuning_cache_path() {
  if (const char* explicit_path = non_empty_env("ONNX_LIGHT_TUNING_CACHE")) return explicit_path;
  // The XDG Base Directory spec: a relative path in XDG_CACHE_HOME is invalid and ignored.
  if (const char* xdg = non_empty_env("XDG_CACHE_HOME"); xdg != nullptr && xdg[0] == '/') {
    return std::filesystem::path(xdg) / "onnx-light" / "kernel_tuning.cache";
  }
  if (const char* home = non_empty_env("HOME")) {
    return std::filesystem::path(home) / ".cache" / "onnx-light" / "kernel_tuning.cache";
  }
  if (const std::string home = password_database_home(); !home.empty()) {
    return std::filesystem::path(home) / ".cache" / "onnx-light" / "kernel_tuning.cache";
  }
  throw NotFoundError(
      "no tuning cache path: set ONNX_LIGHT_TUNING_CACHE, XDG_CACHE_HOME or HOME, or pass a path (--cache)");
}

std::filesystem::path resolve_cache_path(std::string_view explicit_path) {
  if (!explicit_path.empty()) return std::filesystem::path(explicit_path);
  return default_kernel_tuning_cache_path();
}

std::optional<std::filesystem::path> system_kernel_tuning_cache_path() {
  const char* value = std::getenv("ONNX_LIGHT_SYSTEM_TUNING_CACHE");
  if (value == nullptr) return std::filesystem::path("/etc/onnx-light/kernel_tuning.cache");
  if (value[0] == '\0') return std::nullopt;  // explicitly disabled
  return std::filesystem::path(value);
}

std::filesystem::path lock_path_for(const std::filesystem::path& cache) {
  std::filesystem::path lock = cache;
  lock += ".lock";
  return lock;
}

}  // namespace onnx_light::tune
