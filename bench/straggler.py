#!/usr/bin/python3
"""Straggler-tolerant ParallelFor (issue 22): one block per participant against finer cuts.

On the 2-vCPU development VM a 2-thread region waits for its slowest participant: when the host
takes a vCPU away for a while, a region cut into one block per participant costs the serial time.
With k blocks per participant (ONNX_LIGHT_BLOCKS_PER_PARTICIPANT=k, each block keeping at least
512 units) a late participant leaves its unclaimed blocks to the others. This runs each workload
in many processes per setting, settings interleaved process by process so that the VM's slow and
fast spells fall on all of them alike, and prints per workload and setting the distribution of
the per-process medians (median, p90, min-max) and the median of the per-process p90s; with
--calibrations N also N `calibrate Abs` runs per setting (picks, their spread, confidence).

  bench/straggler.py TOOL [--processes 20] [--runs 2000] [--settings serial,1,4] [--calibrations 0] [--markdown]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import tempfile

# name -> (model text, --dim arguments); float inputs, 2 threads.
WORKLOADS = {
    "Abs 1e5": ("<ir_version: 10, opset_import: [\"\" : 18]>\nagraph (float[N] x) => (float[N] y) {\n"
                "  y = Abs(x)\n}\n", ["--dim", "N=100000"]),
    "Softmax 256x1024": ("<ir_version: 10, opset_import: [\"\" : 18]>\nagraph (float[R, C] x) => (float[R, C] y) {\n"
                         "  y = Softmax <axis = -1> (x)\n}\n", ["--dim", "R=256", "--dim", "C=1024"]),
}


def environment(setting: str) -> dict[str, str]:
    env = dict(os.environ)
    env["ONNX_LIGHT_BLOCKS_PER_PARTICIPANT"] = "1" if setting == "serial" else setting
    return env


def run_latency(tool: str, model: str, dims: list[str], cache: str, runs: int, setting: str) -> dict:
    threads = "1" if setting == "serial" else "2"  # "serial": the one-thread reference
    command = [tool, "--cache", cache, "run", model, "-i", "x=random", *dims, "-t", threads, "-r", str(runs), "--json"]
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=environment(setting))
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr}")
    return json.loads(done.stdout)["latency_us"]


def calibrate(tool: str, cache: str, setting: str) -> dict:
    command = [tool, "--cache", cache, "calibrate", "Abs", "--element-type", "float", "--no-save", "--json"]
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=environment(setting))
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr}") from None
    (m,) = report["measurements"]
    return {"pick": report["calibrated"][0]["values"]["parallel.minimum_elements"], "confidence": m["confidence"]}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tool")
    parser.add_argument("--processes", type=int, default=20)
    parser.add_argument("--runs", type=int, default=2000, help="runs per process (after the tool's warm-up)")
    parser.add_argument("--settings", default="serial,1,4",
                        help="blocks per participant to compare at 2 threads; 'serial' runs 1 thread")
    parser.add_argument("--calibrations", type=int, default=0, help="calibrate Abs runs per setting")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    settings = args.settings.split(",")
    latencies: dict[tuple[str, str], list[dict]] = {(w, s): [] for w in WORKLOADS for s in settings}
    picks: dict[str, list[dict]] = {s: [] for s in settings}
    with tempfile.TemporaryDirectory(prefix="straggler-") as directory:
        cache = os.path.join(directory, "empty.cache")  # never written: default thresholds
        models = {}
        for name, (text, _) in WORKLOADS.items():
            models[name] = os.path.join(directory, name.split()[0].lower() + ".onnxtxt")
            with open(models[name], "w", encoding="utf-8") as out:
                out.write(text)
        for _ in range(args.processes):
            for name, (_, dims) in WORKLOADS.items():
                for s in settings:
                    latencies[(name, s)].append(run_latency(args.tool, models[name], dims, cache, args.runs, s))
        for _ in range(args.calibrations):
            for s in settings:
                if s != "serial":
                    picks[s].append(calibrate(args.tool, cache, s))

    if args.markdown:
        print("| workload | blocks per participant (2 threads; serial: 1 thread) | median of process medians (us) | p90 of process "
              "medians | min-max of process medians | median of process p90s |")
        print("|:---|---:|---:|---:|---:|---:|")
    for name in WORKLOADS:
        for s in settings:
            medians = [x["median"] for x in latencies[(name, s)]]
            p90s = [x["p90"] for x in latencies[(name, s)]]
            cells = (f"{statistics.median(medians):.1f}", f"{percentile(medians, 0.9):.1f}",
                     f"{min(medians):.1f}-{max(medians):.1f}", f"{statistics.median(p90s):.1f}")
            if args.markdown:
                print(f"| {name} | {s} | " + " | ".join(cells) + " |")
            else:
                print(f"{name:18} k={s}: median {cells[0]} us, p90 {cells[1]}, range {cells[2]}, median p90 {cells[3]}"
                      f"   (per process: {' '.join(f'{m:.1f}' for m in sorted(medians))})")
    print(f"\n{args.processes} processes per cell, {args.runs} runs each")
    if args.calibrations:
        print()
        if args.markdown:
            print("| blocks per participant | picks (elements) | median pick | spread (doublings) | high confidence |")
            print("|---:|:---|---:|---:|---:|")
        for s in settings:
            if s == "serial":
                continue
            values = sorted(x["pick"] for x in picks[s])
            spread = math.log2(values[-1] / values[0]) if values[0] > 0 else float("inf")
            high = sum(x["confidence"] == "high" for x in picks[s])
            if args.markdown:
                print(f"| {s} | {', '.join(map(str, values))} | {statistics.median(values):.0f} | {spread:.1f} | "
                      f"{high}/{len(values)} |")
            else:
                print(f"calibrate Abs k={s}: picks {values}, median {statistics.median(values):.0f}, "
                      f"spread {spread:.1f} doublings, high {high}/{len(values)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
