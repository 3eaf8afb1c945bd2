#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <doctest/doctest.h>

#include "onnx_light/runtime/error.h"
#include "onnx_light/tune/cache_path.h"

using namespace onnx_light;
using namespace onnx_light::tune;

namespace {

// Sets (or unsets) environment variables for one test and restores them afterwards.
class EnvGuard {
 public:
  void set(const char* name, const char* value) {
    remember(name);
    if (value == nullptr) {
      ::unsetenv(name);
    } else {
      ::setenv(name, value, 1);
    }
  }
  ~EnvGuard() {
    for (auto& [name, value] : saved_) {
      if (value) {
        ::setenv(name.c_str(), value->c_str(), 1);
      } else {
        ::unsetenv(name.c_str());
      }
    }
  }

 private:
  void remember(const char* name) {
    for (const auto& entry : saved_) {
      if (entry.first == name) return;
    }
    const char* value = std::getenv(name);
    saved_.emplace_back(name, value ? std::optional<std::string>(value) : std::nullopt);
  }
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

}  // namespace

TEST_CASE("cache_path_environment_precedence") {
  EnvGuard env;
  env.set("ONNX_LIGHT_TUNING_CACHE", "/explicit/k.cache");
  env.set("XDG_CACHE_HOME", "/xdg");
  env.set("HOME", "/home/u");
  CHECK(default_kernel_tuning_cache_path() == "/explicit/k.cache");
  env.set("ONNX_LIGHT_TUNING_CACHE", "");  // empty counts as unset
  CHECK(default_kernel_tuning_cache_path() == "/xdg/onnx-light/kernel_tuning.cache");
  env.set("XDG_CACHE_HOME", nullptr);
  CHECK(default_kernel_tuning_cache_path() == "/home/u/.cache/onnx-light/kernel_tuning.cache");
  env.set("HOME", nullptr);
  // Without HOME: the password database's home (a user it does not know gets NotFoundError; the
  // CLI test runs that case under an unknown uid).
  const passwd* entry = ::getpwuid(::geteuid());
  REQUIRE(entry != nullptr);
  CHECK(default_kernel_tuning_cache_path() ==
        std::filesystem::path(entry->pw_dir) / ".cache" / "onnx-light" / "kernel_tuning.cache");
}

TEST_CASE("cache_path_explicit_path_wins") {
  EnvGuard env;
  env.set("ONNX_LIGHT_TUNING_CACHE", "/explicit/k.cache");
  CHECK(resolve_cache_path("/given/x.cache") == "/given/x.cache");
  CHECK(resolve_cache_path("") == "/explicit/k.cache");
}

TEST_CASE("cache_path_system_layer_default_override_and_disable") {
  EnvGuard env;
  env.set("ONNX_LIGHT_SYSTEM_TUNING_CACHE", nullptr);
  CHECK(system_kernel_tuning_cache_path() == std::filesystem::path("/etc/onnx-light/kernel_tuning.cache"));
  env.set("ONNX_LIGHT_SYSTEM_TUNING_CACHE", "/opt/site.cache");
  CHECK(system_kernel_tuning_cache_path() == std::filesystem::path("/opt/site.cache"));
  env.set("ONNX_LIGHT_SYSTEM_TUNING_CACHE", "");
  CHECK_FALSE(system_kernel_tuning_cache_path().has_value());
}

TEST_CASE("cache_path_lock_is_cache_plus_suffix") {
  CHECK(lock_path_for("/a/b/kernel_tuning.cache") == "/a/b/kernel_tuning.cache.lock");
}

TEST_CASE("cache_path_relative_xdg_cache_home_is_ignored") {
  EnvGuard env;
  env.set("ONNX_LIGHT_TUNING_CACHE", nullptr);
  env.set("XDG_CACHE_HOME", "relative/cache");  // invalid per the XDG Base Directory spec
  env.set("HOME", "/home/u");
  CHECK(default_kernel_tuning_cache_path() == "/home/u/.cache/onnx-light/kernel_tuning.cache");
  env.set("XDG_CACHE_HOME", "/abs/cache");
  CHECK(default_kernel_tuning_cache_path() == "/abs/cache/onnx-light/kernel_tuning.cache");
}
