#!/usr/bin/python3
"""Repeatability of `onnx-light-tune calibrate Abs` across processes (issue 16, acceptance).

Runs `calibrate Abs --json --save` N times, each in its own process on a throwaway cache, at the
default budget (250 ms / 64 MiB unless overridden), optionally with a busy-loop process loading
one core, and reports per run the pick, confidence, saved or not, reported and wall time, and
whether a kept default contradicts the measurements; then the summary the issue asks for.

  bench/calibration_repeatability.py TOOL [--runs 10] [--load] [--max-duration-ms 250]
      [--max-memory 64M] [--markdown]

Exit status: 0 when the acceptance holds (quiet: >= 9/N within one doubling of the median pick;
loaded: >= 8/N, or every disagreeing run warned with low confidence; every run within 1.2x the
budget as reported by the tool; no run keeps a default its measurements contradict), 1 otherwise.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter


def busy_loop() -> None:  # loads one core until terminated
    x = 0
    while True:
        x += 1


def within_one_doubling(pick: int, reference: float) -> bool:
    return pick * 2 >= reference and pick <= reference * 2


def contradicted_default(measurement: dict, default: int, diagnostics: list[str]) -> bool:
    """A kept default that the measurements contradict: serial won or tied at or above it, or
    parallel clearly won two consecutive sizes below it. A pick that equals the default because the
    crossover was measured there is not a kept default: the tool says "kept the default" when it
    keeps one."""
    if measurement["changed_default"] or not any("kept the default" in d for d in diagnostics):
        return False
    cases = sorted(measurement["cases"], key=lambda c: c["size"])
    if any(c["size"] >= default and c.get("verdict") == "loss" for c in cases):
        return True
    below = [c for c in cases if c["size"] < default]
    return any(a.get("verdict") == "win" and b.get("verdict") == "win" for a, b in zip(below, below[1:]))


def run_once(tool: str, cache: str, args: argparse.Namespace) -> dict:
    command = [tool, "calibrate", "Abs", "--json", "--save", "--cache", cache,
               "--max-duration-ms", str(args.max_duration_ms), "--max-memory", args.max_memory]
    start = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wall_ms = (time.monotonic() - start) * 1000
    # Exit 1 with a report is the tool saying "measured, but not saved" (low confidence); that run
    # counts. Anything else (no JSON, another status) is a failure of the tool.
    try:
        report = json.loads(done.stdout) if done.returncode in (0, 1) else None
    except json.JSONDecodeError:
        report = None
    if report is None:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr}")
    (m,) = report["measurements"]
    if done.returncode == 1 and m["saved"]:
        raise SystemExit(f"{' '.join(command)} exited 1 but reports the result saved: {done.stderr}")
    return {
        "pick": report["calibrated"][0]["values"]["parallel.minimum_elements"],
        "confidence": m["confidence"],
        "noisy": m["noisy"],
        "saved": m["saved"],
        "elapsed_ms": report["elapsed_ms"],
        "wall_ms": wall_ms,
        "sizes": len(m["cases"]),
        "other_cpus": (m.get("contention") or {}).get("other_cpus"),
        "waiting_threads": (m.get("contention") or {}).get("waiting_threads"),
        "warned": "warning:" in done.stderr,
        "measurement": m,
        "diagnostics": [d["message"] for d in report["diagnostics"]],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tool")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--load", action="store_true", help="run a busy loop on one core meanwhile")
    parser.add_argument("--max-duration-ms", type=int, default=250)
    parser.add_argument("--max-memory", default="64M")
    parser.add_argument("--default", type=int, default=32768, help="the portable default of Abs")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    parser.add_argument("--verbose", action="store_true", help="print every run's diagnostics")
    args = parser.parse_args()

    loader = None
    if args.load:
        loader = multiprocessing.Process(target=busy_loop, daemon=True)
        loader.start()
        time.sleep(0.2)
    runs = []
    try:
        with tempfile.TemporaryDirectory(prefix="calib-repeat-") as directory:
            for i in range(args.runs):
                runs.append(run_once(args.tool, os.path.join(directory, f"cache-{i}.toml"), args))
    finally:
        if loader is not None:
            loader.terminate()
            loader.join()

    picks = [r["pick"] for r in runs]
    median = statistics.median(picks)
    mode, _ = Counter(picks).most_common(1)[0]
    near_median = [within_one_doubling(p, median) for p in picks]
    near_mode = sum(within_one_doubling(p, mode) for p in picks)
    budget = args.max_duration_ms
    over = [r for r in runs if r["elapsed_ms"] > 1.2 * budget]
    contradicted = [r for r in runs if contradicted_default(r["measurement"], args.default, r["diagnostics"])]
    disagreeing = [r for r, ok in zip(runs, near_median) if not ok]
    disagreeing_unwarned = [r for r in disagreeing if not (r["confidence"] == "low" and r["warned"])]

    bar = "|" if args.markdown else ""
    print(f"{bar} run {bar} pick {bar} confidence {bar} saved {bar} sizes {bar} other CPUs {bar} our threads waiting {bar} reported ms {bar}"
          f" wall ms {bar} within 1 doubling of median {bar}")
    if args.markdown:
        print("|---:|---:|:---|:---|---:|---:|---:|---:|---:|:---|")
    for i, (r, ok) in enumerate(zip(runs, near_median), 1):
        print(f"{bar} {i} {bar} {r['pick']} {bar} {r['confidence']}{' (noisy)' if r['noisy'] else ''} {bar}"
              f" {'yes' if r['saved'] else 'no'} {bar} {r['sizes']} {bar}"
              f" {'-' if r['other_cpus'] is None else format(r['other_cpus'], '.2f')} {bar}"
              f" {'-' if r['waiting_threads'] is None else format(r['waiting_threads'], '.2f')} {bar}"
              f" {r['elapsed_ms']} {bar} {r['wall_ms']:.0f} {bar}"
              f" {'yes' if ok else 'NO'} {bar}")
        if args.verbose:
            for d in r["diagnostics"]:
                print("     ", d)
    confidences = Counter(r["confidence"] for r in runs)
    print()
    print(f"load: {'one busy-loop process' if args.load else 'none added'}; budget {budget} ms / {args.max_memory}")
    print(f"picks: median {median:g}, mode {mode}; within one doubling of the median: {sum(near_median)}/{len(runs)}"
          f", of the mode: {near_mode}/{len(runs)}")
    print(f"confidence: " + ", ".join(f"{k} {v}" for k, v in sorted(confidences.items())))
    print(f"reported time: max {max(r['elapsed_ms'] for r in runs)} ms = "
          f"{max(r['elapsed_ms'] for r in runs) / budget:.2f}x budget; process wall (start-up included): max "
          f"{max(r['wall_ms'] for r in runs):.0f} ms = {max(r['wall_ms'] for r in runs) / budget:.2f}x")
    print(f"runs over 1.2x budget (reported): {len(over)}; kept a contradicted default: {len(contradicted)}")
    print(f"disagreeing runs: {len(disagreeing)}, of which without a low-confidence warning: {len(disagreeing_unwarned)}")

    need = 9 if not args.load else 8
    agree_ok = sum(near_median) >= need * len(runs) / 10 or (args.load and not disagreeing_unwarned)
    ok = agree_ok and not over and not contradicted
    print("acceptance:", "met" if ok else "NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
