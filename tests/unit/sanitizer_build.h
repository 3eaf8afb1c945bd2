#pragma once
// Whether this test binary is built with ASan or TSan (scripts/sanitize.sh, scripts/fuzz.sh). Those
// builds run 3-10x slower; the few tests that scale their work or budgets by it say how.

namespace onnx_light::test {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kSanitizedBuild = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
inline constexpr bool kSanitizedBuild = true;
#else
inline constexpr bool kSanitizedBuild = false;
#endif
#else
inline constexpr bool kSanitizedBuild = false;
#endif

}  // namespace onnx_light::test
