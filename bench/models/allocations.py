#!/usr/bin/python3
"""Heap allocations per steady-state run of the published models (issue 14 §3).

    /usr/bin/python3 bench/models/allocations.py [--build build-test] [--threads 1,2] [--runs 20] [--only a,b]

For each model of models.tsv (fetched by fetch.sh into the cache), the inputs of compare.py
(xorshift32, seed 12345 + 77*j) are saved as .npy and `onnx-light-count-allocations` (built with the
tests, tests/allocation/) runs the model three times to warm up, then counts every heap allocation of
the process, on any thread, during --runs runs with outputs bound to caller memory. Prints a markdown
table; exit 1 when a model that runs allocated in its steady state.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402  (models.tsv, the shared input rule)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(compare.ROOT, "build"))
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    tool = os.path.join(os.path.abspath(args.build), "tests", "allocation", "onnx-light-count-allocations")
    if not os.path.exists(tool):
        sys.stderr.write(f"{tool}: not built (configure with -DONNX_LIGHT_BUILD_TESTS=ON)\n")
        return 2
    models = compare.fetched_models(args.only)
    rows, dirty = [], False
    for model in models:
        with tempfile.TemporaryDirectory() as work:
            arrays = compare.make_inputs(model, work)
            cmd = [tool, model["file"]] + [os.path.join(work, f"in{j}.npy") for j in range(len(arrays))]
            cmd += ["--threads", args.threads, "--runs", str(args.runs)]
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
        if p.returncode == 2:
            rows.append(f"| {model['name']} | does not run: {p.stderr.strip().splitlines()[-1] if p.stderr.strip() else 'exit 2'} |")
            continue
        counts = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
        dirty = dirty or p.returncode != 0
        cells = ", ".join(f"T={c['threads']}: {c['allocations_per_run']:g} allocations ({c['bytes_per_run']:g} bytes)"
                          for c in counts)
        rows.append(f"| {model['name']} | {cells} per run over {args.runs} runs |")
    print("| model | steady-state heap allocations |")
    print("|---|---|")
    print("\n".join(rows))
    return 1 if dirty else 0


if __name__ == "__main__":
    sys.exit(main())
