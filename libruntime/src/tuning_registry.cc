#include "onnx_light/runtime/tuning_registry.h"

namespace onnx_light::runtime {

TuningGeneration::TuningGeneration(uint64_t number, std::vector<PublishedProfile> profiles) : number_(number) {
  for (auto& p : profiles) profiles_[{std::move(p.key), p.effective_threads, p.idle_spin}] = std::move(p.values);
}

const TuningValues* TuningGeneration::find(const TuningKey& key, int effective_threads, bool idle_spin) const {
  auto it = profiles_.find({key, effective_threads, idle_spin});
  return it == profiles_.end() ? nullptr : &it->second;
}

TuningRegistry::TuningRegistry() : current_(std::make_shared<TuningGeneration>(0, std::vector<PublishedProfile>{})) {}

uint64_t TuningRegistry::publish(std::vector<PublishedProfile> profiles, PublishMode mode) {
  std::lock_guard lock(mutex_);
  std::map<PublishedProfileId, TuningValues> combined;
  if (mode == PublishMode::merge) combined = current_->profiles();
  for (auto& p : profiles) combined[{std::move(p.key), p.effective_threads, p.idle_spin}] = std::move(p.values);
  std::vector<PublishedProfile> merged;
  merged.reserve(combined.size());
  for (auto& [id, values] : combined)
    merged.push_back(PublishedProfile{std::get<0>(id), std::get<1>(id), std::move(values), std::get<2>(id)});
  uint64_t number = current_->number() + 1;
  current_ = std::make_shared<TuningGeneration>(number, std::move(merged));
  return number;
}

std::shared_ptr<const TuningGeneration> TuningRegistry::snapshot() const {
  std::lock_guard lock(mutex_);
  return current_;
}

uint64_t TuningRegistry::published_generation() const { return snapshot()->number(); }

TuningRegistry& process_tuning_registry() {
  static TuningRegistry registry;
  return registry;
}

}  // namespace onnx_light::runtime
