// Replays a fuzz corpus through a libFuzzer target without libFuzzer: calls LLVMFuzzerTestOneInput
// once on every regular file of one directory, in name order. Built with the ordinary compiler and
// libraries, so ctest checks the committed corpora in every build (the libFuzzer build in
// fuzz/CMakeLists.txt is for finding new inputs).
//
// Usage: <replay> CORPUS_DIR
// Exit 0 when every input ran; 1 when the directory is missing or holds no file, an input cannot
// be read, the target throws or returns a value libFuzzer rejects; a crash (the targets'
// __builtin_trap on a broken invariant, a segfault) ends the process by its signal. The file being
// replayed is printed before it runs, so a crash names its input.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

bool read_file(const fs::path& path, std::vector<char>& bytes) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  bytes.assign(std::istreambuf_iterator<char>(in), {});
  return !in.bad();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argc > 0 ? argv[0] : "replay");
    return 2;
  }
  const fs::path corpus = argv[1];
  std::error_code error;
  if (!fs::is_directory(corpus, error)) {
    std::fprintf(stderr, "replay: corpus %s is not a directory\n", corpus.c_str());
    return 1;
  }
  std::vector<fs::path> inputs;
  for (const auto& entry : fs::directory_iterator(corpus, error)) {
    if (entry.is_regular_file()) inputs.push_back(entry.path());
  }
  if (error) {
    std::fprintf(stderr, "replay: cannot list %s: %s\n", corpus.c_str(), error.message().c_str());
    return 1;
  }
  // An empty corpus would make a green run that replayed nothing.
  if (inputs.empty()) {
    std::fprintf(stderr, "replay: corpus %s holds no input file\n", corpus.c_str());
    return 1;
  }
  std::sort(inputs.begin(), inputs.end());
  std::vector<char> bytes;
  for (const auto& input : inputs) {
    std::fprintf(stderr, "replay: %s\n", input.c_str());
    std::fflush(stderr);
    if (!read_file(input, bytes)) {
      std::fprintf(stderr, "replay: cannot read %s\n", input.c_str());
      return 1;
    }
    int result = 0;
    try {
      result = LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "replay: %s: uncaught exception: %s\n", input.c_str(), e.what());
      return 1;
    } catch (...) {
      std::fprintf(stderr, "replay: %s: uncaught exception of unknown type\n", input.c_str());
      return 1;
    }
    // libFuzzer accepts 0 and -1 (do not add to the corpus); anything else is an error there too.
    if (result != 0 && result != -1) {
      std::fprintf(stderr, "replay: %s: the target returned %d\n", input.c_str(), result);
      return 1;
    }
  }
  std::printf("replay: %zu input(s) of %s ran clean\n", inputs.size(), corpus.c_str());
  return 0;
}
