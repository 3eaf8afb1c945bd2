#!/usr/bin/python3
"""Builds a small real model with onnx.helper, runs it with `onnx-light-tune run` and compares
the outputs with a numpy reference.

Usage: run_models.py {mlp|cnn} PATH/TO/onnx-light-tune SCRATCH_DIR

mlp: Gemm + Relu + Gemm (transB) + Softmax.
cnn: Conv (pads) + Relu + MaxPool + Flatten + Gemm (transB).
Each model runs on 1 and on 2 threads; both results must match the reference (rtol 1e-4,
atol 1e-5) and each other bit for bit. So that the two runs really split the work differently,
every kernel of the model is first given a parallel threshold of 1 for 2 threads (`set`, into a
private cache), and the 2-thread run's profile must show each threshold-tuned node in a parallel
region that admitted both threads.
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

RTOL, ATOL = 1e-4, 1e-5
THRESHOLD_PREFIX = "parallel.minimum_"


def initializer(name, array):
    return numpy_helper.from_array(array.astype(np.float32), name)


# 40 classes: the last Gemm's output spans more than one column panel of the GEMM kernels, so
# it has work for two threads (with 10 it ran as one task whatever the threshold).
def mlp(rng):
    batch, features, hidden, classes = 5, 24, 40, 40
    w1 = rng.standard_normal((features, hidden)).astype(np.float32) * 0.3
    b1 = rng.standard_normal(hidden).astype(np.float32) * 0.1
    w2 = rng.standard_normal((classes, hidden)).astype(np.float32) * 0.3
    b2 = rng.standard_normal(classes).astype(np.float32) * 0.1
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], name="fc1"),
        helper.make_node("Relu", ["h"], ["a"], name="relu"),
        helper.make_node("Gemm", ["a", "w2", "b2"], ["logits"], name="fc2", transB=1),
        helper.make_node("Softmax", ["logits"], ["probabilities"], name="softmax", axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", features])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["batch", classes])],
        [initializer("w1", w1), initializer("b1", b1), initializer("w2", w2), initializer("b2", b2)])
    x = rng.standard_normal((batch, features)).astype(np.float32)

    def reference(x):
        a = np.maximum(x @ w1 + b1, 0)
        logits = a @ w2.T + b2
        e = np.exp(logits - logits.max(axis=-1, keepdims=True))
        return {"probabilities": e / e.sum(axis=-1, keepdims=True)}

    return graph, {"x": x}, reference


def conv2d(x, w, b, pad):
    n, c, h, wd = x.shape
    m, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1
    out = np.zeros((n, m, oh, ow), dtype=np.float64)
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i:i + oh, j:j + ow].astype(np.float64)
            out += np.einsum("nchw,mc->nmhw", patch, w[:, :, i, j].astype(np.float64))
    return out + b.reshape(1, m, 1, 1)


def cnn(rng):
    batch, channels, size, maps, classes = 2, 3, 12, 8, 40
    w = rng.standard_normal((maps, channels, 3, 3)).astype(np.float32) * 0.3
    b = rng.standard_normal(maps).astype(np.float32) * 0.1
    flat = maps * (size // 2) * (size // 2)
    wf = rng.standard_normal((classes, flat)).astype(np.float32) * 0.05
    bf = rng.standard_normal(classes).astype(np.float32) * 0.1
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], name="conv", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"], name="relu"),
        helper.make_node("MaxPool", ["r"], ["p"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["logits"], name="fc", transB=1),
    ]
    graph = helper.make_graph(
        nodes, "cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", channels, size, size])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", classes])],
        [initializer("w", w), initializer("b", b), initializer("wf", wf), initializer("bf", bf)])
    x = rng.standard_normal((batch, channels, size, size)).astype(np.float32)

    def reference(x):
        r = np.maximum(conv2d(x, w, b, 1), 0)
        n, m, h, wd = r.shape
        p = r.reshape(n, m, h // 2, 2, wd // 2, 2).max(axis=(3, 5))
        return {"logits": p.reshape(n, -1) @ wf.T.astype(np.float64) + bf}

    return graph, {"x": x}, reference


def tool(cli, cache, env, *args):
    """Runs onnx-light-tune on the private cache; returns its stdout, or None after printing why."""
    command = [cli, "--cache", cache, *args]
    completed = subprocess.run(command, capture_output=True, text=True, env=env)
    if completed.returncode != 0:
        print(f"{' '.join(command)} exited with {completed.returncode}:\n{completed.stdout}{completed.stderr}")
        return None
    return completed.stdout


def publish_threshold_one(cli, cache, env, model_path, arguments):
    """Sets every threshold of every kernel the model runs on 2 threads to 1; returns the
    threshold-tuned node names, or None after printing why it could not."""
    out = tool(cli, cache, env, "run", model_path, *arguments, "--threads", "2", "--profile", "--json")
    if out is None:
        return None
    thresholds = {}
    nodes = []
    for entry in json.loads(out)["tuning"]:
        names = sorted(n for n in entry["active_values"] if n.startswith(THRESHOLD_PREFIX))
        if not names:
            continue
        nodes.append(entry["node"])
        thresholds[(entry["kernel"], entry["implementation"], entry["element_type"])] = names
    if not thresholds:
        print("no kernel of the model has a parallel threshold: 1 vs 2 threads would compare serial runs")
        return None
    for (kernel, implementation, element_type), names in sorted(thresholds.items()):
        if element_type != 1:
            print(f"{kernel}: element type {element_type}, expected float (1)")
            return None
        if tool(cli, cache, env, "set", kernel, "--implementation", implementation, "--element-type", "float",
                "--threads", "2", *[f"{name}=1" for name in names]) is None:
            return None
    return nodes


def check_regions(kind, report, nodes):
    """The 2-thread run used the published thresholds and split every region it could in two;
    returns the problems found."""
    problems = []
    for entry in report["tuning"]:
        for name, value in entry["active_values"].items():
            if name.startswith(THRESHOLD_PREFIX) and (value != 1 or entry["active_source"] != "published_profile"):
                problems.append(f"{kind} {entry['node']}: {name}={value} from {entry['active_source']}, "
                                f"not the published 1")
    events = report["parallel_regions"]["events"]
    if report["parallel_regions"]["dropped_events"]:
        problems.append(f"{kind}: parallel region events were dropped")
    for e in events:
        blocks = -(-e["iterations"] // max(1, e["grain"]))
        if e["requested_threads"] != 2 or e["admitted_threads"] != min(2, max(1, blocks)):
            problems.append(f"{kind}: region {e}: expected 2 requested, min(2, {blocks} blocks) admitted")
    for node in nodes:
        if not any(node in e["label"] and e["admitted_threads"] == 2 for e in events):
            problems.append(f"{kind} {node}: no parallel region admitted 2 threads; regions: {events}")
    return problems


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("mlp", "cnn"):
        print(__doc__, file=sys.stderr)
        return 2
    kind, cli, scratch = sys.argv[1], sys.argv[2], sys.argv[3]
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    rng = np.random.default_rng(20261202)
    graph, inputs, reference = (mlp if kind == "mlp" else cnn)(rng)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    model_path = os.path.join(scratch, kind + ".onnx")
    onnx.save(model, model_path)
    arguments = []
    for name, value in inputs.items():
        path = os.path.join(scratch, name + ".npy")
        np.save(path, value)
        arguments += ["-i", f"{name}={path}"]
    expected = reference(**inputs)
    # A private cache, user and system layers included, so no real cache changes the thresholds.
    env = dict(os.environ, HOME=scratch, XDG_CACHE_HOME=os.path.join(scratch, "xdg"),
               ONNX_LIGHT_SYSTEM_TUNING_CACHE=os.path.join(scratch, "no-system.cache"))
    env.pop("ONNX_LIGHT_TUNING_CACHE", None)
    cache = os.path.join(scratch, "kernel_tuning.cache")
    nodes = publish_threshold_one(cli, cache, env, model_path, arguments)
    if nodes is None:
        return 1
    results = {}
    failed = False
    for threads in (1, 2):
        out_dir = os.path.join(scratch, f"out{threads}")
        out = tool(cli, cache, env, "run", model_path, *arguments, "--threads", str(threads), "--output-dir", out_dir,
                   "--profile", "--json")
        if out is None:
            return 1
        if threads == 2:
            for problem in check_regions(kind, json.loads(out), nodes):
                print(problem)
                failed = True
        for name, want in expected.items():
            got = np.load(os.path.join(out_dir, name + ".npy"))
            results.setdefault(name, []).append(got)
            if got.dtype != np.float32 or got.shape != want.shape:
                print(f"{kind} ({threads} threads) {name}: got {got.dtype}{list(got.shape)}, "
                      f"want float32{list(want.shape)}")
                failed = True
            elif not np.allclose(got, want, rtol=RTOL, atol=ATOL):
                worst = np.max(np.abs(got.astype(np.float64) - want))
                print(f"{kind} ({threads} threads) {name}: differs from the numpy reference (largest difference {worst})")
                failed = True
    for name, (one, two) in results.items():
        if one.tobytes() != two.tobytes():
            print(f"{kind} {name}: 1 and 2 threads differ")
            failed = True
    if failed:
        return 1
    print(f"{kind}: outputs {sorted(expected)} match the numpy reference on 1 and 2 threads "
          f"(nodes {nodes} split over 2 threads)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
