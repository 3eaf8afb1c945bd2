#!/usr/bin/env bash
# `calibrate --model`: keys come from the model's nodes and are decided in place. A model of 24
# small Abs nodes (256 elements each) under a cached threshold of 1 runs every node in parallel,
# which cannot pay at 256 elements: the threshold moves above the nodes' work, the end-to-end
# check finds the model faster, and only then is the new value saved. --no-save writes nothing;
# a malformed cache is refused before measuring and left as it was; usage errors are exit 2.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
CACHE="$SCRATCH/model.cache"
MODEL="$SCRATCH/abs24.onnxtxt"
IMPL=$(host_elementwise_implementation)
{
  printf '<ir_version: 8, opset_import: ["" : 18]>\ng (float[16,16] x) => ('
  for i in $(seq 1 24); do printf '%sfloat[16,16] y%d' "$([ "$i" = 1 ] || echo ', ')" "$i"; done
  printf ') {\n'
  for i in $(seq 1 24); do printf '  y%d = Abs(x)\n' "$i"; done
  printf '}\n'
} >"$MODEL"

expect_exit 0 "$TOOL" --cache "$CACHE" set Abs parallel.minimum_elements=1 --threads 2
expect_exit 0 "$TOOL" --cache "$CACHE" calibrate --model "$MODEL" --threads 2 --max-duration-ms 4000 --no-blocks --json
$PY - "$SCRATCH/out" "$IMPL" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
impl = sys.argv[2]
assert r["effective_threads"] == 2, r
(k,) = [k for k in r["keys"] if k["kernel"] == "Abs"]
assert k["implementation"] == impl and k["nodes"] == 24, k
assert k["old_values"]["parallel.minimum_elements"] == 1, k
assert k["changed"] == ["parallel.minimum_elements"], k
assert k["new_values"]["parallel.minimum_elements"] > 256, k  # every node serial
nodes = [n for n in r["nodes"] if n["kernel"] == "Abs"]
assert len(nodes) == 24 and all(n["work"] == 256 for n in nodes), nodes
assert sum(n["verdict"] == "serial" for n in nodes) >= 12, nodes
e = r["end_to_end"]
assert e["measured"] and e["verdict"] == "faster" and e["speedup_low"] > 1.0, e
assert r["saved"] and r["cache_update"]["status"] == "updated", r
assert r["elapsed_ms"] <= 1.2 * r["maximum_duration_ms"], r
PYEOF
expect_exit 0 "$TOOL" --cache "$CACHE" inspect --kernel Abs --threads 2 --json
$PY - "$SCRATCH/out" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
values = [p["values"]["parallel.minimum_elements"] for p in r["profiles"] if p["kernel"] == "Abs" and p["classification"] == "loaded"]
assert values and values[0] > 256, r
PYEOF

# The human report names the change and the end-to-end verdict.
expect_exit 0 "$TOOL" --cache "$CACHE" set Abs parallel.minimum_elements=1 --threads 2
expect_exit 0 "$TOOL" --cache "$CACHE" calibrate --model "$MODEL" --threads 2 --max-duration-ms 4000 --no-blocks
expect_grep "$SCRATCH/out" "parallel.minimum_elements 1 -> [0-9]+"
expect_grep "$SCRATCH/out" "end to end: .* faster"

# --no-save: measured and reported, nothing written.
expect_exit 0 "$TOOL" --cache "$CACHE" set Abs parallel.minimum_elements=1 --threads 2
cp "$CACHE" "$SCRATCH/before.cache"
expect_exit 0 "$TOOL" --cache "$CACHE" calibrate --model "$MODEL" --threads 2 --max-duration-ms 3000 --no-blocks --no-save --json
$PY -c 'import json, sys; r = json.load(open(sys.argv[1])); assert not r["saved"] and r["cache_update"] is None, r' "$SCRATCH/out"
cmp -s "$CACHE" "$SCRATCH/before.cache" || fail "--no-save changed the cache"

# A malformed cache: refused before measuring, named, untouched.
printf 'this is not toml [[[\n' >"$SCRATCH/bad.cache"
cp "$SCRATCH/bad.cache" "$SCRATCH/bad.copy"
expect_exit 1 "$TOOL" --cache "$SCRATCH/bad.cache" calibrate --model "$MODEL" --threads 2
expect_grep "$SCRATCH/err" "bad.cache is malformed.*nothing was measured"
cmp -s "$SCRATCH/bad.cache" "$SCRATCH/bad.copy" || fail "a malformed cache was overwritten"

# A symbolic dimension needs --dim; an unknown input is named.
printf '<ir_version: 8, opset_import: ["" : 18]>\ng (float[N] x) => (float[N] y) { y = Abs(x) }\n' >"$SCRATCH/sym.onnxtxt"
expect_exit 1 "$TOOL" --cache "$CACHE" calibrate --model "$SCRATCH/sym.onnxtxt" --threads 2 --no-save
expect_grep "$SCRATCH/err" "dimension 0 is symbolic \('N'\)"
expect_exit 0 "$TOOL" --cache "$CACHE" calibrate --model "$SCRATCH/sym.onnxtxt" --threads 2 --no-save --dim N=64 --max-duration-ms 300
expect_exit 1 "$TOOL" --cache "$CACHE" calibrate --model "$MODEL" -i nope=random --no-save
expect_grep "$SCRATCH/err" "'nope'"

# The optimizer's fused kernels (their own domain) are keys like any other: model calibration
# writes them, and set/list/load must reach them (they once did not: dispatch looked in ai.onnx).
expect_exit 0 "$TOOL" --cache "$SCRATCH/fused.cache" set FusedConv parallel.minimum_macs=2457600 --threads 2
expect_exit 0 "$TOOL" --cache "$SCRATCH/fused.cache" list FusedConv --threads 2 --json
$PY - "$SCRATCH/out" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
(k,) = [k for k in r["kernels"] if k["kernel"] == "FusedConv" and k["element_type"] == 1]
assert k["active_values"]["parallel.minimum_macs"] == 2457600 or k["cached_values"]["parallel.minimum_macs"] == 2457600, k
PYEOF
expect_exit 0 "$TOOL" --cache "$SCRATCH/fused.cache" load --threads 2
expect_grep "$SCRATCH/out" "loaded +FusedConv"

# Usage errors.
expect_exit 2 "$TOOL" --cache "$CACHE" calibrate --model "$MODEL" Abs
expect_grep "$SCRATCH/err" "does not take kernel names"
expect_exit 2 "$TOOL" --cache "$CACHE" calibrate --model "$MODEL" --repeat 3
expect_exit 2 "$TOOL" --cache "$CACHE" calibrate Abs --dim N=4
expect_grep "$SCRATCH/err" "need --model"
expect_exit 2 "$TOOL" --cache "$CACHE" calibrate --model "$SCRATCH/missing.onnx"
echo "calibrate --model: ok"
