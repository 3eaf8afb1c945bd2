#!/usr/bin/env bash
# `cmake --install` into a temporary prefix: the binary, the libraries and headers, the CMake
# package (find_package(onnx_light) -> onnx_light::runtime, onnx_light::tune), onnx_light.pc, the
# man pages and the bash/zsh/fish completions. Then a tiny consumer is built against that prefix,
# once with find_package and once with pkg-config, and run: it loads the seed's Abs model from the
# ONNX text syntax, runs it and checks the result, and asks libtune about this machine and a cache.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
BUILD="${ONNX_LIGHT_BINARY_DIR:?ONNX_LIGHT_BINARY_DIR must name the build tree}"
[[ -f $BUILD/cmake_install.cmake ]] || fail "$BUILD is not a configured build tree"
if grep -qE '^ONNX_LIGHT_SANITIZE:STRING=.+' "$BUILD/CMakeCache.txt"; then
  echo "SKIP: sanitizer build; its static libraries need the sanitizer runtime to link against" >&2
  exit 0
fi
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)

PREFIX="$SCRATCH/prefix"
cmake --install "$BUILD" --prefix "$PREFIX" >"$SCRATCH/install.log" 2>&1 || { cat "$SCRATCH/install.log" >&2; fail "cmake --install failed"; }

# --- what was installed -------------------------------------------------------------------------
expect_file() { [[ -f $PREFIX/$1 ]] || { find "$PREFIX" -type f | sort >&2; fail "not installed: $1"; }; }
expect_file bin/onnx-light-tune
lib_dir=$(dirname "$(find "$PREFIX" -name libonnx_light_runtime.\* | head -1)")
[[ -n $lib_dir && $lib_dir != . ]] || fail "libonnx_light_runtime was not installed"
ls "$lib_dir"/libonnx_light_tune.* >/dev/null || fail "libonnx_light_tune was not installed"
for header in runtime/model.h runtime/session.h runtime/tensor.h runtime/kernel_table.h tune/host.h tune/operations.h tune/reports.h; do
  expect_file "include/onnx_light/$header"
done
[[ -f $lib_dir/cmake/onnx_light/onnx_lightConfig.cmake ]] || fail "onnx_lightConfig.cmake not in $lib_dir/cmake/onnx_light"
[[ -f $lib_dir/cmake/onnx_light/onnx_lightConfigVersion.cmake ]] || fail "onnx_lightConfigVersion.cmake missing"
[[ -f $lib_dir/pkgconfig/onnx_light.pc ]] || fail "onnx_light.pc not in $lib_dir/pkgconfig"
for page in "$ONNX_LIGHT_SOURCE_DIR"/man/*.1; do
  expect_file "share/man/man1/$(basename "$page")"
done
expect_file share/bash-completion/completions/onnx-light-tune
expect_file share/zsh/site-functions/_onnx-light-tune
expect_file share/fish/vendor_completions.d/onnx-light-tune.fish

# The installed tool runs, and its installed completion is what it generates.
expect_exit 0 "$PREFIX/bin/onnx-light-tune" --version
expect_grep "$SCRATCH/out" '^onnx-light-tune [0-9]+\.[0-9]+\.[0-9]+'
version=$(head -1 "$SCRATCH/out" | awk '{ print $2 }')
expect_exit 0 "$PREFIX/bin/onnx-light-tune" completion bash
cmp -s "$SCRATCH/out" "$PREFIX/share/bash-completion/completions/onnx-light-tune" ||
  fail "the installed bash completion differs from the installed binary's output"
# man finds the installed pages by name.
if command -v man >/dev/null; then
  MANPATH="$PREFIX/share/man" man -w onnx-light-tune-calibrate >"$SCRATCH/man_w" 2>&1 ||
    { cat "$SCRATCH/man_w" >&2; fail "man -w does not find onnx-light-tune-calibrate under the prefix"; }
fi

# --- a tiny consumer ----------------------------------------------------------------------------
CONSUMER="$SCRATCH/consumer"
mkdir -p "$CONSUMER"
cat >"$CONSUMER/consumer.cc" <<'EOF'
// Built against an installed onnx_light: runs the seed's Abs model and asks libtune two things.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <onnx_light/runtime/model.h>
#include <onnx_light/runtime/session.h>
#include <onnx_light/runtime/tensor.h>
#include <onnx_light/tune/host.h>
#include <onnx_light/tune/operations.h>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: consumer MODEL.onnxtxt CACHE\n");
    return 2;
  }
  using namespace onnx_light::runtime;
  std::ifstream file(argv[1]);
  std::stringstream text;
  text << file.rdbuf();
  Model model = parse_model_text(text.str(), argv[1]);
  RuntimeSession session(model);
  RuntimeContext context;
  const float input[] = {-1.5f, 2.0f, -0.0f, -3.25f, 7.0f};
  Tensor x(ElementType::float32, {5});
  for (int i = 0; i < 5; ++i) x.data<float>()[i] = input[i];
  context.set("x", x);
  session.run(context);
  const Tensor& y = context.get("y");
  for (int i = 0; i < 5; ++i) {
    if (y.data<float>()[i] != std::fabs(input[i])) {
      std::fprintf(stderr, "y[%d] = %g, expected %g\n", i, y.data<float>()[i], std::fabs(input[i]));
      return 1;
    }
  }
  onnx_light::tune::InspectOptions inspect;
  inspect.path = argv[2];
  const auto report = onnx_light::tune::inspect_kernel_tuning_cache(inspect);
  std::printf("abs ok; host %s; cache %s\n", onnx_light::tune::this_machine().summary().c_str(),
              report.to_json().at("status").get<std::string>().c_str());
  return 0;
}
EOF
cat >"$CONSUMER/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.25)
project(onnx_light_consumer LANGUAGES CXX)
set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
find_package(onnx_light $version REQUIRED COMPONENTS runtime tune)
add_executable(consumer consumer.cc)
target_link_libraries(consumer PRIVATE onnx_light::tune onnx_light::runtime)
EOF
model="$ONNX_LIGHT_SOURCE_DIR/examples/abs.onnxtxt"
cache="$SCRATCH/consumer.cache"

# With find_package, seeing only the prefix (no package registry, nothing from the build tree).
cmake -S "$CONSUMER" -B "$CONSUMER/build" "${generator[@]}" -DCMAKE_PREFIX_PATH="$PREFIX" \
  -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF >"$SCRATCH/consumer_configure.log" 2>&1 ||
  { cat "$SCRATCH/consumer_configure.log" >&2; fail "configuring the find_package consumer failed"; }
cmake --build "$CONSUMER/build" -j2 >"$SCRATCH/consumer_build.log" 2>&1 ||
  { cat "$SCRATCH/consumer_build.log" >&2; fail "building the find_package consumer failed"; }
expect_exit 0 "$CONSUMER/build/consumer" "$model" "$cache"
expect_grep "$SCRATCH/out" '^abs ok; host .*; cache not_found$'

# With pkg-config.
command -v pkg-config >/dev/null || fail "pkg-config is not installed"
export PKG_CONFIG_PATH="$lib_dir/pkgconfig"
[[ $(pkg-config --modversion onnx_light) == "$version" ]] || fail "pkg-config --modversion onnx_light is not $version"
pkg-config --variable=prefix onnx_light >"$SCRATCH/pc_prefix"
[[ $(realpath "$(cat "$SCRATCH/pc_prefix")") == $(realpath "$PREFIX") ]] ||
  fail "onnx_light.pc's prefix $(cat "$SCRATCH/pc_prefix") is not the install prefix (the file must be relocatable)"
read -r -a flags <<<"$(pkg-config --cflags --libs onnx_light)"
"${CXX:-c++}" -std=c++20 "$CONSUMER/consumer.cc" "${flags[@]}" -o "$CONSUMER/consumer-pc" >"$SCRATCH/pc_build.log" 2>&1 ||
  { cat "$SCRATCH/pc_build.log" >&2; fail "building the pkg-config consumer failed: c++ ${flags[*]}"; }
expect_exit 0 "$CONSUMER/consumer-pc" "$model" "$cache"
expect_grep "$SCRATCH/out" '^abs ok; host '
echo "install: OK"
