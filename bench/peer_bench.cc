// The onnx-light side of ../shared/peer: reads $PEER_MODELS/manifest.tsv, builds the same
// xorshift32 inputs as ort_c_bench, times each (model, threads, mode) by the same rule (warm up,
// time every run, median over at least --min-time seconds and 10 runs) and prints the same TSV.
//
//   onnx-light-peer-bench [--models DIR] [--threads 1,2] [--modes prealloc,alloc] [--min-time 0.5] [--only a,b]
//
// Runs go through the positional RuntimeSession::run(inputs, outputs), no name lookups, as
// ort_c_bench drives ONNX Runtime through bound values.
// prealloc: each output is bound once to a caller buffer (Tensor::borrow), written in place.
// alloc: outputs are dropped after every run, so each run allocates them again.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "onnx_light/runtime/error.h"
#include "onnx_light/runtime/model.h"
#include "onnx_light/runtime/session.h"

namespace {

using namespace onnx_light::runtime;

struct Io {
  std::string name;
  Shape shape;
};

struct ManifestModel {
  std::string name, file, kind;
  double bytes = 0, flops = 0;
  std::vector<Io> inputs, outputs;
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(s);
  while (std::getline(in, item, sep)) out.push_back(item);
  return out;
}

std::vector<Io> parse_io(const std::string& text) {
  std::vector<Io> ios;
  for (const auto& entry : split(text, ';')) {
    // NAME:TYPE:SHAPE, split at the last two ':' since exported names hold ':' ("onnx::Flatten_0").
    const auto shape_at = entry.rfind(':');
    const auto type_at = shape_at == std::string::npos || shape_at == 0 ? std::string::npos : entry.rfind(':', shape_at - 1);
    if (type_at == std::string::npos || entry.compare(type_at + 1, shape_at - type_at - 1, "float32") != 0)
      throw onnx_light::InvalidValueError("bad manifest io entry: " + entry);
    Io io{entry.substr(0, type_at), {}};
    for (const auto& d : split(entry.substr(shape_at + 1), 'x')) io.shape.push_back(std::stoll(d));
    ios.push_back(io);
  }
  return ios;
}

std::vector<ManifestModel> read_manifest(const std::string& dir) {
  std::ifstream in(dir + "/manifest.tsv");
  if (!in) throw onnx_light::IoError(dir + "/manifest.tsv: cannot open (run ../shared/peer/setup.sh)");
  std::vector<ManifestModel> models;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto f = split(line, '\t');
    if (f.size() < 8) continue;
    ManifestModel m;
    m.name = f[0];
    m.file = dir + "/" + f[1];
    m.kind = f[2];
    m.bytes = std::stod(f[4]);
    m.flops = std::stod(f[5]);
    m.inputs = parse_io(f[6]);
    m.outputs = parse_io(f[7]);
    models.push_back(std::move(m));
  }
  return models;
}

// The peer rule: input j from seed 12345 + 77 j, xorshift32, uniform in [-1, 1).
Tensor peer_input(const Shape& shape, int j) {
  Tensor t(ElementType::float32, shape);
  uint32_t s = 12345u + 77u * static_cast<uint32_t>(j);
  float* x = t.data<float>();
  for (int64_t i = 0; i < t.element_count(); ++i) {
    s ^= s << 13;
    s ^= s >> 17;
    s ^= s << 5;
    x[i] = static_cast<float>(s / 4294967296.0 * 2 - 1);
  }
  return t;
}

double percentile(std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  std::size_t i = static_cast<std::size_t>(p * static_cast<double>(sorted.size() - 1) + 0.5);
  return sorted[std::min(i, sorted.size() - 1)];
}

}  // namespace

int main(int argc, char** argv) {
  std::string models_dir;
  if (const char* env = std::getenv("PEER_MODELS")) models_dir = env;
  std::vector<int> threads{1, 2};
  std::vector<std::string> modes{"prealloc", "alloc"};
  double min_time = 0.5;
  std::vector<std::string> only;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--models") models_dir = next();
    else if (a == "--threads") {
      threads.clear();
      for (const auto& t : split(next(), ',')) threads.push_back(std::stoi(t));
    } else if (a == "--modes") modes = split(next(), ',');
    else if (a == "--min-time") min_time = std::stod(next());
    else if (a == "--only") only = split(next(), ',');
    else {
      std::cerr << "usage: onnx-light-peer-bench [--models DIR] [--threads 1,2] [--modes prealloc,alloc] "
                   "[--min-time S] [--only a,b]\n";
      return 2;
    }
  }
  if (models_dir.empty()) {
    const char* xdg = std::getenv("XDG_CACHE_HOME");
    const char* home = std::getenv("HOME");
    models_dir = (xdg ? std::string(xdg) : std::string(home ? home : ".") + "/.cache") + "/onnx-light-peer/models";
  }
  try {
    std::cout << "model\tthreads\tmode\tmedian_us\tp10_us\tp90_us\tmin_us\titers\tbatch_mean_us\tGBps\tGFLOPs\n";
    for (const auto& m : read_manifest(models_dir)) {
      if (!only.empty() && std::find(only.begin(), only.end(), m.name) == only.end()) continue;
      Model model = load_model_file(m.file);
      for (int t : threads) {
        std::unique_ptr<RuntimeSession> session;
        try {
          RuntimeSessionOptions options;
          options.parameters = RuntimeParameters(t);
          session = std::make_unique<RuntimeSession>(model, options);
        } catch (const onnx_light::UnsupportedError& e) {
          std::cerr << "skip " << m.name << ": " << e.what() << "\n";
          break;
        }
        for (const auto& mode : modes) {
          std::vector<Tensor> inputs;
          for (std::size_t j = 0; j < m.inputs.size(); ++j)
            inputs.push_back(peer_input(m.inputs[j].shape, static_cast<int>(j)));
          const bool prealloc = mode == "prealloc";
          std::vector<Tensor> caller_buffers;  // owns the memory the prealloc outputs borrow
          std::vector<Tensor> outputs(m.outputs.size());
          if (prealloc)
            for (std::size_t j = 0; j < m.outputs.size(); ++j) {
              caller_buffers.emplace_back(ElementType::float32, m.outputs[j].shape);
              outputs[j] = Tensor::borrow(ElementType::float32, m.outputs[j].shape, caller_buffers.back().raw_data());
            }
          auto once = [&] {
            session->run(inputs, outputs);
            if (!prealloc)
              for (auto& o : outputs) o = Tensor();
          };
          for (int w = 0; w < 3; ++w) once();
          std::vector<double> samples;
          auto begin = std::chrono::steady_clock::now();
          double total = 0;
          while (samples.size() < 10 || total < min_time) {
            auto s = std::chrono::steady_clock::now();
            once();
            auto e = std::chrono::steady_clock::now();
            samples.push_back(std::chrono::duration<double, std::micro>(e - s).count());
            total = std::chrono::duration<double>(e - begin).count();
          }
          double batch_mean = total * 1e6 / static_cast<double>(samples.size());
          std::sort(samples.begin(), samples.end());
          double median = percentile(samples, 0.5);
          std::cout << fmt::format("{}\t{}\t{}\t{:.3f}\t{:.3f}\t{:.3f}\t{:.3f}\t{}\t{:.3f}\t{:.2f}\t{:.2f}\n", m.name, t, mode,
                                   median, percentile(samples, 0.1), percentile(samples, 0.9), samples.front(),
                                   samples.size(), batch_mean, m.bytes > 0 ? m.bytes / median / 1e3 : 0.0,
                                   m.flops > 0 ? m.flops / median / 1e3 : 0.0);
          std::cout.flush();
        }
      }
    }
  } catch (const onnx_light::Error& e) {
    std::cerr << "onnx-light-peer-bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
