// onnx-light-tune: parses the command line, runs one verb, maps errors to exit codes
// (0 ok, 1 the operation failed, 2 usage error). Results go to stdout, everything else to stderr.
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <exception>
#include <new>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "app_context.h"
#include "cli_usage.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/tune/cache_path.h"
#include "verbs.h"
#include "version_info.h"

namespace onnx_light::cli {

bool AppContext::use_color(bool stream_is_tty) const {
  switch (color) {
    case ColorMode::always: return true;
    case ColorMode::never: return false;
    case ColorMode::automatic: break;
  }
  const char* no_color = std::getenv("NO_COLOR");
  return stream_is_tty && (no_color == nullptr || no_color[0] == '\0');
}

namespace {

void configure_logging(const AppContext& context) {
  auto logger = spdlog::stderr_color_mt("onnx-light-tune");
  logger->set_pattern(context.use_color(isatty(STDERR_FILENO) != 0) ? "%^%l%$: %v" : "%l: %v");
  spdlog::level::level_enum level = spdlog::level::warn;
  if (context.verbosity >= 2) level = spdlog::level::debug;
  else if (context.verbosity == 1) level = spdlog::level::info;
  else if (context.verbosity < 0) level = spdlog::level::err;
  logger->set_level(level);
  spdlog::set_default_logger(logger);
}

// Lets the heap this process is about to grow use transparent huge pages where the kernel leaves
// that to madvise. Reading a fleet's cache allocates a few hundred megabytes in small pieces, and
// on a virtual machine each first touch of a 4 KiB page is a costly fault: with 40,000 profiles
// the faults took half of `inspect --json` (glibc's own glibc.malloc.hugetlb=1 tunable does the
// same, but only from the environment). The heap is grown once by kHeapReserve of address space,
// which is advised; only what is touched becomes resident. Best effort: any failure leaves the
// ordinary heap.
void prefer_huge_pages() {
#if defined(__linux__) && defined(__GLIBC__)
  constexpr std::size_t kHeapReserve = std::size_t{1} << 30;
  constexpr std::size_t kHugePage = std::size_t{2} << 20;
  if (mallopt(M_TOP_PAD, static_cast<int>(kHeapReserve)) == 0) return;
  mallopt(M_TRIM_THRESHOLD, static_cast<int>(kHeapReserve));  // keep it: the process is short-lived
  // Blocks up to 32 MiB (glibc's maximum) from the advised heap too, not from fresh mappings.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  void* probe = std::malloc(kHugePage);  // more than the heap has left: it grows by M_TOP_PAD
  if (probe == nullptr) return;
  const auto start = (reinterpret_cast<std::uintptr_t>(probe) + kHugePage - 1) & ~(kHugePage - 1);
  const auto end = reinterpret_cast<std::uintptr_t>(sbrk(0)) & ~(kHugePage - 1);
  if (end > start) madvise(reinterpret_cast<void*>(start), end - start, MADV_HUGEPAGE);
  std::free(probe);
#endif
}

int run_main(int argc, char** argv, AppContext& context) {
  CLI::App app{"onnx-light-tune: tune the CPU kernels of the onnx-light runtime and manage its tuning cache.",
               "onnx-light-tune"};
  app.footer(
      "Exit status: 0 success, 1 the operation failed, 2 usage error.\n"
      "Cache: --cache, else $ONNX_LIGHT_TUNING_CACHE, else $XDG_CACHE_HOME/onnx-light/kernel_tuning.cache,\n"
      "else $HOME/.cache/onnx-light/kernel_tuning.cache (a relative XDG_CACHE_HOME is ignored). Under it\n"
      "sessions read the system cache $ONNX_LIGHT_SYSTEM_TUNING_CACHE (default\n"
      "/etc/onnx-light/kernel_tuning.cache, empty: none); --system makes a verb work on that file.\n"
      "Results go to stdout, logs and errors to stderr; every verb takes --json (keys: see the man pages).\n"
      "Examples:\n"
      "  onnx-light-tune calibrate Abs --save        # measure Abs on this machine, save it to the cache\n"
      "  onnx-light-tune inspect --long              # every cached profile, its host and classification\n"
      "  onnx-light-tune --cache ci.cache list --json\n"
      "Run 'onnx-light-tune <verb> --help' for a verb's options and examples, 'man onnx-light-tune-<verb>'\n"
      "for the details.");
  app.formatter(std::make_shared<HelpFormatter>());
  app.require_subcommand(1);
  app.fallthrough();
  bool show_version = false;
  app.add_flag("--version", show_version, "Print the version, compiler, build type, kernels and host, then exit");
  CLI::Option* cache = app.add_option("--cache", context.cache_path, "Tuning cache file (default: see below)")->type_name("PATH");
  app.add_flag("--system", context.system_cache,
               "Work on the system cache ($ONNX_LIGHT_SYSTEM_TUNING_CACHE, default "
               "/etc/onnx-light/kernel_tuning.cache) instead of the user's: how an administrator writes it")
      ->excludes(cache);
  app.add_option("--lock-timeout", context.lock_timeout_s,
                 "Seconds a write waits for another process's cache lock before it fails (0: forever)")
      ->check(integer_in_range(0, int64_t{24} * 3600))
      ->type_name("SECONDS")
      ->default_val(30);
  app.add_flag_function("-v,--verbose", [&](int64_t count) { context.verbosity += static_cast<int>(count); },
                        "More log output on stderr (repeatable)");
  app.add_flag_function("-q,--quiet", [&](int64_t count) { context.verbosity -= static_cast<int>(count); },
                        "Less log output on stderr");
  app.add_option_function<std::string>(
         "--color",
         [&context](const std::string& text) {
           for (const auto& [name, mode] : color_mode_names())
             if (name == text) context.color = mode;
         },
         "Colour in human output: auto (default; honours NO_COLOR), always, never")
      ->check(one_of({"auto", "always", "never"}))
      ->option_text("WHEN");

  register_list(app, context);
  register_propose(app, context);
  register_set(app, context);
  register_inspect(app, context);
  register_load(app, context);
  register_remove(app, context);
  register_calibrate(app, context);
  register_verify(app, context);
  register_host(app, context);
  register_export(app, context);
  register_import(app, context);
  register_merge(app, context);
  register_diff(app, context);
  register_run(app, context);
  register_completion(app, context);

  // --version works without a verb.
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--version") {
      *context.out << version_text();
      return kExitOk;
    }
  }
  if (auto message = unknown_verb_message(app, argc, argv)) throw UsageError(*message);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    throw UsageError(parse_error_message(app, e));
  }
  configure_logging(context);
  if (context.system_cache) {
    const auto system = tune::system_kernel_tuning_cache_path();
    if (!system) throw UsageError("--system: the system cache is disabled (ONNX_LIGHT_SYSTEM_TUNING_CACHE is empty)");
    context.cache_path = system->string();
    *context.err << fmt::format("onnx-light-tune: using the system cache {}\n", context.cache_path);
  }
  if (!context.action) throw UsageError("no verb given; see 'onnx-light-tune --help'");
  if (context.reads_whole_cache) prefer_huge_pages();
  return context.action();
}


}  // namespace
}  // namespace onnx_light::cli

int main(int argc, char** argv) {
  using namespace onnx_light::cli;
  AppContext context;
  const bool json = wants_json(argc, argv);
  auto fail = [&](const std::string& kind, const std::string& message, int status) {
    return report_error(*context.out, *context.err, json, kind, message, status);
  };
  try {
    return run_main(argc, argv, context);
  } catch (const UsageError& e) {
    return fail("usage", e.what(), kExitUsage);
  } catch (const onnx_light::NotFoundError& e) {
    // A kernel, parameter, input or key the command line named that does not exist.
    return fail("not_found", e.what(), kExitUsage);
  } catch (const onnx_light::Error& e) {
    return fail(error_kind(e), e.what(), kExitFailed);
  } catch (const std::bad_alloc&) {
    return fail("out_of_memory", "out of memory", kExitFailed);
  } catch (const std::exception& e) {
    return fail("internal", fmt::format("internal error: {}", e.what()), kExitFailed);
  }
}
