#!/usr/bin/python3
"""InferenceSession.run(None, feeds) against ONNX Runtime's outputs (issue 20's acceptance).

    PYTHONPATH=build/python /usr/bin/python3 bench/models/inference_session_vs_ort.py [--real] [--tolerance 1e-4]

Models: the end-to-end test models (tests/e2e/run_models.py: mlp, cnn), the notebook tour's
MobileNet-style CNN (examples/notebook_tour.py) and, with --real, every published model of
models.tsv that bench/models/fetch.sh has fetched. Inputs are those of compare.py (xorshift32,
saved as .npy/.bin); ORT's outputs come from ort_ref.js (onnxruntime-node 1.30 of
/work/shared/peer/setup.sh); ours from onnx_light.InferenceSession(path).run(None, feeds) on 1
and 2 threads. Prints per model and output the max |ours - ORT| / max |ORT| and exits 1 when
one passes --tolerance or a model fails to run.
"""
import argparse
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path[:0] = [HERE, os.path.join(ROOT, "tests", "e2e"), os.path.join(ROOT, "examples")]

import compare  # noqa: E402  (bench/models/compare.py: inputs, ORT reference, diff)
import notebook_tour  # noqa: E402
import onnx  # noqa: E402
import run_models  # noqa: E402
from onnx import helper  # noqa: E402

import onnx_light  # noqa: E402


# Differences explained elsewhere: the bound used instead of --tolerance, and why.
KNOWN = {
    "ppocrv4_det": (5e-4, "ORT's own float32 error: ours is within 1.1e-5 of a float64 evaluation "
                          "(bench/models/float64_reference.py, RESULTS.md)"),
}


def built_models(work):
    """The e2e models and the tour's CNN, saved as .onnx, with their input specs."""
    out = []
    rng = np.random.default_rng(1)
    for name, build in (("e2e_mlp", run_models.mlp), ("e2e_cnn", run_models.cnn)):
        graph, feeds, _ = build(rng)
        path = os.path.join(work, name + ".onnx")
        onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), path)
        out.append({"name": name, "file": path, "inputs": [
            {"name": k, "dtype": "float32", "shape": list(v.shape)} for k, v in feeds.items()]})
    path = os.path.join(work, "tour_cnn.onnx")
    notebook_tour.build_cnn(__import__("pathlib").Path(path))
    out.append({"name": "tour_cnn", "file": path, "inputs": [{"name": "input", "dtype": "float32", "shape": [1, 3, 96, 96]}]})
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--real", action="store_true", help="also the fetched published models of models.tsv")
    parser.add_argument("--tolerance", type=float, default=1e-4)
    args = parser.parse_args()
    args.profile_runs = 1
    root = tempfile.mkdtemp(prefix="session_vs_ort_")
    models = built_models(root)
    if args.real:
        models += [m for m in compare.read_models() if os.path.exists(m["file"])]
    print(f"onnx_light {onnx_light.__version__}; ORT via {os.path.join(HERE, 'ort_ref.js')}")
    print("| model | threads | output | shape | max abs diff / max abs ORT |")
    print("|---|---|---|---|---|")
    failed = 0
    for model in models:
        work = os.path.join(root, model["name"])
        os.makedirs(work, exist_ok=True)
        arrays = compare.make_inputs(model, work)
        ort = compare.ort_reference(model, work, args)
        if "error" in ort:
            print(f"| {model['name']} | | ORT failed: {ort['error']} | | |")
            failed += 1
            continue
        for threads in (1, 2):
            try:
                session = onnx_light.InferenceSession(model["file"], threads=threads)
                feeds = {info.name: arrays[j] for j, info in enumerate(session.get_inputs())}
                outs = session.run(None, feeds)
            except Exception as error:  # noqa: BLE001  (reported, counted as a failure)
                reason = " ".join(str(error).split())[:200]
                print(f"| {model['name']} | {threads} | ours failed: {type(error).__name__}: {reason} | | |")
                failed += 1
                continue
            for o, ours in zip(ort["outputs"], outs):
                ref = np.fromfile(o["file"], dtype=np.float32).reshape(o["dims"])
                if ours.shape != ref.shape:
                    print(f"| {model['name']} | {threads} | {o['name']} | ours {ours.shape}, ORT {ref.shape} | FAIL |")
                    failed += 1
                    continue
                scale = float(np.max(np.abs(ref))) or 1.0
                rel = float(np.max(np.abs(ours.astype(np.float64) - ref))) / scale if ref.size else 0.0
                bound, why = KNOWN.get(model["name"], (args.tolerance, ""))
                bad = rel > bound
                failed += bad
                note = " FAIL" if bad else (f" (bound {bound:g}: {why})" if rel > args.tolerance else "")
                print(f"| {model['name']} | {threads} | {o['name']} | {list(ref.shape)} | {rel:.2e}{note} |")
    print(f"\n{len(models)} models, {failed} failure(s) at tolerance {args.tolerance:g}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
