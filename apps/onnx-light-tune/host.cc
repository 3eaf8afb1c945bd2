// `onnx-light-tune host`: this machine's host descriptor exactly as the cache records it in a
// profile, so that an operator can collect the descriptors of a fleet (and replay one with
// `--as-host FILE` on inspect, list, propose, load, set and export). Reads nothing, writes nothing.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli_common.h"
#include "cli_usage.h"
#include "onnx_light/tune/host.h"
#include "verbs.h"

namespace onnx_light::cli {

namespace {

struct HostOptions {
  int64_t threads = 0;
  bool json = false;
};

int host_verb(const HostOptions& options, AppContext& context) {
  const tune::HostDescriptor host = tune::detect_host(tune::resolve_threads(options.threads));
  const std::string hostname = tune::this_hostname();
  if (options.json) {
    // The descriptor's fields as a profile's [profile.host] holds them, plus the machine's name
    // (informational; --as-host accepts and ignores it).
    nlohmann::json object = nlohmann::json::object();
    host.to_json(object);
    object["hostname"] = hostname;
    print_json(*context.out, object);
    return kExitOk;
  }
  auto& out = *context.out;
  const bool color = stdout_color(context);
  out << fmt::format("host: {}\n", host.summary());
  // One row per JSON key, under the same names, so that the two outputs read alike.
  Table table({"FIELD", "VALUE"});
  table.add({"architecture", host.architecture});
  table.add({"vendor", host.vendor});
  table.add({"family", std::to_string(host.family)});
  table.add({"model", std::to_string(host.model)});
  table.add({"stepping", std::to_string(host.stepping)});
  table.add({"microarchitecture", host.microarchitecture});
  table.add({"features", fmt::format("{}", fmt::join(host.features, " "))});
  table.add({"l1d_cache_bytes", std::to_string(host.l1d_cache_bytes)});
  table.add({"l2_cache_bytes", std::to_string(host.l2_cache_bytes)});
  table.add({"l3_cache_bytes", std::to_string(host.l3_cache_bytes)});
  table.add({"physical_cores", std::to_string(host.physical_cores)});
  table.add({"logical_cores", std::to_string(host.logical_cores)});
  table.add({"effective_threads", std::to_string(host.effective_threads)});
  table.add({"hostname", hostname});
  table.print(out, color);
  return kExitOk;
}

}  // namespace

void register_host(CLI::App& app, AppContext& context) {
  auto options = std::make_shared<HostOptions>();
  CLI::App* verb = app.add_subcommand(
      "host", "Print this machine's host descriptor as the cache records it (collect them from a fleet)");
  verb->add_option("--threads", options->threads,
                   "Session thread count recorded as effective_threads (default 0: one per physical core)")
      ->check(integer_in_range(0, int64_t{1} << 16))
      ->type_name("N");
  verb->add_flag("--json", options->json, "Print the descriptor as JSON (stable keys), the input of --as-host");
  verb->footer(
      "A profile is local when its host equals this descriptor, effective_threads included. The\n"
      "JSON is one object with the keys architecture, vendor, family, model, stepping,\n"
      "microarchitecture, features, l1d_cache_bytes, l2_cache_bytes, l3_cache_bytes,\n"
      "physical_cores, logical_cores, effective_threads and hostname (informational, never\n"
      "matched). 'inspect', 'list', 'propose' and 'load' take it back with --as-host FILE;\n"
      "'set --as-host FILE' writes a profile for that host, 'export --as-host FILE' exports its own.\n"
      "Examples:\n"
      "  onnx-light-tune host\n"
      "  onnx-light-tune host --threads 4 --json > \"$(hostname).host.json\"\n"
      "  onnx-light-tune inspect --as-host build-07.host.json");
  verb->callback([options, &context] { context.action = [options, &context] { return host_verb(*options, context); }; });
}

}  // namespace onnx_light::cli
