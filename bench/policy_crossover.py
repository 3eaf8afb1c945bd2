#!/usr/bin/python3
"""Does the spin policy move Abs's serial/parallel crossover? (issue 22, last bullet of Policies)

A tuning profile should record the execution policy it was measured under only if the policy moves
the crossover measurably. This runs `calibrate Abs --json` under each spin policy, one process
each, policies interleaved round by round so the VM's slow and fast spells fall on all of them
alike, and prints per policy the picks, their median, and the per-size parallel/serial ratios'
medians; then the verdict: the medians of two policies more than one doubling apart (the
repeatability margin of issue 16) count as "moves the crossover".

  bench/policy_crossover.py TOOL [--rounds 8] [--policies none,short,long] [--markdown]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import tempfile


def calibrate(tool: str, cache: str, spin: str) -> dict:
    command = [tool, "calibrate", "Abs", "--json", "--cache", cache, "--spin", spin]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    try:
        report = json.loads(done.stdout) if done.returncode in (0, 1) else None
    except json.JSONDecodeError:
        report = None
    if report is None:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr}")
    (m,) = report["measurements"]
    ratios = {c["size"]: c.get("ratio") for c in m["cases"] if c.get("ratio") is not None}
    return {"pick": report["calibrated"][0]["values"]["parallel.minimum_elements"],
            "confidence": m["confidence"], "ratios": ratios}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tool")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--policies", default="none,short,long")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    policies = args.policies.split(",")
    runs: dict[str, list[dict]] = {p: [] for p in policies}
    with tempfile.TemporaryDirectory(prefix="policy-crossover-") as directory:
        for r in range(args.rounds):
            for p in policies:
                runs[p].append(calibrate(args.tool, os.path.join(directory, f"{p}-{r}.cache"), p))
    medians = {p: statistics.median(x["pick"] for x in runs[p]) for p in policies}
    sizes = sorted({s for p in policies for x in runs[p] for s in x["ratios"]})
    if args.markdown:
        print("| spin | picks (elements) | median pick | high confidence | "
              + " | ".join(f"ratio @{s}" for s in sizes if s >= 8192) + " |")
        print("|:---|:---|---:|---:|" + "---:|" * len([s for s in sizes if s >= 8192]))
    for p in policies:
        picks = sorted(x["pick"] for x in runs[p])
        high = sum(x["confidence"] == "high" for x in runs[p])
        cells = []
        for s in sizes:
            if s < 8192:
                continue
            values = [x["ratios"][s] for x in runs[p] if s in x["ratios"]]
            cells.append(f"{statistics.median(values):.2f} (n={len(values)})" if values else "-")
        if args.markdown:
            print(f"| {p} | {', '.join(map(str, picks))} | {medians[p]:.0f} | {high}/{len(picks)} | "
                  + " | ".join(cells) + " |")
        else:
            print(f"{p:6} picks {picks} median {medians[p]:.0f} high {high}/{len(picks)}")
    spread = max(math.log2(m) for m in medians.values()) - min(math.log2(m) for m in medians.values())
    moves = spread > 1.0
    print(f"\nmedian picks span {spread:.2f} doublings across policies: "
          f"{'the policy moves the crossover' if moves else 'within one doubling: the policy does not move it measurably'}"
          f" ({args.rounds} processes per policy, interleaved)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
