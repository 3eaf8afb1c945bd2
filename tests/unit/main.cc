#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <iostream>

#include "implementation_tables.h"

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int result = context.run();
  if (context.shouldExit() || result != 0) return result;
  const auto& untested = onnx_light::test::untested_implementations();
  if (untested.empty()) return 0;
  // Everything that ran passed, but not everything ran: ctest shows the entry as skipped.
  std::cout << "SKIPPED: implementations this host cannot run were not tested:\n";
  for (const auto& line : untested) std::cout << "  " << line << "\n";
  return onnx_light::test::kUntestedExitCode;
}
