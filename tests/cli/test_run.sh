#!/usr/bin/env bash
# `run`: outputs, --json shape, --output-dir, --profile, and every kind of bad input.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
EX="$ONNX_LIGHT_SOURCE_DIR/examples"

# A good run, human output.
expect_exit 0 "$TOOL" run "$EX/abs.onnxtxt" -i x=random:3 --dim N=1000 -r 3 -t 2
expect_grep "$SCRATCH/out" '^output y: float\[1000\] = \['
expect_grep "$SCRATCH/out" 'latency: min .* over 3 runs'

# --json: outputs, latency_us, parallel_regions and the tuning in force.
expect_exit 0 "$TOOL" run "$EX/abs.onnxtxt" -i x=random --dim N=70000 -t 2 --profile --json -r 2
$PY - "$SCRATCH/out" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["outputs"][0]["name"] == "y" and r["outputs"][0]["element_type"] == 1 and r["outputs"][0]["shape"] == [70000], r
lat = r["latency_us"]
assert lat["runs"] == 2 and 0 < lat["min"] <= lat["median"] <= lat["p90"], lat
pr = r["parallel_regions"]
assert pr["dropped_events"] == 0 and len(pr["events"]) == 2, pr
assert pr["events"][0]["requested_threads"] == 2 and pr["events"][0]["admitted_threads"] == 2, pr
assert pr["events"][0]["iterations"] == 70000
t = r["tuning"][0]
assert t["kernel"] == "Abs" and t["active_source"] == "portable_default", t
assert t["active_values"]["parallel.minimum_elements"] == 32768, t
PYEOF

# --output-dir writes <output>.npy that numpy reads back equal to |x|.
$PY -c "import numpy as np; np.save('$SCRATCH/x.npy', np.linspace(-2, 2, 9, dtype=np.float32))"
expect_exit 0 "$TOOL" run "$EX/abs.onnxtxt" -i "x=$SCRATCH/x.npy" --output-dir "$SCRATCH/outdir"
$PY -c "
import numpy as np
y = np.load('$SCRATCH/outdir/y.npy'); x = np.load('$SCRATCH/x.npy')
assert y.dtype == np.float32 and (y == np.abs(x)).all(), y"

# Binary protobuf model with broadcasting Add.
$PY - "$SCRATCH/add.onnx" <<'PYEOF'
import sys
from onnx import helper, TensorProto
g = helper.make_graph([helper.make_node("Add", ["a", "b"], ["y"], name="sum")], "g",
    [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3]), helper.make_tensor_value_info("b", TensorProto.FLOAT, [3])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])])
open(sys.argv[1], "wb").write(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
PYEOF
$PY -c "import numpy as np; np.save('$SCRATCH/a.npy', np.arange(6, dtype=np.float32).reshape(2,3)); np.save('$SCRATCH/b.npy', np.array([10,20,30], dtype=np.float32)); np.save('$SCRATCH/b4.npy', np.ones(4, dtype=np.float32)); np.save('$SCRATCH/bd.npy', np.ones(3))"
expect_exit 0 "$TOOL" run "$SCRATCH/add.onnx" -i "a=$SCRATCH/a.npy" -i "b=$SCRATCH/b.npy" -o "$SCRATCH/o2"
$PY -c "
import numpy as np
assert (np.load('$SCRATCH/o2/y.npy') == np.arange(6, dtype=np.float32).reshape(2,3) + [10,20,30]).all()"

# Bad input: each a clear message naming the file/node/input, exit 1, never a crash.
expect_exit 1 "$TOOL" run "$EX/abs.onnxtxt"
expect_grep "$SCRATCH/err" "missing input 'x' \(float\[N\]\)"
expect_exit 1 "$TOOL" run "$EX/abs.onnxtxt" -i x=random
expect_grep "$SCRATCH/err" "symbolic .*--dim N=SIZE"
# Every open dimension of the input at once, each symbol once.
printf '<ir_version: 8, opset_import: ["" : 18]>\ng (float[N,M,N] x) => (float[N,M,N] y) { y = Abs(x) }\n' >"$SCRATCH/nmn.onnxtxt"
expect_exit 1 "$TOOL" run "$SCRATCH/nmn.onnxtxt" -i x=random --dim M=2
expect_grep "$SCRATCH/err" "--input x: dimension 0 is symbolic \('N'\), dimension 2 is symbolic \('N'\); bind it with --dim N=SIZE$"
expect_exit 0 "$TOOL" run "$SCRATCH/nmn.onnxtxt" -i x=random --dim M=2 --dim N=3
expect_exit 1 "$TOOL" run "$EX/abs.onnxtxt" -i nosuch=random
expect_grep "$SCRATCH/err" "no such input \(inputs: x\)"
expect_exit 1 "$TOOL" run "$SCRATCH/add.onnx" -i "a=$SCRATCH/a.npy" -i "b=$SCRATCH/bd.npy"
expect_grep "$SCRATCH/err" "input 'b' must be float\[3\] but is double\[3\]"
expect_exit 1 "$TOOL" run "$SCRATCH/add.onnx" -i "a=$SCRATCH/a.npy" -i "b=$SCRATCH/b4.npy"
expect_grep "$SCRATCH/err" "dimension 0 must be 3"
printf 'garbage\x00\x01\x02' > "$SCRATCH/garbage.onnx"
expect_exit 1 "$TOOL" run "$SCRATCH/garbage.onnx"
expect_grep "$SCRATCH/err" "garbage.onnx: not a valid ONNX protobuf model"
head -c 20 "$SCRATCH/add.onnx" > "$SCRATCH/truncated.onnx"
expect_exit 1 "$TOOL" run "$SCRATCH/truncated.onnx"
expect_grep "$SCRATCH/err" "truncated.onnx"
printf '<ir_version: 8, opset_import: ["" : 17]>\ng (float[2] x) => (float[2] y) {\n  y = Abs(x\n' > "$SCRATCH/bad.onnxtxt"
expect_exit 1 "$TOOL" run "$SCRATCH/bad.onnxtxt"
expect_grep "$SCRATCH/err" "bad.onnxtxt: ONNX text syntax error .*line: [0-9]+ column: [0-9]+"
printf '<ir_version: 8, opset_import: ["" : 17]>\ng (float[2] x) => (float[2] y) {\n  a = Frobnicate(x)\n  b = Abs(a)\n  y = Unknown2 <alpha = 1.0> (b)\n}\n' > "$SCRATCH/unsupported.onnxtxt"
expect_exit 1 "$TOOL" run "$SCRATCH/unsupported.onnxtxt"
expect_grep "$SCRATCH/err" "2 nodes cannot run"
expect_grep "$SCRATCH/err" "Frobnicate"
expect_grep "$SCRATCH/err" "Unknown2"
echo "not a npy" > "$SCRATCH/bad.npy"
expect_exit 1 "$TOOL" run "$EX/abs.onnxtxt" -i "x=$SCRATCH/bad.npy"
expect_grep "$SCRATCH/err" "bad.npy"

# Usage errors exit 2.
expect_exit 2 "$TOOL" run
expect_exit 2 "$TOOL" run "$SCRATCH/does-not-exist.onnx"
expect_exit 2 "$TOOL" run "$EX/abs.onnxtxt" --threads -1
expect_exit 2 "$TOOL" run "$EX/abs.onnxtxt" --no-such-flag
expect_exit 2 "$TOOL" frobnicate
expect_exit 0 "$TOOL" run --help
expect_grep "$SCRATCH/out" "Examples:"
expect_exit 0 "$TOOL" --version
expect_grep "$SCRATCH/out" "^onnx-light-tune [0-9]+\.[0-9]+\.[0-9]+"
echo "run: all checks passed"
