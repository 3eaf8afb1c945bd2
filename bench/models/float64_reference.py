#!/usr/bin/python3
"""Who is closer to the exact answer: our float32 outputs or ONNX Runtime's?

Run after compare.py (it reads compare.py's work directories: the inputs in{j}.npy, our outputs ours{k}.npy,
ORT's outputs ort/output{k}.bin). For each model:
  1. the graph converted to float64 (initializers, Constant values, Cast targets, inputs, outputs and value
     infos; Resize's `scales` stay float32 as the operator requires) and run by our runtime in double: the
     reference;
  2. our float32 outputs with `optimization="all"` (compare.py's) and `"none"`;
  3. ORT's float32 outputs with all graph optimizations (compare.py's) and with them disabled
     (ort_ref.js, graph_optimization_level "disabled").
Prints max |x - ref| / max |ref| per output (worst output) for each, and how far ORT's two levels and ours
are from each other, as a markdown table (also to --out) and raw figures to --json; then one Sigmoid node on
[-9, -6] (where det's output lies) against the exact function, for ORT and for us.

    /usr/bin/python3 bench/models/float64_reference.py --build build-bench [--only a,b] [--out F.md]

A double run by our own runtime is a reference only because the double kernels are the portable loops
(no SIMD, no fused epilogues, no reordering): tests/ compares those with numpy on every operator.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402  (models.tsv, cache dir, ORT reference runner)

FLOAT, DOUBLE = 1, 11


def to_float64(src, dst):
    import numpy as np
    import onnx
    from onnx import numpy_helper

    model = onnx.load(src)
    keep_float = set()  # values that must stay float32: Resize/Upsample scales

    def walk(graph):
        for n in graph.node:
            if n.op_type == "Resize" and len(n.input) > 2 and n.input[2]:
                keep_float.add(n.input[2])
            if n.op_type == "Upsample" and len(n.input) > 1:
                keep_float.add(n.input[1])
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    walk(a.g)

    def convert(graph):
        for i, t in enumerate(graph.initializer):
            if t.data_type == FLOAT and t.name not in keep_float:
                graph.initializer[i].CopyFrom(numpy_helper.from_array(
                    numpy_helper.to_array(t).astype(np.float64), t.name))
        for n in graph.node:
            for a in n.attribute:
                if n.op_type == "Constant" and a.name == "value" and a.t.data_type == FLOAT \
                        and n.output[0] not in keep_float:
                    a.t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(a.t).astype(np.float64), a.t.name))
                if n.op_type == "Cast" and a.name == "to" and a.i == FLOAT:
                    a.i = DOUBLE
                if a.type == onnx.AttributeProto.GRAPH:
                    convert(a.g)
        for vi in list(graph.input) + list(graph.output) + list(graph.value_info):
            if vi.type.tensor_type.elem_type == FLOAT and vi.name not in keep_float:
                vi.type.tensor_type.elem_type = DOUBLE

    walk(model.graph)
    convert(model.graph)
    onnx.save(model, dst)


def worker(model_file, work, n_inputs, optimization, dtype, prefix):
    """Child process: our runtime on the saved inputs (cast to `dtype`), outputs saved as {prefix}{k}.npy."""
    import numpy as np
    from onnx_light.onnx_py import _onnxpykernels
    rt = _onnxpykernels.runtime
    inputs = []
    for j in range(n_inputs):
        a = np.load(os.path.join(work, f"in{j}.npy"))
        inputs.append(a.astype(dtype) if a.dtype == np.float32 else a)
    options = rt.RuntimeSessionOptions(parameters=rt.RuntimeParameters(1))
    options.optimization = optimization
    session = rt.RuntimeSession(__import__("pathlib").Path(model_file), options)
    for k, o in enumerate(session.run_arrays(inputs)):
        np.save(os.path.join(work, f"{prefix}{k}.npy"), np.array(o))


def run_ours(model_file, work, n_inputs, optimization, dtype, prefix, build):
    env = dict(os.environ, PYTHONPATH=os.path.join(build, "python"))
    r = compare.run([sys.executable, os.path.abspath(__file__), "--_worker", model_file, work, str(n_inputs),
                     optimization, dtype, prefix], env=env)
    if r.returncode != 0:
        raise RuntimeError(compare.last_line(r.stderr) or f"exit {r.returncode}")


def ort_disabled(work):
    with open(os.path.join(work, "ort_spec.json")) as f:
        spec = json.load(f)
    spec.update(graph_optimization_level="disabled", profile_runs=1)
    spec_file = os.path.join(work, "ort_disabled_spec.json")
    with open(spec_file, "w") as f:
        json.dump(spec, f)
    out = os.path.join(work, "ort_disabled")
    shutil.rmtree(out, ignore_errors=True)
    r = compare.run(["node", os.path.join(HERE, "ort_ref.js"), spec_file, out])
    if r.returncode != 0:
        raise RuntimeError(compare.last_line(r.stderr) or f"exit {r.returncode}")
    return out


def load_outputs(work, kind):
    """Outputs as float64 arrays: ours ('ours', 'none', 'f64') from .npy, ORT's ('ort', 'ort_disabled') from .bin."""
    import numpy as np
    outs = []
    if kind.startswith("ort"):
        with open(os.path.join(work, kind, "outputs.json")) as f:
            for o in json.load(f):
                outs.append(np.fromfile(o["file"], dtype=np.float32).reshape(o["dims"]).astype(np.float64))
        return outs
    k = 0
    while os.path.exists(os.path.join(work, f"{kind}{k}.npy")):
        outs.append(np.load(os.path.join(work, f"{kind}{k}.npy")).astype(np.float64))
        k += 1
    return outs


def rel_diff(xs, refs):
    """Worst over outputs of max |x - ref| / max |ref|."""
    import numpy as np
    if len(xs) != len(refs) or not refs:
        raise RuntimeError(f"{len(xs)} outputs against {len(refs)}")
    worst = 0.0
    for x, ref in zip(xs, refs):
        if x.shape != ref.shape:
            raise RuntimeError(f"shape {list(x.shape)} against {list(ref.shape)}")
        scale = float(np.max(np.abs(ref))) if ref.size else 0.0
        d = float(np.max(np.abs(x - ref))) if ref.size else 0.0
        worst = max(worst, d / scale if scale > 0 else d)
    return worst


def sigmoid_tail(work_root, build):
    """One Sigmoid node on 4096 points in [-9, -6] (det's output lies there): ORT's and our absolute and
    relative error against 1 / (1 + exp(-x)) in double. Returns a markdown line."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper
    work = os.path.join(work_root, "sigmoid_tail")
    os.makedirs(work, exist_ok=True)
    vi = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [4096]) for n in ("x", "y")]
    model = helper.make_model(helper.make_graph([helper.make_node("Sigmoid", ["x"], ["y"])], "sigmoid_tail",
                                                [vi[0]], [vi[1]]), opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    model_file = os.path.join(work, "sigmoid.onnx")
    onnx.save(model, model_file)
    x = np.linspace(-9, -6, 4096).astype(np.float32)
    np.save(os.path.join(work, "in0.npy"), x)
    x.tofile(os.path.join(work, "in0.bin"))
    with open(os.path.join(work, "ort_spec.json"), "w") as f:
        json.dump({"model": model_file, "threads": 1, "profile_runs": 1, "inputs": [
            {"name": "x", "dtype": "float32", "shape": [4096], "file": os.path.join(work, "in0.bin")}]}, f)
    shutil.rmtree(os.path.join(work, "ort"), ignore_errors=True)
    r = compare.run(["node", os.path.join(HERE, "ort_ref.js"), os.path.join(work, "ort_spec.json"),
                     os.path.join(work, "ort")])
    if r.returncode != 0:
        raise RuntimeError(compare.last_line(r.stderr) or f"exit {r.returncode}")
    run_ours(model_file, work, 1, "none", "float32", "ours", build)
    exact = 1.0 / (1.0 + np.exp(-x.astype(np.float64)))
    parts = []
    for who, kind in (("ORT", "ort"), ("ours", "ours")):
        y = load_outputs(work, kind)[0]
        err = np.abs(y - exact)
        parts.append(f"{who} absolute <= {err.max():.2e}, relative <= {(err / exact).max():.2e}")
    return "One Sigmoid node on [-9, -6] against double: " + "; ".join(parts) + "\n"


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--_worker":
        worker(*sys.argv[2:4], int(sys.argv[4]), *sys.argv[5:8])
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default="build-bench", help="build tree with python/ (default build-bench)")
    ap.add_argument("--only", help="comma-separated model names")
    ap.add_argument("--out", help="also write the markdown table here")
    ap.add_argument("--json", help="write the raw figures here")
    args = ap.parse_args()
    args.build = os.path.abspath(args.build)

    columns = [("ours", "ours f32, optimize all"), ("none", "ours f32, optimize none"),
               ("ort", "ORT f32, all optimizations"), ("ort_disabled", "ORT f32, optimizations disabled")]
    rows, raw = [], {}
    for m in compare.read_models():
        if args.only and m["name"] not in args.only.split(","):
            continue
        work = os.path.join(compare.cache_dir(), "compare", m["name"])
        if not os.path.exists(os.path.join(work, "ours0.npy")) or not os.path.isdir(os.path.join(work, "ort")):
            rows.append(f"| {m['name']} | not compared: run compare.py first |" + " |" * len(columns))
            continue
        print(f"{m['name']}: float64 graph, our runs, ORT without optimizations", file=sys.stderr)
        try:
            f64 = os.path.join(work, "float64.onnx")
            to_float64(m["file"], f64)
            n = len(m["inputs"])
            run_ours(f64, work, n, "none", "float64", "f64_", args.build)
            run_ours(m["file"], work, n, "none", "float32", "none", args.build)
            ort_disabled(work)
            ref = load_outputs(work, "f64_")
            got = {kind: load_outputs(work, kind) for kind, _ in columns}
            figures = {kind: rel_diff(got[kind], ref) for kind, _ in columns}
            figures["ours_vs_ort"] = rel_diff(got["ours"], got["ort"])
            figures["ort_vs_ort_disabled"] = rel_diff(got["ort"], got["ort_disabled"])
            raw[m["name"]] = figures
            rows.append(f"| {m['name']} | " + " | ".join(f"{figures[k]:.1e}" for k, _ in columns) +
                        f" | {figures['ours_vs_ort']:.1e} | {figures['ort_vs_ort_disabled']:.1e} |")
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            raw[m["name"]] = {"error": str(e)}
            rows.append(f"| {m['name']} | error: {e} |" + " |" * (len(columns) + 1))
    head = ("| model | " + " | ".join(t for _, t in columns) + " | ours vs ORT (all) | ORT all vs disabled |\n"
            "|---|" + "---|" * (len(columns) + 2))
    text = ("Max |x - ref| / max |ref| against our runtime's float64 run of the same graph (worst output):\n\n"
            + head + "\n" + "\n".join(rows) + "\n")
    try:
        text += "\n" + sigmoid_tail(os.path.join(compare.cache_dir(), "compare"), args.build)
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        raw["sigmoid_tail"] = {"error": str(e)}
        text += f"\nSigmoid tail check failed: {e}\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(raw, f, indent=1)
    return 0 if all("error" not in v for v in raw.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
