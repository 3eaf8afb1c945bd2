#!/usr/bin/python3
"""ONNX Runtime (ort_c_bench, C API) vs onnx-light binaries on bench/conv_pool_models.py's models,
alternating tools within each repetition (the machine is noisy; compare ratios within a repetition):

    /usr/bin/python3 bench/conv_pool_compare.py MODELS_DIR REPS NAME=ONNX_LIGHT_TUNE_BINARY...

Prints per (model, threads): the median over repetitions of each tool's median latency (us) and of
each tool's ratio to ONNX Runtime in the same repetition.
"""
import json
import os
import statistics
import subprocess
import sys

ORT = os.path.expanduser("~/.cache/onnx-light-peer/bin/ort_c_bench")


def main():
    models_dir, reps, tools = sys.argv[1], int(sys.argv[2]), [a.split("=", 1) for a in sys.argv[3:]]
    names = [l.split("\t")[0] for l in open(os.path.join(models_dir, "manifest.tsv")) if l.strip() and l[0] != "#"]
    results = {}  # (model, threads, tool) -> [median per rep]
    for _ in range(reps):
        out = subprocess.run([ORT, "--models", models_dir, "--threads", "1,2", "--modes", "prealloc", "--min-time", "0.3",
                              "--only", ",".join(names)], capture_output=True, text=True, check=True).stdout
        rows = [l.split("\t") for l in out.splitlines()[1:] if l]
        ort = {(r[0], int(r[1])): float(r[3]) for r in rows}
        for (model, threads), us in ort.items():
            results.setdefault((model, threads, "ort"), []).append(us)
        for model in names:
            for threads in (1, 2):
                for tool, binary in tools:
                    out = subprocess.run([binary, "run", os.path.join(models_dir, model + ".onnx"), "-i", "x=random:1", "-t",
                                          str(threads), "-r", "100", "-w", "10", "--json"],
                                         capture_output=True, text=True, check=True).stdout
                    us = json.loads(out)["latency_us"]["median"]
                    results.setdefault((model, threads, tool), []).append(us)
                    results.setdefault((model, threads, tool + "/ort"), []).append(us / ort[(model, threads)])
    header = ["model", "T", "ORT us"] + [f"{t} us" for t, _ in tools] + [f"{t} / ORT (range)" for t, _ in tools]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for model in names:
        for threads in (1, 2):
            cells = [model, str(threads), f"{statistics.median(results[(model, threads, 'ort')]):.0f}"]
            cells += [f"{statistics.median(results[(model, threads, t)]):.0f}" for t, _ in tools]
            for t, _ in tools:
                r = results[(model, threads, t + "/ort")]
                cells.append(f"{statistics.median(r):.2f} ({min(r):.2f}-{max(r):.2f})")
            print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
