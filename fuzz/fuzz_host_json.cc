// libFuzzer target: host_from_json (the `--as-host FILE` reader) must reject any JSON that is not a
// host descriptor with onnx_light::Error, never crash or hang, and whatever it accepts must survive
// HostDescriptor::to_json -> host_from_json unchanged.
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "onnx_light/runtime/error.h"
#include "onnx_light/tune/host.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace onnx_light::tune;
  // Not JSON at all is nlohmann's to reject (read_host_file reports it); the descriptor is ours.
  const nlohmann::json object = nlohmann::json::parse(data, data + size, nullptr, /*allow_exceptions=*/false);
  if (object.is_discarded()) return 0;
  HostDescriptor host;
  try {
    host = host_from_json(object, "fuzz.json");
  } catch (const onnx_light::Error&) {
    return 0;
  }
  nlohmann::json written;
  host.to_json(written);
  if (!(host_from_json(written, "round-trip.json") == host)) __builtin_trap();
  return 0;
}
