#!/usr/bin/python3
"""A model's first run in a fresh process, onnx-light vs ONNX Runtime 1.30, per real model of models.tsv.

    /usr/bin/python3 bench/models/first_run.py [--procs 5] [--threads 1,2] [--only a,b] [--build build]
                                               [--out report.md]

What a CLI user or a notebook that runs a model once waits for. For each model and thread count,
--procs fresh processes per side, alternating sides:
  ours: `onnx-light-tune run MODEL -r 1 --json` (latency_us of the one run: the first), and
        `onnx-light-tune run MODEL -w 5 -r 20 --json` (median: the steady run);
  ORT:  first_run_ort.js (onnxruntime-node): session creation, first run, median of the next 20.
Inputs are compare.py's (xorshift32, saved in the work dir). Reported per side: the median over the
processes of the first run, of the steady run, and of first - steady (the first run's extra cost,
where Node's per-run overhead on ORT's side cancels), with (min-max).
"""
import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402  (models.tsv, inputs, cache and peer locations)


def ours_run(cli, model, work, threads, extra):
    cmd = [cli, "run", model["file"], "--threads", str(threads), "--json"] + extra
    for j, io in enumerate(model["inputs"]):
        cmd += ["--input", f"{io['name']}={os.path.join(work, f'in{j}.npy')}"]
    r = compare.run(cmd)
    if r.returncode != 0:
        raise RuntimeError(compare.last_line(r.stderr) or f"exit {r.returncode}")
    return json.loads(r.stdout)["latency_us"]["median"] / 1000.0


def ort_run(model, work, threads):
    path = compare.write_ort_spec(model, work, "first_run_spec.json", threads=threads, steady_runs=20)
    r = compare.run(["node", os.path.join(HERE, "first_run_ort.js"), path])
    if r.returncode != 0:
        raise RuntimeError(compare.last_line(r.stderr) or f"exit {r.returncode}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def summary(values):
    return f"{statistics.median(values):.3g} ({min(values):.3g} to {max(values):.3g})"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--procs", type=int, default=5)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--only", default="")
    ap.add_argument("--build", default=os.path.join(compare.ROOT, "build"))
    ap.add_argument("--work", default=os.path.join(compare.cache_dir(), "compare"))
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    cli = os.path.join(os.path.abspath(args.build), "apps", "onnx-light-tune", "onnx-light-tune")
    if not os.access(cli, os.X_OK):
        sys.exit(f"first_run.py: {cli} missing (build onnx-light-tune)")
    models = compare.fetched_models(args.only)
    lines = ["| model | T | ours first ms | ours steady ms | ours first - steady | ORT create ms | ORT first ms "
             "| ORT steady ms (Node) | ORT first - steady |", "|" + "---|" * 9]
    for m in models:
        work = os.path.join(args.work, m["name"])
        os.makedirs(work, exist_ok=True)
        compare.make_inputs(m, work)
        for threads in (int(t) for t in args.threads.split(",")):
            ours = {"first": [], "steady": []}
            ort = {"create": [], "first": [], "steady": []}
            error = ""
            for p in range(args.procs):
                print(f"{m['name']} T={threads} process {p + 1}/{args.procs}", file=sys.stderr)
                try:
                    for side in (("ours", "ort") if p % 2 == 0 else ("ort", "ours")):
                        if side == "ours":
                            ours["first"].append(ours_run(cli, m, work, threads, ["--repeat", "1"]))
                            ours["steady"].append(ours_run(cli, m, work, threads, ["--warmup", "5", "--repeat", "20"]))
                        else:
                            o = ort_run(m, work, threads)
                            for key in ort:
                                ort[key].append(o[f"{key}_ms"])
                except (RuntimeError, json.JSONDecodeError, KeyError) as e:
                    error = str(e)
                    break
            if error:
                lines.append(f"| {m['name']} | {threads} | error: {error} |" + " |" * 7)
                continue
            ours_extra = [f - s for f, s in zip(ours["first"], ours["steady"])]
            ort_extra = [f - s for f, s in zip(ort["first"], ort["steady"])]
            lines.append(f"| {m['name']} | {threads} | {summary(ours['first'])} | {summary(ours['steady'])} | "
                         f"{summary(ours_extra)} | {summary(ort['create'])} | {summary(ort['first'])} | "
                         f"{summary(ort['steady'])} | {summary(ort_extra)} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
