#!/usr/bin/python3
"""ONNX Runtime's ort_c_bench and one or more builds of our onnx-light-peer-bench on the same models and
inputs (a directory with a manifest.tsv, e.g. from bench/conv_pool_models.py), in the peer harness's
prealloc mode, the tools alternating within every repetition (the machine is shared and noisy: compare
ratios taken within a repetition, not microseconds across runs):

    /usr/bin/python3 bench/peer_compare.py MODELS_DIR [--reps 3] [--threads 1,2] [--min-time 0.3]
        [--only NAME,...] NAME=PEER_BENCH_BINARY...

e.g. `before=/tmp/old/onnx-light-peer-bench after=build/bench/onnx-light-peer-bench` for an A/B of two
commits. Prints a markdown table: per (model, threads) the median over repetitions of each tool's median
latency (us) and of its ratio to ORT in the same repetition, with the range over repetitions. The session-11
depthwise and stem tables of bench/RESULTS.md were measured this way.
"""
import argparse
import os
import statistics
import subprocess
import sys

ORT = os.path.expanduser("~/.cache/onnx-light-peer/bin/ort_c_bench")


def run(binary, models_dir, names, threads, min_time):
    """{(model, threads): median_us} from one run of a peer-harness binary (ORT's or ours)."""
    command = [binary, "--models", models_dir, "--threads", threads, "--modes", "prealloc", "--min-time",
               str(min_time), "--only", ",".join(names)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.strip()}")
    out = {}
    for line in done.stdout.splitlines():
        fields = line.split("\t")
        if len(fields) < 4 or fields[0] == "model":
            continue
        out[(fields[0], int(fields[1]))] = float(fields[3])
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models_dir")
    parser.add_argument("tools", nargs="+", help="NAME=PATH of an onnx-light-peer-bench binary")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--min-time", type=float, default=0.3)
    parser.add_argument("--only", default="", help="comma-separated model names (default: the whole manifest)")
    args = parser.parse_args()
    if not os.access(ORT, os.X_OK):
        sys.exit(f"{ORT} not found: run /work/shared/peer/setup.sh (or ../shared/peer/setup.sh) first")
    tools = []
    for spec in args.tools:
        name, sep, path = spec.partition("=")
        if not sep or not os.access(path, os.X_OK):
            sys.exit(f"tool {spec!r}: expected NAME=PATH of an executable onnx-light-peer-bench")
        tools.append((name, path))
    manifest = os.path.join(args.models_dir, "manifest.tsv")
    names = [l.split("\t")[0] for l in open(manifest) if l.strip() and not l.startswith("#")]
    if args.only:
        wanted = args.only.split(",")
        missing = [n for n in wanted if n not in names]
        if missing:
            sys.exit(f"--only: not in {manifest}: {', '.join(missing)}")
        names = wanted
    medians = {}  # (model, threads, tool) -> [median per repetition]
    ratios = {}   # (model, threads, tool) -> [ratio to ORT per repetition]
    for rep in range(args.reps):
        print(f"repetition {rep + 1}/{args.reps}", file=sys.stderr)
        ort = run(ORT, args.models_dir, names, args.threads, args.min_time)
        for key, us in ort.items():
            medians.setdefault(key + ("ort",), []).append(us)
        for name, path in tools:
            ours = run(path, args.models_dir, names, args.threads, args.min_time)
            for key, us in ours.items():
                medians.setdefault(key + (name,), []).append(us)
                if key in ort:
                    ratios.setdefault(key + (name,), []).append(us / ort[key])
    header = ["model", "T", "ORT us"] + [f"{n} us" for n, _ in tools] + [f"{n} / ORT (range)" for n, _ in tools]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for model in names:
        for threads in sorted({int(t) for t in args.threads.split(",")}):
            if (model, threads, "ort") not in medians:
                continue
            cells = [model, str(threads), f"{statistics.median(medians[(model, threads, 'ort')]):.0f}"]
            cells += [f"{statistics.median(medians.get((model, threads, n), [float('nan')])):.0f}" for n, _ in tools]
            for n, _ in tools:
                r = ratios.get((model, threads, n))
                cells.append(f"{statistics.median(r):.2f} ({min(r):.2f}-{max(r):.2f})" if r else "n/a")
            print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
