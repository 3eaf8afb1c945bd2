#pragma once
// Shared plumbing of the operations: defaults of the context, reading and classifying both
// cache layers, and the index of loaded profiles by (key, threads).
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "onnx_light/tune/cache_file.h"
#include "onnx_light/tune/cache_update.h"
#include "onnx_light/tune/classification.h"
#include "onnx_light/tune/operations.h"

namespace onnx_light::tune::detail {

struct Environment {
  const runtime::KernelTable& kernels;
  runtime::TuningRegistry& registry;
  const runtime::CpuFeatures& features;
  HostDescriptor machine;  // effective_threads 0
  std::optional<std::filesystem::path> system_path;
  std::string tool_version;
  std::optional<int64_t> machine_threads;  // OperationContext::machine_threads

  // The session thread count for a requested one: resolve_threads, except that none (or 0) means
  // machine_threads when it is set.
  int64_t session_threads(std::optional<int64_t> requested) const;
};
Environment resolve(const OperationContext& context);

struct Layer {
  CacheLayer layer = CacheLayer::user;
  CacheFile file;
  std::vector<Classification> classes;  // one per profile
};

// The user layer, then the system layer when there is one (and it is not the same file).
struct Layers {
  std::vector<Layer> layers;
  const Layer& user() const { return layers.front(); }
  const Layer* system() const { return layers.size() > 1 ? &layers[1] : nullptr; }
  bool any_loaded() const;
};
Layers read_layers(const std::filesystem::path& user_path, const Environment& environment,
                   const SchemaIndex& schemas);

// The diagnostic for a layer that could not be read (none for loaded or a missing user cache).
std::optional<Diagnostic> file_diagnostic(const Layer& layer);

// A loaded profile of this machine (exact or of a class it belongs to).
struct LocalProfile {
  const CacheProfile* profile = nullptr;
  CacheLayer layer = CacheLayer::user;
  std::size_t index = 0;  // in its layer's file
};
// Whether `candidate` is in force over `current` for the same (key, threads, spin): the more
// specific match wins (exact > model > microarchitecture > isa); at equal specificity the one
// already there (offer the user layer first, each in file order), except that of two isa
// profiles of one layer the one requiring more features wins.
bool outranks(const LocalProfile& candidate, const LocalProfile& current);
// By (key, effective_threads, idle_spin): the conditions a session finds its profile by.
using LoadedIndex = std::map<std::tuple<runtime::TuningKey, int64_t, bool>, LocalProfile>;
// Offers a loaded profile to `index`: it takes its conditions' slot when empty or outranked.
void offer_loaded(LoadedIndex& index, const LocalProfile& candidate);
// The profile in force for every condition, over both layers.
LoadedIndex index_loaded(const Layers& layers);

// Throws NotFoundError for a kernel of `selection` that is neither registered nor named by a
// profile of `files` (a cache may hold profiles of kernels this build no longer has).
void check_named_kernels(const KeySelection& selection, const runtime::KernelTable& kernels,
                         const std::vector<const CacheFile*>& files);

// Options of a cache update by an operation: the kernel table (for prune_stale) and the context's
// lock wait notice and timeout.
UpdateOptions update_options_for(const OperationContext& context, const runtime::KernelTable& kernels);

// Sorted, without repeats.
std::vector<runtime::TuningKey> unique_sorted(std::vector<runtime::TuningKey> keys);

}  // namespace onnx_light::tune::detail
