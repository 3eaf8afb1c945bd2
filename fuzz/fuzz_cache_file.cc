// libFuzzer target for the tuning cache parser: parse_cache_text must classify any bytes as a
// file state without crashing, agree with the whole-document reference parse, and whatever it
// reads must survive serialize -> parse unchanged (writing it again gives the same bytes).
//
// Links the instrumented copy of libtune (fuzz/CMakeLists.txt), so the parser carries the fuzzer's
// coverage instrumentation.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "onnx_light/tune/cache_file.h"

namespace {

bool same_values(const onnx_light::runtime::TuningValues& a, const onnx_light::runtime::TuningValues& b) {
  if (a.size() != b.size()) return false;
  for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
    if (ia->first != ib->first || ia->second.index() != ib->second.index()) return false;
    const auto* da = std::get_if<double>(&ia->second);
    const auto* db = std::get_if<double>(&ib->second);
    if (da != nullptr && std::isnan(*da) && std::isnan(*db)) continue;
    if (ia->second != ib->second) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace onnx_light::tune;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const CacheFile file = parse_cache_text(text, "fuzz.cache");
  // The sectioned fast path must agree with the whole-document parse.
  const CacheFile reference = parse_cache_text_reference(text, "fuzz.cache");
  if (file.status != reference.status || file.error != reference.error ||
      file.profiles.size() != reference.profiles.size()) {
    __builtin_trap();
  }
  for (std::size_t i = 0; i < file.profiles.size(); ++i) {
    const CacheProfile& a = file.profiles[i];
    const CacheProfile& b = reference.profiles[i];
    if (a.key != b.key || a.host != b.host || a.provenance != b.provenance || !same_values(a.values, b.values) ||
        a.problems.size() != b.problems.size() || a.raw_toml != b.raw_toml) {
      __builtin_trap();
    }
  }
  if (file.status != FileStatus::loaded) {
    if (file.error.empty() || !file.profiles.empty()) __builtin_trap();
    return 0;
  }
  const std::string written = serialize_cache(file.profiles);
  const CacheFile again = parse_cache_text(written, "rewritten.cache");
  if (again.status != FileStatus::loaded || again.profiles.size() != file.profiles.size()) __builtin_trap();
  // Readable profiles come back equal (the writer sorts them first); unreadable ones verbatim.
  std::vector<const CacheProfile*> readable;
  for (const auto& p : file.profiles) {
    if (p.readable()) readable.push_back(&p);
  }
  std::stable_sort(readable.begin(), readable.end(),
                   [](const CacheProfile* a, const CacheProfile* b) { return profile_less(*a, *b); });
  for (std::size_t i = 0; i < readable.size(); ++i) {
    const CacheProfile& a = *readable[i];
    const CacheProfile& b = again.profiles[i];
    if (!b.readable() || a.key != b.key || a.host != b.host || a.provenance != b.provenance ||
        !same_values(a.values, b.values)) {
      __builtin_trap();
    }
  }
  if (serialize_cache(again.profiles) != written) __builtin_trap();
  return 0;
}
