// A fuzz target for testing fuzz/replay_main.cc: input "trap" crashes the way the real targets do
// on a broken invariant, "throw" escapes an exception, "reject" returns -1 (allowed by libFuzzer),
// "bad" returns 7 (an error), anything else passes.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  if (input == "trap") __builtin_trap();
  if (input == "throw") throw std::runtime_error("thrown by the self-test target");
  if (input == "reject") return -1;
  if (input == "bad") return 7;
  return 0;
}
