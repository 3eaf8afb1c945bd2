#pragma once
// The in-process set of published tuning profiles. Each publication installs a new immutable
// generation; readers take a snapshot and never see a half-published set.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "onnx_light/runtime/tuning_key.h"
#include "onnx_light/runtime/tuning_value.h"

namespace onnx_light::runtime {

struct PublishedProfile {
  TuningKey key;
  int effective_threads = 0;  // profiles are per thread count (part of the host)
  TuningValues values;
  bool idle_spin = true;  // and per spin class (idle_workers_spin of the sessions' parameters)
};

// What a published profile is found by: its key and the conditions it was measured under.
using PublishedProfileId = std::tuple<TuningKey, int, bool>;  // key, effective_threads, idle_spin

class TuningGeneration {
 public:
  TuningGeneration(uint64_t number, std::vector<PublishedProfile> profiles);
  uint64_t number() const { return number_; }
  const TuningValues* find(const TuningKey& key, int effective_threads, bool idle_spin) const;
  const std::map<PublishedProfileId, TuningValues>& profiles() const { return profiles_; }

 private:
  uint64_t number_;
  std::map<PublishedProfileId, TuningValues> profiles_;
};

enum class PublishMode {
  merge,    // add or replace the given profiles, keep the others
  replace,  // the given profiles become the whole set
};

class TuningRegistry {
 public:
  TuningRegistry();
  // Installs a new generation and returns its number (the published_generation counter).
  uint64_t publish(std::vector<PublishedProfile> profiles, PublishMode mode = PublishMode::merge);
  std::shared_ptr<const TuningGeneration> snapshot() const;
  uint64_t published_generation() const;

 private:
  mutable std::mutex mutex_;
  std::shared_ptr<const TuningGeneration> current_;
};

// The one process-wide registry (created on first use, explicit at every call site).
TuningRegistry& process_tuning_registry();

}  // namespace onnx_light::runtime
