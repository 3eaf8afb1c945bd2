#!/usr/bin/python3
"""A notebook's tour of onnx_light: load a CNN, run it, profile it, calibrate its kernels, run again.

Each block below is one notebook cell; run the file as a script to see the whole tour::

    PYTHONPATH=build/python /usr/bin/python3 examples/notebook_tour.py [--model M.onnx] [--budget-ms N]

Without ``--model`` it builds a MobileNet-style CNN (a stem convolution, depthwise-separable
blocks with HardSwish, global pooling and a classifier) with ``onnx.helper``; with it, any
single-input float model works (e.g. the published models of ``bench/models/fetch.sh``).
Everything it writes (the tuning cache, the trace) goes to a temporary directory.
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import numpy as np
import numpy.typing as npt

import onnx_light
from onnx_light import kernel_tuning

FloatArray = npt.NDArray[np.float32]


def build_cnn(path: Path, size: int = 96, classes: int = 100) -> None:
    """Writes a MobileNet-style CNN: stem, three depthwise-separable blocks, pooling, classifier."""
    from onnx import TensorProto, helper, numpy_helper, save  # type: ignore[import]

    rng = np.random.default_rng(7)
    nodes = []
    weights = []

    def weight(name: str, shape: Sequence[int], scale: float = 0.2) -> str:
        weights.append(numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name))
        return name

    def conv(x: str, out: str, cin: int, cout: int, kernel: int, stride: int, group: int) -> str:
        w = weight(f"{out}.w", (cout, cin // group, kernel, kernel))
        b = weight(f"{out}.b", (cout,), 0.05)
        pad = kernel // 2
        nodes.append(helper.make_node("Conv", [x, w, b], [out], name=out, strides=[stride, stride],
                                      pads=[pad] * 4, group=group))
        return out

    def hardswish(x: str) -> str:
        nodes.append(helper.make_node("HardSwish", [x], [x + ".hs"], name=x + ".hs"))
        return x + ".hs"

    x = hardswish(conv("input", "stem", 3, 16, 3, 2, 1))
    channels = 16
    for i, (cout, stride) in enumerate([(24, 2), (40, 2), (80, 1)]):
        x = hardswish(conv(x, f"b{i}.dw", channels, channels, 3, stride, channels))  # depthwise
        x = hardswish(conv(x, f"b{i}.pw", channels, cout, 1, 1, 1))  # pointwise
        channels = cout
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["pooled"], name="pool"))
    nodes.append(helper.make_node("Flatten", ["pooled"], ["features"], name="flatten"))
    nodes.append(helper.make_node("Gemm", ["features", weight("fc.w", (classes, channels)), weight("fc.b", (classes,))],
                                  ["logits"], name="fc", transB=1))
    nodes.append(helper.make_node("Softmax", ["logits"], ["probabilities"], name="softmax", axis=-1))
    graph = helper.make_graph(
        nodes, "mobilenet_style",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 3, size, size])],
        [helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, ["batch", classes])],
        weights)
    save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))


def median_ms(session: onnx_light.InferenceSession, feeds: Dict[str, FloatArray], runs: int) -> float:
    """The median wall time of `runs` runs, after one warm-up run."""
    session.run(None, feeds)
    times: List[float] = []
    for _ in range(runs):
        start = time.perf_counter()
        session.run(None, feeds)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, help="a single-input float .onnx model (default: build a CNN)")
    parser.add_argument("--threads", type=int, default=2, help="session threads (default 2)")
    parser.add_argument("--budget-ms", type=int, default=10_000, help="calibration time budget (default 10000)")
    parser.add_argument("--runs", type=int, default=30, help="timed runs before and after (default 30)")
    args = parser.parse_args(argv)
    scratch = tempfile.TemporaryDirectory(prefix="onnx_light_tour_")
    work = Path(scratch.name)

    # --- Load: a path, bytes or an onnx.ModelProto; inputs and outputs as ONNX Runtime shows them.
    model_path: Path = args.model or work / "mobilenet_style.onnx"
    if args.model is None:
        build_cnn(model_path)
    session = onnx_light.InferenceSession(str(model_path), threads=args.threads, profile=True)
    print("inputs: ", session.get_inputs())
    print("outputs:", session.get_outputs())

    # --- Run: run(None, feeds) returns every output, as numpy arrays.
    (first,) = session.get_inputs()
    shape = [d if isinstance(d, int) else 1 for d in (first.shape or [])]
    rng = np.random.default_rng(0)
    x: FloatArray = rng.standard_normal(shape).astype(np.float32)
    feeds = {first.name: x}
    outputs = session.run(None, feeds)
    print(f"output {session.get_outputs()[0].name}: shape {outputs[0].shape}, "
          f"argmax {int(np.argmax(outputs[0]))}")

    # --- Profile: per node, longest first; per op type; a Chrome trace for ui.perfetto.dev.
    session.reset_profile()
    for _ in range(10):
        session.run(None, feeds)
    profile = session.profile()
    print(profile)
    for row in profile.to_rows("op_types")[:5]:
        print(f"  {row['op_type']:<20} {row['share']:6.1%} of node time over {row['nodes']} node(s)")
    print("trace:", profile.to_trace(work / "trace.json"))

    # --- Calibrate this machine's kernels on this model, into a private cache (the default
    # cache is used when path is left out). Saved only when the whole model is not slower.
    cache = work / "kernel_tuning.cache"
    before = onnx_light.InferenceSession(str(model_path), threads=args.threads)
    before_ms = median_ms(before, feeds, args.runs)
    report = kernel_tuning.calibrate_kernel_tuning(
        model=str(model_path), inputs=feeds, path=str(cache), num_threads=args.threads,
        maximum_duration_ms=args.budget_ms)
    print(report)
    end_to_end = report["end_to_end"]
    print(f"calibration: {report['elapsed_ms']} ms of {args.budget_ms}; end to end {end_to_end['verdict']}"
          f"; saved: {report['saved']}")

    # --- Run again: a new session resolves the values calibrate just published in this process.
    after = onnx_light.InferenceSession(str(model_path), threads=args.threads)
    after_ms = median_ms(after, feeds, args.runs)
    np.testing.assert_allclose(after.run(None, feeds)[0], outputs[0], rtol=1e-4, atol=1e-6)
    print(f"median of {args.runs} runs: {before_ms:.3f} ms before, {after_ms:.3f} ms after "
          f"({before_ms / after_ms:.2f}x; one process on a shared machine: "
          "compare across processes before trusting it)")
    scratch.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
