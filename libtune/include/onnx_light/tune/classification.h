#pragma once
// Classification of cached profiles against the kernel table and this machine.
//
//   loaded        the key is registered, the host is this machine (every field but
//                 effective_threads), and the values pass the schema. Loaded profiles of every
//                 thread count are published; a session uses the one of its own thread count.
//   stale         the key's identity is registered under another tuning_abi (any host).
//   incompatible  no such key (unknown kernel, implementation, type or device), or another machine.
//   invalid       unreadable structure, values failing the schema, or a duplicate (key, host).
//
// A profile is *local* when it is loaded and its effective_threads equal the requested threads:
// exactly this host, threads included.
#include <string>
#include <string_view>
#include <vector>

#include "onnx_light/tune/cache_file.h"
#include "onnx_light/tune/diagnostic.h"
#include "onnx_light/tune/host.h"
#include "onnx_light/tune/kernel_selection.h"

namespace onnx_light::tune {

enum class ProfileClass { loaded, stale, incompatible, invalid };
std::string_view profile_class_name(ProfileClass value);

struct Classification {
  ProfileClass value = ProfileClass::invalid;
  // Why the profile is not loaded, one entry per problem (empty when loaded).
  std::vector<Diagnostic> diagnostics;
};

// Classifies one profile; `index`, `layer` and `path` only label the diagnostics.
Classification classify_profile(const CacheProfile& profile, std::size_t index, CacheLayer layer,
                                const std::filesystem::path& path, const SchemaIndex& schemas,
                                const HostDescriptor& machine);

// Classifies every profile of a file in order; a later profile with the (key, host) of an earlier
// one is invalid (duplicate), so that each (key, host) has one value.
std::vector<Classification> classify_profiles(const CacheFile& file, CacheLayer layer,
                                              const SchemaIndex& schemas, const HostDescriptor& machine);

// The same checks for profiles on their way to other machines (export, import, merge): each
// profile is judged on its own host, so that the values of a registered key are checked whatever
// machine wrote them. invalid: unreadable, values failing the schema, or a duplicate (key, host);
// stale and incompatible (a key this build does not register) are carried as they are.
std::vector<Classification> validate_profiles(const CacheFile& file, const SchemaIndex& schemas);

// "profile 3 (onnx_light/Abs/portable/float/CPU/abi2) in /path/kernel_tuning.cache".
std::string describe_profile(const CacheProfile& profile, std::size_t index, const std::filesystem::path& path);

}  // namespace onnx_light::tune
