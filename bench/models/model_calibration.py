#!/usr/bin/python3
"""The tuner's headline figure (issue 16): end-to-end gain of `calibrate --model` over the portable
defaults, per published model and thread count, measured across processes.

    /usr/bin/python3 bench/models/model_calibration.py [--build build-bench] [--threads 1,2]
        [--only a,b] [--budget-ms 20000] [--pairs 6] [--runs 40] [--spin POLICY] [--out F.md] [--json F.json]

Per model of models.tsv (fetched by fetch.sh; inputs are compare.py's in<j>.npy, made by a
compare.py run) and thread count:
  1. `onnx-light-tune calibrate --model M -i ... --threads T --cache C --json` into an empty cache C:
     what changed, the in-process end-to-end check (speedup and interval) and whether it saved;
  2. when it saved: --pairs pairs of processes of `onnx-light-tune run M -i ... --threads T -r RUNS
     -w 5 --json`, one with an empty cache (portable defaults) and one with C, alternating which
     goes first; per process the median latency; per pair the ratio calibrated/default. Reported:
     the gain (default / calibrated - 1) from the geometric mean of the pair ratios (the order
     alternates, so the first-process effect cancels), the gain from their median, and the spread
     (min..max) of the pair ratios. When nothing was saved the calibrated cache equals the defaults, so the gain is 0
     by construction and no processes are run.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import compare  # noqa: E402  (models.tsv reader and the model cache location)


def model_inputs(name):
    work = os.path.join(compare.cache_dir(), "compare", name)
    spec_path = os.path.join(work, "ort_spec.json")
    if not os.path.exists(spec_path):
        return None  # compare.py never ran this model (or could not: it does not load)
    with open(spec_path) as f:
        spec = json.load(f)
    return [f"{i['name']}={os.path.join(work, f'in{j}.npy')}" for j, i in enumerate(spec["inputs"])]


def tool(build):
    return os.path.join(ROOT, build, "apps", "onnx-light-tune", "onnx-light-tune")


def run_json(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    try:
        return p.returncode, json.loads(p.stdout)
    except json.JSONDecodeError:
        sys.exit(f"{' '.join(cmd)}: exit {p.returncode}, no JSON: {p.stderr.strip()[:500]}")


def latency(binary, model, inputs, threads, cache, runs, spin=""):
    cmd = [binary, "run", model, "--threads", str(threads), "-r", str(runs), "-w", "5", "--json", "--cache", cache]
    if spin:
        cmd += ["--spin", spin]
    for i in inputs:
        cmd += ["-i", i]
    code, j = run_json(cmd)
    if code != 0:
        sys.exit(f"{' '.join(cmd)}: exit {code}")
    return j["latency_us"]["median"]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default="build-bench")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--only", default="")
    ap.add_argument("--budget-ms", type=int, default=20000)
    ap.add_argument("--pairs", type=int, default=6)
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--out")
    ap.add_argument("--json")
    ap.add_argument("--spin", default="", help="spin policy for calibrate and run (default: the tool's)")
    a = ap.parse_args()
    binary = tool(a.build)
    only = set(filter(None, a.only.split(",")))
    rows, raw = [], []
    for m in compare.read_models():
        name = m["name"]
        if only and name not in only:
            continue
        model = m["file"]
        inputs = model_inputs(name)
        if inputs is None:
            rows.append(f"| {name} | - | no inputs: run bench/models/compare.py --only {name} first | | | | |")
            print(rows[-1], flush=True)
            continue
        for threads in [int(t) for t in a.threads.split(",")]:
            with tempfile.TemporaryDirectory() as tmp:
                empty = os.path.join(tmp, "defaults.cache")
                tuned = os.path.join(tmp, "tuned.cache")
                cmd = [binary, "calibrate", "--model", model, "--threads", str(threads), "--cache", tuned, "--json",
                       "--max-duration-ms", str(a.budget_ms)]
                if a.spin:
                    cmd += ["--spin", a.spin]
                for i in inputs:
                    cmd += ["-i", i]
                code, report = run_json(cmd)
                e = report["end_to_end"]
                changes = [f"{k['kernel']}/{k['implementation']}: " +
                           ", ".join(f"{p} {k['old_values'][p]}->{k['new_values'][p]}" for p in k["changed"])
                           for k in report["keys"] if k["changed"]]
                entry = {"model": name, "threads": threads, "exit": code, "elapsed_ms": report["elapsed_ms"],
                         "changes": changes, "end_to_end": e, "saved": report["saved"]}
                if report["saved"]:
                    ratios = []
                    for p in range(a.pairs):
                        order = [empty, tuned] if p % 2 == 0 else [tuned, empty]
                        t = {c: latency(binary, model, inputs, threads, c, a.runs, a.spin) for c in order}
                        ratios.append(t[tuned] / t[empty])
                    entry["process_ratios"] = ratios
                    # Which process of a pair runs first moves its time by up to +-15% on this VM;
                    # the order alternates, so the geometric mean over all pairs cancels it.
                    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
                    entry["gain"] = 1.0 / geo - 1.0
                    entry["gain_median"] = 1.0 / statistics.median(ratios) - 1.0
                raw.append(entry)
                in_process = (f"x{e['speedup']:.3f} [{e['speedup_low']:.3f}, {e['speedup_high']:.3f}] {e['verdict']}"
                              if e.get("measured") else e["verdict"])
                across = (f"{100 * entry['gain']:+.1f}% (median pair {100 * entry['gain_median']:+.1f}%, pair ratios "
                          f"{min(entry['process_ratios']):.3f}.."
                          f"{max(entry['process_ratios']):.3f})" if "gain" in entry else "0 (nothing saved)")
                rows.append(f"| {name} | {threads} | {'; '.join(changes) or 'none'} | {in_process} | "
                            f"{'yes' if report['saved'] else 'no'} | {across} | {report['elapsed_ms']} |")
                print(rows[-1], flush=True)
    text = ("| model | T | changed | in-process end-to-end (speedup [95%]) | saved | across processes: gain "
            "(calibrated vs defaults) | calibrate ms |\n|---|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n")
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(raw, f, indent=1)


if __name__ == "__main__":
    main()
