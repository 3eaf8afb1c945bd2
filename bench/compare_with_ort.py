#!/usr/bin/python3
"""Side-by-side: onnx-light vs ONNX Runtime 1.30 (C API) on the peer manifest, in one invocation.

    /usr/bin/python3 bench/compare_with_ort.py [--reps 5] [--min-time 0.3] [--bench BIN] [--write-results]

Each repetition runs ONNX Runtime's C harness, then ours, then the machine's memcpy limit and our
copy floor (floor_bench BM_PoolCopy: the bytes of a 1e6 elementwise op copied by our thread pool),
one after the other, so each ratio pairs medians measured minutes apart at most. Prints the target
table of issue 7 (ratio = our median / ORT's, median over repetitions, with the range) and, with
--write-results, replaces the peer section of bench/RESULTS.md with it.

Needs ../shared/peer/setup.sh to have run (this script runs it when its outputs are missing).
"""
import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEER = os.path.join(os.path.dirname(ROOT), "shared", "peer")
WORK = os.environ.get("PEER_WORK", os.path.join(os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "onnx-light-peer"))
MODELS = os.environ.get("PEER_MODELS", os.path.join(WORK, "models"))

# (label, models, thread counts, mode, target ratio)
TARGETS = [
    ("Abs, N = 1 (per-call floor, preallocated output)", ["abs_1"], "prealloc", 0.6),
    ("Abs, Add, Relu at N = 1e4, 1e5, 1e6", [f"{op}_{n}" for op in ("abs", "add", "relu") for n in (10000, 100000, 1000000)], "prealloc", 0.9),
    ("Abs, Add, Relu at N = 1e7", [f"{op}_10000000" for op in ("abs", "add", "relu")], "prealloc", 0.95),
    ("MatMul 256 and 1024 (float)", ["matmul_256", "matmul_1024"], "prealloc", 1.0),
    ("MLP 64x512 -> 1024 -> 256 (Gemm+Relu+Gemm)", ["mlp_64x512x1024x256"], "prealloc", 1.0),
    ("Softmax 256x1024", ["softmax_256x1024"], "prealloc", 0.9),
]


def read_tsv(text):
    rows = {}
    lines = [l for l in text.splitlines() if l and not l.startswith("onnxruntime")]
    header = lines[0].split("\t")
    for line in lines[1:]:
        f = dict(zip(header, line.split("\t")))
        rows[(f["model"], int(f["threads"]), f["mode"])] = float(f["median_us"])
    return rows


def read_floors(text):
    """floor_bench JSON -> {(floats, threads): real time in µs} of each BM_PoolCopy case."""
    out = {}
    for b in json.loads(text)["benchmarks"]:
        m = re.match(r"BM_PoolCopy/n:(\d+)/threads:(\d+)", b["name"])
        if m and b.get("run_type", "iteration") == "iteration":
            scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3}[b["time_unit"]]
            out[(int(m.group(1)), int(m.group(2)))] = b["real_time"] * scale
    return out


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=0.3)
    ap.add_argument("--bench", default=os.path.join(ROOT, "build-bench", "bench", "onnx-light-peer-bench"))
    ap.add_argument("--floor-bench", default=os.path.join(ROOT, "build-bench", "bench", "floor_bench"))
    ap.add_argument("--only", default="", help="comma-separated model names")
    ap.add_argument("--write-results", action="store_true")
    ap.add_argument("--alloc", action="store_true",
                    help="also time 'alloc' mode (a fresh output every run) and print it as an informative table")
    a = ap.parse_args()
    ortlib_bin = os.path.join(WORK, "bin", "ort_c_bench")
    if not os.path.exists(ortlib_bin) or not os.path.exists(os.path.join(MODELS, "manifest.tsv")):
        subprocess.run(["bash", os.path.join(PEER, "setup.sh")], check=True)
    # Always name the models: the peer harness leaves the N = 1 models out of its default set.
    only = ["--only", a.only or ",".join(m for _, models, _, _ in TARGETS for m in models)]
    ours, theirs, memcpy, floors = [], [], [], []
    for rep in range(a.reps):
        load = open("/proc/loadavg").read().split()[:3]
        print(f"repetition {rep + 1}/{a.reps} (loadavg {' '.join(load)})", file=sys.stderr)
        modes = "prealloc,alloc" if a.alloc else "prealloc"
        theirs.append(read_tsv(run([ortlib_bin, "--models", MODELS, "--min-time", str(a.min_time), "--modes", modes] + only)))
        ours.append(read_tsv(run([a.bench, "--models", MODELS, "--min-time", str(a.min_time), "--modes", modes] + only)))
        lim = run([os.path.join(WORK, "bin", "limits"), str(a.min_time)])
        memcpy.append(lim)
        floors.append(read_floors(run([a.floor_bench, "--benchmark_filter=BM_PoolCopy", "--benchmark_format=json",
                                       f"--benchmark_min_time={a.min_time}"])))
    # memcpy GB/s (read+written) per thread count, from the limits tool's text.
    def memcpy_gbps(t):
        vals = []
        for text in memcpy:
            m = re.search(rf"^memcpy_64MiB threads={t} .*GBps_rw=([0-9.]+)", text, re.M)
            if m:
                vals.append(float(m.group(1)))
        return statistics.median(vals) if vals else None

    # Median over repetitions of the pool copy that moves the bytes of model m at t threads.
    def copy_floor(m, t):
        if not m.endswith("_1000000"):
            return None
        floats = 1500000 if m.startswith("add") else 1000000
        vals = [f[(floats, t)] for f in floors if (floats, t) in f]
        return statistics.median(vals) if vals else None

    lines = []
    lines.append(f"Date {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}, "
                 f"commit {run(['git', '-C', ROOT, 'rev-parse', '--short', 'HEAD']).strip()}, "
                 f"{a.reps} repetitions, min time {a.min_time} s per configuration.")
    cpu = run(["bash", "-c", "lscpu | grep -E 'Model name' | sed 's/  */ /g'"]).strip()
    flags = run(["bash", "-c", "grep -m1 -o -wE 'sse4_2|avx|avx2|fma|f16c|avx512f|avx512bw|avx512vl' /proc/cpuinfo | sort -u | tr '\\n' ' '"]).strip()
    lines.append(f"Machine: {cpu}; flags: {flags}; loadavg at end {' '.join(open('/proc/loadavg').read().split()[:3])}.")
    lines.append("")
    lines.append("| work | model | T | onnx-light µs | ORT µs | ratio (median) | range | target | met |")
    lines.append("|---|---|---|---|---|---|---|---|---|")
    for label, models, mode, target in TARGETS:
        for m in models:
            for t in (1, 2):
                key = (m, t, mode)
                pairs = [(o[key], r[key]) for o, r in zip(ours, theirs) if key in o and key in r and r[key] > 0]
                if not pairs:
                    lines.append(f"| {label} | {m} | {t} | – | – | – | – | ≤ {target} | not run |")
                    continue
                ratios = [x / y for x, y in pairs]
                med = statistics.median(ratios)
                note = ""
                floor = copy_floor(m, t)
                if floor:
                    ours_us, ort_us = statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)
                    note = (f" (same-run copy of as many bytes: {floor:.0f} µs; ours {100 * ours_us / floor:.0f}%, "
                            f"ORT {100 * ort_us / floor:.0f}% of it)")
                if m.endswith("_10000000") and memcpy_gbps(t):
                    moved = 4e7 * (3 if m.startswith("add") else 2)
                    ours_gbps = moved / statistics.median(p[0] for p in pairs) / 1e3
                    note = f" ({ours_gbps:.1f} GB/s = {100 * ours_gbps / memcpy_gbps(t):.0f}% of memcpy {memcpy_gbps(t):.1f})"
                lines.append(f"| {label}{note} | {m} | {t} | {statistics.median(p[0] for p in pairs):.2f} | "
                             f"{statistics.median(p[1] for p in pairs):.2f} | {med:.2f} | {min(ratios):.2f}–{max(ratios):.2f} | "
                             f"≤ {target} | {'yes' if med <= target else 'NO'} |")
    lines.append("")
    lines.append("Ratio = our median / ONNX Runtime's median from the same repetition; below 1 we are faster.")
    if a.alloc:
        lines.append("")
        lines.append("Informative, no target: `alloc` mode, where each run returns a fresh output (ONNX Runtime "
                     "allocates from its arena; we from the session's buffer pool).")
        lines.append("")
        lines.append("| model | T | onnx-light µs | ORT µs | ratio (median) | range |")
        lines.append("|---|---|---|---|---|---|")
        for _, models, _, _ in TARGETS:
            for m in models:
                for t in (1, 2):
                    key = (m, t, "alloc")
                    pairs = [(o[key], r[key]) for o, r in zip(ours, theirs) if key in o and key in r and r[key] > 0]
                    if not pairs:
                        continue
                    ratios = [x / y for x, y in pairs]
                    lines.append(f"| {m} | {t} | {statistics.median(p[0] for p in pairs):.2f} | "
                                 f"{statistics.median(p[1] for p in pairs):.2f} | {statistics.median(ratios):.2f} | "
                                 f"{min(ratios):.2f}–{max(ratios):.2f} |")
    text = "\n".join(lines)
    print(text)
    if a.write_results:
        path = os.path.join(ROOT, "bench", "RESULTS.md")
        old = open(path).read() if os.path.exists(path) else "# Benchmark results\n"
        begin, end = "<!-- peer-comparison:begin -->", "<!-- peer-comparison:end -->"
        block = f"{begin}\n{text}\n{end}"
        if begin in old:
            new = re.sub(re.escape(begin) + ".*?" + re.escape(end), lambda _: block, old, flags=re.S)
        else:
            new = old.rstrip() + "\n\n## Side by side with ONNX Runtime 1.30 (C API)\n\n" + \
                "Regenerate: `cmake --build build-bench && /usr/bin/python3 bench/compare_with_ort.py --write-results`.\n\n" + block + "\n"
        open(path, "w").write(new)
        print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
