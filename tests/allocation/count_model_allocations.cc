// onnx-light-count-allocations: heap allocations per steady-state run of any model (issue 14 §3:
// the real models, whose bytes stay out of git; bench/models/allocations.py runs it on them).
//
//   onnx-light-count-allocations MODEL IN0.npy [IN1.npy ...] [--threads 1,2] [--runs 20]
//
// Inputs in graph order. Prints one JSON object per thread count:
//   {"model": ..., "threads": T, "runs": R, "allocations_per_run": A, "bytes_per_run": B}
// Exit 0 when every steady-state run allocated nothing, 1 when some did, 2 on bad usage or input.
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "allocation_counter.h"
#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/npy.h"

int main(int argc, char** argv) {
  using namespace onnx_light;
  std::vector<std::string> files;
  std::vector<int> threads{1, 2};
  int runs = 20;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if ((a == "--threads" || a == "--runs") && i + 1 < argc) {
        const std::string v = argv[++i];
        if (a == "--runs") {
          runs = std::stoi(v);
        } else {
          threads.clear();
          for (std::size_t at = 0; at <= v.size();) {
            const std::size_t comma = v.find(',', at);
            threads.push_back(std::stoi(v.substr(at, comma - at)));
            if (comma == std::string::npos) break;
            at = comma + 1;
          }
        }
      } else if (a.rfind("--", 0) == 0) {
        throw std::invalid_argument("unknown option " + a);
      } else {
        files.push_back(a);
      }
    }
    if (files.empty() || runs < 1) throw std::invalid_argument("usage: MODEL IN0.npy ... [--threads 1,2] [--runs N]");
    const runtime::Model model = runtime::load_model_file(files[0]);
    std::vector<runtime::Tensor> inputs;
    for (std::size_t i = 1; i < files.size(); ++i) inputs.push_back(runtime::read_npy(files[i]));
    bool clean = true;
    for (int t : threads) {
      const test::SteadyStateAllocations counted = test::count_steady_state_allocations(model, inputs, t, runs);
      clean = clean && counted.allocations == 0;
      std::printf("%s\n", fmt::format(R"({{"model": "{}", "threads": {}, "runs": {}, "allocations_per_run": {}, "bytes_per_run": {}}})",
                                      files[0], t, runs, static_cast<double>(counted.allocations) / runs,
                                      static_cast<double>(counted.bytes) / runs)
                              .c_str());
    }
    return clean ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "onnx-light-count-allocations: %s\n", e.what());
    return 2;
  }
}
