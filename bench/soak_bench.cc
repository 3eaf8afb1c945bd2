// Soak: runs one model many times in one process and samples the resident set size, to show that
// a long-lived session (a server, a notebook loop) does not grow. Two ways of running, as callers
// do: `context` (run(RuntimeContext), each output copied out and dropped, as the Python package
// does) and `alloc` (the positional run with outputs dropped after every run, so each run takes
// fresh output buffers from the session's pool). A third, `sessions`, builds a new session every
// 100 runs (models reloaded, kernels re-created). Inputs are seeded random of the declared
// shapes (symbolic dims 1).
//
//   soak_bench MODEL RUNS [--threads N] [--forms context,alloc,sessions] [--samples 20]
//
// Prints one TSV row per form: model, form, runs, us per run, RSS (KiB) after the first tenth of
// the runs, its maximum over the remaining samples, at the end, the growth end - first tenth, and
// malloc's bytes in use (mallinfo2) after the first tenth and at the end (what a leak would grow).
// Not a Google Benchmark: its figure is memory over time, not a time.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <malloc.h>

#include "onnx_light/runtime/calibration_workload.h"
#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/session.h"

namespace {

using namespace onnx_light::runtime;

int64_t rss_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  return -1;
}

std::vector<Tensor> inputs_of(const RuntimeSession& session) {
  std::vector<Tensor> inputs;
  uint32_t seed = 1;
  for (const ValueInfo& info : session.inputs()) {
    Shape shape;
    for (int64_t d : info.shape) shape.push_back(d < 0 ? 1 : d);
    inputs.push_back(random_tensor(info.element_type, shape, seed++));
  }
  return inputs;
}

// Bytes malloc has handed out and not got back: what a leak grows. RSS also holds freed memory
// malloc keeps in its arenas, which a new session's allocations raise to a high-water mark.
// glibc's mallinfo2 counts the main arena only: the calling thread's allocations (sessions,
// tensors, plans), not the pool workers' (which allocate nothing while running).
int64_t heap_in_use_kib() { return static_cast<int64_t>(mallinfo2().uordblks / 1024); }

struct Soak {
  int64_t first = 0, peak = 0, last = 0;
  int64_t heap_first = 0, heap_last = 0;
  double us_per_run = 0;
};

template <typename RunOnce>
Soak soak(int64_t runs, int samples, RunOnce&& run_once) {
  Soak s;
  const int64_t tenth = std::max<int64_t>(1, runs / 10);
  const int64_t every = std::max<int64_t>(1, runs / samples);
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 1; i <= runs; ++i) {
    run_once(i);
    if (i == tenth) {
      s.first = s.peak = rss_kib();
      s.heap_first = heap_in_use_kib();
    }
    if (i > tenth && (i % every == 0 || i == runs)) s.peak = std::max(s.peak, rss_kib());
  }
  s.us_per_run = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() /
                 static_cast<double>(runs);
  s.last = rss_kib();
  s.heap_last = heap_in_use_kib();
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: soak_bench MODEL RUNS [--threads N] [--forms context,alloc,sessions] [--samples 20]\n";
    return 2;
  }
  const std::string path = argv[1];
  const int64_t runs = std::stoll(argv[2]);
  int threads = 1, samples = 20;
  std::string forms = "context,alloc,sessions";
  for (int i = 3; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--threads") threads = std::stoi(argv[i + 1]);
    else if (flag == "--forms") forms = argv[i + 1];
    else if (flag == "--samples") samples = std::stoi(argv[i + 1]);
    else {
      std::cerr << "soak_bench: unknown option " << flag << "\n";
      return 2;
    }
  }
  try {
    const Model model = load_model_file(path);
    RuntimeSessionOptions options;
    options.parameters = RuntimeParameters(threads);
    std::cout << "model\tform\truns\tus_per_run\trss_kib_after_tenth\trss_kib_peak\trss_kib_end\tgrowth_kib"
                 "\theap_kib_after_tenth\theap_kib_end\n";
    std::istringstream list(forms);
    for (std::string form; std::getline(list, form, ',');) {
      Soak s;
      if (form == "context") {
        RuntimeSession session(model, options);
        const std::vector<Tensor> inputs = inputs_of(session);
        double checksum = 0;
        s = soak(runs, samples, [&](int64_t) {
          RuntimeContext context;
          for (std::size_t k = 0; k < inputs.size(); ++k) context.set(session.inputs()[k].name, inputs[k]);
          session.run(context);
          const Tensor copy = context.get(session.outputs()[0].name).clone();
          checksum += copy.byte_size() > 0 ? static_cast<double>(*static_cast<const unsigned char*>(copy.raw_data())) : 0;
        });
        if (checksum < 0) return 1;
      } else if (form == "alloc") {
        RuntimeSession session(model, options);
        const std::vector<Tensor> inputs = inputs_of(session);
        s = soak(runs, samples, [&](int64_t) {
          std::vector<Tensor> outputs(session.outputs().size());
          session.run(inputs, outputs);
        });
      } else if (form == "sessions") {
        std::unique_ptr<RuntimeSession> session;
        std::vector<Tensor> inputs;
        s = soak(runs, samples, [&](int64_t i) {
          if (!session || i % 100 == 0) {
            session = std::make_unique<RuntimeSession>(load_model_file(path), options);
            inputs = inputs_of(*session);
          }
          std::vector<Tensor> outputs(session->outputs().size());
          session->run(inputs, outputs);
        });
      } else {
        std::cerr << "soak_bench: unknown form " << form << " (context, alloc, sessions)\n";
        return 2;
      }
      std::cout << fmt::format("{}\t{}\t{}\t{:.2f}\t{}\t{}\t{}\t{}\t{}\t{}\n", path, form, runs, s.us_per_run, s.first,
                               s.peak, s.last, s.last - s.first, s.heap_first, s.heap_last)
                << std::flush;
    }
  } catch (const onnx_light::Error& e) {
    std::cerr << "soak_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
