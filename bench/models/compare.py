#!/usr/bin/python3
"""Real published models, onnx-light vs ONNX Runtime 1.30 (C API), side by side (issue 14 §4).

    /usr/bin/python3 bench/models/compare.py [--reps 5] [--min-time 0.3] [--threads 1,2] [--only a,b]
                                             [--build build] [--out report.md] [--json raw.json]

Per model of models.tsv (fetched by fetch.sh into the cache):
  1. inputs: float32 input j filled with xorshift32 from seed 12345 + 77*j in [-1, 1) (the rule of
     /work/shared/peer's ort_c_bench and of bench/peer_bench.cc), saved as .npy/.bin in the work dir;
  2. ORT reference outputs and ORT's profile by op type (ort_ref.js through onnxruntime-node, T=1);
  3. our outputs through the Python binding (InferenceSession.run(None, feeds), T=1), in a child process, and
     the max |ours - ORT| / max |ORT| per output; a model we cannot load or run is reported with the error;
  4. our profile by op type from `onnx-light-tune run --profile --json` (profile.op_types, "n/a" when
     the CLI does not report it);
  5. latency: for each repetition, model and thread count, one process of onnx-light-peer-bench (ours)
     and one of ort_c_bench (ORT), alternating which goes first, each `--modes prealloc` (outputs bound
     once to caller buffers) timing every run for at least --min-time seconds and 10 runs, median kept.
     Reported: median over repetitions of each side's median, the per-repetition ratio ours/ORT reduced
     to its median, and the spread (max - min) / median of each side.

Both harnesses read a manifest.tsv in the work dir (models are symlinked there); io entries are
NAME:float32:SHAPE, which both split at the last two ':' (exported names such as onnx::Flatten_0 hold
':'); bench/peer_bench.cc binds inputs by position. Models whose inputs are not all float32 (ort_c_bench
handles float32 only) get outputs and profiles but no latency.
Prints a markdown report (also to --out) and writes the raw figures to --json.
"""
import argparse
import datetime
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def cache_dir():
    return os.environ.get("ONNX_LIGHT_MODELS") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "onnx-light-models")


def peer_work():
    return os.environ.get("PEER_WORK") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "onnx-light-peer")


def read_models():
    models = []
    with open(os.path.join(HERE, "models.tsv")) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            name, package, path, sha, inputs, kind = line.split("\t")
            ios = []
            for entry in inputs.split(";"):
                # NAME:DTYPE:DIMS or NAME:DTYPE=VALUE; names may hold colons ("onnx::Flatten_0")
                m = re.fullmatch(r"(.+):(\w+)=(-?\d+)", entry)
                if m:
                    ios.append({"name": m.group(1), "dtype": m.group(2), "shape": [], "value": int(m.group(3))})
                    continue
                nm, dtype, dims = entry.rsplit(":", 2)
                ios.append({"name": nm, "dtype": dtype, "shape": [int(d) for d in dims.split("x")]})
            models.append({"name": name, "package": package, "path": path, "sha256": sha, "inputs": ios,
                           "kind": kind, "file": os.path.join(cache_dir(), name + ".onnx")})
    return models


def xorshift_inputs(n, seed):
    """ort_c_bench's inputs: xorshift32 from `seed`, s / 2^32 * 2 - 1 in double, then float32."""
    import numpy as np
    out = [0] * n
    s, m = seed, 0xFFFFFFFF
    for i in range(n):
        s ^= (s << 13) & m
        s ^= s >> 17
        s ^= (s << 5) & m
        out[i] = s
    return (np.asarray(out, dtype=np.float64) / 4294967296.0 * 2 - 1).astype(np.float32)


def make_inputs(model, work):
    import numpy as np
    arrays = []
    for j, io in enumerate(model["inputs"]):
        if "value" in io:
            arrays.append(np.array(io["value"], dtype=io["dtype"]))
            continue
        n = math.prod(io["shape"])
        arrays.append(xorshift_inputs(n, 12345 + 77 * j).reshape(io["shape"]))
    for j, a in enumerate(arrays):
        np.save(os.path.join(work, f"in{j}.npy"), a)
        a.tofile(os.path.join(work, f"in{j}.bin"))
    return arrays


def run(cmd, timeout=600, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)


def last_line(text):
    """An error text in one line: a traceback's last line; the first line plus the distinct reasons
    of an "N nodes cannot run:" list (node names dropped, counts kept)."""
    lines = [l.strip() for l in text.strip().splitlines() if l.strip()]
    if not lines:
        return ""
    head = [i for i, l in enumerate(lines) if "cannot run" in l]
    if not head:
        return lines[-1][:300]
    first = lines[head[0]]
    reasons = {}
    for l in lines[head[0] + 1:]:
        if l.startswith("- "):
            key = re.sub(r"node '[^']*'", "node", l[2:])
            reasons[key] = reasons.get(key, 0) + 1
    first = re.sub(r"^.*?(\d+ nodes? cannot run)", r"\1", first)
    return first + " " + "; ".join(f"{k} (x{n})" if n > 1 else k for k, n in reasons.items())


# --- ours: outputs through the Python binding, in a child process ----------------------------------------

def ours_outputs_worker(model_file, work, n_inputs, threads):
    """Child process: InferenceSession.run(None, feeds) (ONNX Runtime's call) on the saved inputs;
    outputs saved as ours{k}.npy."""
    import numpy as np
    import onnx_light
    inputs = [np.load(os.path.join(work, f"in{j}.npy")) for j in range(n_inputs)]
    session = onnx_light.InferenceSession(model_file, threads=threads)
    feeds = {info.name: inputs[j] for j, info in enumerate(session.get_inputs())}
    outs = session.run(None, feeds)
    for k, o in enumerate(outs):
        np.save(os.path.join(work, f"ours{k}.npy"), np.array(o))
    print(json.dumps({"outputs": [list(np.shape(o)) for o in outs]}))


def ours_outputs(model, work, args):
    env = dict(os.environ, PYTHONPATH=os.path.join(args.build, "python"))
    r = run([sys.executable, os.path.abspath(__file__), "--_ours-worker", model["file"], work,
             str(len(model["inputs"])), "1"], env=env)
    if r.returncode != 0:
        return {"error": last_line(r.stderr) or f"exit {r.returncode}"}
    return json.loads(r.stdout.strip().splitlines()[-1])


def ours_profile(model, work, args):
    cli = os.path.join(args.build, "apps", "onnx-light-tune", "onnx-light-tune")
    cmd = [cli, "run", model["file"], "--threads", "1", "--warmup", "5", "--repeat", str(args.profile_runs),
           "--profile", "--json"]
    for j, io in enumerate(model["inputs"]):
        cmd += ["--input", f"{io['name']}={os.path.join(work, f'in{j}.npy')}"]
    r = run(cmd)
    if r.returncode != 0:
        return {"error": last_line(r.stderr) or f"exit {r.returncode}"}
    try:
        report = json.loads(r.stdout)
    except json.JSONDecodeError as e:
        return {"error": f"run --json output is not JSON: {e}"}
    out = {"latency_us": report.get("latency_us")}
    prof = report.get("profile") if isinstance(report.get("profile"), dict) else None
    if not prof or "op_types" not in prof:
        out["op_types"] = None  # the CLI of this build has no per-op-type profile
        return out
    runs = prof.get("runs") or args.profile_runs + 5
    ops = {}
    for entry in prof["op_types"]:
        op = entry.get("op_type") or entry.get("op") or "?"
        total = entry.get("total_us", 0.0)
        ops[op] = {"us": total / runs, "nodes": entry.get("nodes"), "share": entry.get("share")}
    out["op_types"] = ops
    out["profile_runs"] = runs
    return out


# --- ORT: reference outputs and profile through onnxruntime-node --------------------------------------------

def write_ort_spec(model, work, name, **fields):
    """The JSON spec the Node scripts read (ort_ref.js): model, inputs (the saved .bin files or a
    scalar's value) and `fields`, written to work/name; returns its path."""
    spec = dict(model=model["file"], inputs=[], **fields)
    for j, io in enumerate(model["inputs"]):
        entry = {"name": io["name"], "dtype": io["dtype"], "shape": io["shape"]}
        if "value" in io:
            entry["value"] = io["value"]
        else:
            entry["file"] = os.path.join(work, f"in{j}.bin")
        spec["inputs"].append(entry)
    path = os.path.join(work, name)
    with open(path, "w") as f:
        json.dump(spec, f)
    return path


def fetched_models(only):
    """models.tsv's models (those named in the comma-separated `only`, when given), fetched into
    the cache; exits with fetch.sh's output when it fails."""
    models = read_models()
    if only:
        keep = set(only.split(","))
        models = [m for m in models if m["name"] in keep]
    r = run(["bash", os.path.join(HERE, "fetch.sh")] + [m["name"] for m in models])
    if r.returncode != 0:
        sys.exit(r.stdout + r.stderr)
    return models


def ort_reference(model, work, args):
    spec = write_ort_spec(model, work, "ort_spec.json", threads=1, profile_runs=args.profile_runs)
    out = os.path.join(work, "ort")
    shutil.rmtree(out, ignore_errors=True)
    r = run(["node", os.path.join(HERE, "ort_ref.js"), spec, out])
    if r.returncode != 0:
        return {"error": last_line(r.stderr) or f"exit {r.returncode}"}
    with open(os.path.join(out, "outputs.json")) as f:
        outputs = json.load(f)
    with open(os.path.join(out, "profile.json")) as f:
        profile = json.load(f)
    return {"outputs": outputs, "profile": profile}


def max_rel_diff(work, ort_outputs):
    import numpy as np
    worst = 0.0
    for k, o in enumerate(ort_outputs):
        ref = np.fromfile(o["file"], dtype=np.float32).reshape(o["dims"])
        ours = np.load(os.path.join(work, f"ours{k}.npy"))
        if ours.shape != ref.shape:
            return None, f"output {k} '{o['name']}': ours {list(ours.shape)}, ORT {list(ref.shape)}"
        scale = float(np.max(np.abs(ref))) if ref.size else 0.0
        diff = float(np.max(np.abs(ours.astype(np.float64) - ref))) if ref.size else 0.0
        worst = max(worst, diff / scale if scale > 0 else diff)
    return worst, None


# --- latency ---------------------------------------------------------------------------------------------

def write_manifests(bench_models, dirs):
    """One manifest.tsv per harness; models symlinked beside it (both resolve files relative to it)."""
    for harness, d in dirs.items():
        os.makedirs(d, exist_ok=True)
        lines = ["# generated by bench/models/compare.py\n"]
        for m in bench_models:
            link = os.path.join(d, m["name"] + ".onnx")
            if os.path.lexists(link):
                os.remove(link)
            os.symlink(m["file"], link)

            def ios(entries):
                return ";".join(e["name"] + ":float32:" + "x".join(str(d) for d in e["shape"]) for e in entries)
            lines.append("\t".join([m["name"], m["name"] + ".onnx", "model", "0", "0", "0",
                                    ios(m["inputs"]), ios(m["out_ios"])]) + "\n")
        with open(os.path.join(d, "manifest.tsv"), "w") as f:
            f.writelines(lines)


def time_one(cmd):
    r = run(cmd)
    if r.returncode != 0:
        return None, last_line(r.stderr) or f"exit {r.returncode}"
    rows = [l.split("\t") for l in r.stdout.strip().splitlines()]
    if len(rows) < 2:
        return None, last_line(r.stderr) or "no result line"
    head = rows[0]
    row = dict(zip(head, rows[1]))
    return {"median_us": float(row["median_us"]), "p10_us": float(row["p10_us"]), "p90_us": float(row["p90_us"]),
            "iters": int(row["iters"])}, None


def env_info(args):
    info = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    try:
        info["commit"] = run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"]).stdout.strip()
        dirty = run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"]).stdout.strip()
        if dirty:
            info["commit"] += " (modified tree)"
    except Exception:  # noqa: BLE001 - informational only
        info["commit"] = "?"
    lscpu = run(["lscpu"]).stdout
    for key in ("Model name", "CPU(s)", "Thread(s) per core", "L2 cache", "L3 cache", "Flags"):
        m = re.search(rf"^\s*{re.escape(key)}:\s*(.*)$", lscpu, re.M)
        if m:
            if key == "Flags":
                info["avx"] = " ".join(f for f in m.group(1).split() if f in (
                    "avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16"))
            else:
                info[key] = m.group(1).strip()
    info["loadavg_start"] = open("/proc/loadavg").read().split()[:3]
    info["host"] = platform.node()
    return info


# --- report ----------------------------------------------------------------------------------------------

def fmt_us(us):
    if us is None:
        return "–"
    return f"{us / 1000:.2f} ms" if us >= 1000 else f"{us:.1f} us"


def fmt_profile(ops, limit=8):
    if ops is None:
        return "n/a"
    items = sorted(ops.items(), key=lambda kv: -kv[1]["us"])
    shown = [f"{op} {fmt_us(v['us'])}" + (f" ({v['share'] * 100:.0f}%)" if v.get("share") is not None else "")
             for op, v in items[:limit]]
    rest = sum(v["us"] for _, v in items[limit:])
    if rest > 0:
        shown.append(f"other {fmt_us(rest)}")
    return ", ".join(shown)


def report(results, info, args):
    out = []
    w = out.append
    w(f"Measured {info['date']}, commit {info.get('commit')}, {info.get('Model name', '?')}, "
      f"{info.get('CPU(s)', '?')} vCPU ({info.get('Thread(s) per core', '?')} thread(s) per core), "
      + (f"L2 {info['L2 cache']}, L3 {info.get('L3 cache', '?')}, " if "L2 cache" in info else "") +
      f"{info.get('avx', '')}; "
      f"load average at start {' '.join(info['loadavg_start'])}, at end {' '.join(info.get('loadavg_end', []))}. "
      f"{args.reps} repetitions x {args.min_time} s per (model, threads, runtime), alternating; "
      f"wall time {info.get('wall_s', 0):.0f} s.")
    w("")
    ths = args.threads
    w("| model | inputs | ours " + " / ".join(f"T={t}" for t in ths) + " | ORT " + " / ".join(f"T={t}" for t in ths) +
      " | ratio ours/ORT " + " / ".join(f"T={t}" for t in ths) + " | spread ours / ORT (max over T) | max rel diff |")
    w("|---|---|---|---|---|---|---|")
    ratios = {t: [] for t in ths}
    for r in results:
        shape = "; ".join(f"{io['name']} {'x'.join(map(str, io['shape'])) or io.get('value')}" for io in r["inputs"])
        if r.get("error"):
            w(f"| {r['name']} | {shape} | does not run | " +
              (" / ".join(fmt_us(r['ort'][t]['median_us']) if r['ort'].get(t) else "–" for t in ths)
               if r.get("ort") else "runs (not timed)" if r.get("ort_runs") else "–") +
              " | – | – | – |")
            continue
        if not r.get("timed"):
            w(f"| {r['name']} | {shape} | not timed: {r.get('why_untimed')} | | | | "
              f"{r.get('rel_diff_text', '–')} |")
            continue
        cells_o = " / ".join(fmt_us(r["ours"][t]["median_us"]) if r["ours"].get(t) else "–" for t in ths)
        cells_r = " / ".join(fmt_us(r["ort"][t]["median_us"]) if r["ort"].get(t) else "–" for t in ths)
        rat = []
        for t in ths:
            if r["ratio"].get(t):
                ratios[t].append(r["ratio"][t]["median"])
                rat.append(f"{r['ratio'][t]['median']:.2f} ({r['ratio'][t]['min']:.2f}–{r['ratio'][t]['max']:.2f})")
            else:
                rat.append("–")
        sp_o = max((r["ours"][t]["spread"] for t in ths if r["ours"].get(t)), default=0)
        sp_r = max((r["ort"][t]["spread"] for t in ths if r["ort"].get(t)), default=0)
        w(f"| {r['name']} | {shape} | {cells_o} | {cells_r} | {' / '.join(rat)} | "
          f"{sp_o * 100:.0f}% / {sp_r * 100:.0f}% | {r.get('rel_diff_text', '–')} |")
    geo = []
    for t in ths:
        if ratios[t]:
            geo.append(f"T={t}: {math.exp(sum(map(math.log, ratios[t])) / len(ratios[t])):.2f}x over "
                       f"{len(ratios[t])} models")
    w("")
    w("Geometric mean of the ratios (models that run on both): " + ("; ".join(geo) if geo else "n/a") + ".")
    w("")
    w("Ratios: per repetition ours/ORT, median (min–max) over the repetitions; below 1 means we are faster. "
      "Spread: (max − min) / median of one side's per-repetition medians.")
    w("")
    w("Per-op-type profile, T=1 (time per run by op type and its share of the node time; ORT: its profiler, "
      "median over the profiled runs, after graph optimization, so fused nodes carry ORT's names and profiling "
      "inflates small nodes; ours: `run --profile --json` profile.op_types, n/a when the CLI lacks it):")
    w("")
    w("| model | ours | ORT |")
    w("|---|---|---|")
    for r in results:
        ours_p = r.get("ours_profile") or {}
        ours_cell = ("error: " + ours_p["error"]) if ours_p.get("error") else fmt_profile(ours_p.get("op_types"))
        ort_p = (r.get("ort_ref") or {}).get("profile")
        ort_cell = fmt_profile(ort_p["op_types"]) if ort_p else "–"
        w(f"| {r['name']} | {ours_cell} | {ort_cell} |")
    w("")
    w("Operators of each model (ONNX graph, before any optimization), and errors:")
    w("")
    for r in results:
        w(f"- {r['name']} ({r['package']}, {r['kind']}): {r['nodes']} nodes: {r['ops']}." +
          (f" **Ours: {r['error']}**" if r.get("error") else "") +
          (f" ORT: {r['ort_error']}" if r.get("ort_error") else ""))
    return "\n".join(out) + "\n"


def op_summary(path):
    import collections
    import onnx
    m = onnx.load(path, load_external_data=False)
    c = collections.Counter(n.op_type for n in m.graph.node)
    opsets = ", ".join(f"{o.domain or 'ai.onnx'} {o.version}" for o in m.opset_import if o.domain in ("", "ai.onnx"))
    return len(m.graph.node), f"opset {opsets}; " + ", ".join(f"{op} {n}" for op, n in c.most_common())


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--_ours-worker":
        ours_outputs_worker(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=0.3)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--only", default="")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--work", default=os.path.join(cache_dir(), "compare"))
    ap.add_argument("--profile-runs", type=int, default=20)
    ap.add_argument("--out", default="")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    args.threads = [int(t) for t in args.threads.split(",")]
    args.build = os.path.abspath(args.build)
    t_start = time.time()

    models = fetched_models(args.only)
    ours_bench = os.path.join(args.build, "bench", "onnx-light-peer-bench")
    ort_bench = os.path.join(peer_work(), "bin", "ort_c_bench")
    for tool, hint in ((ours_bench, "configure with -DONNX_LIGHT_BUILD_BENCH=ON and build onnx-light-peer-bench"),
                       (ort_bench, "run bash /work/shared/peer/setup.sh")):
        if not os.path.exists(tool):
            sys.exit(f"compare.py: {tool} missing ({hint})")
    info = env_info(args)

    results = []
    for m in models:
        res = {k: m[k] for k in ("name", "package", "kind", "inputs")}
        res["nodes"], res["ops"] = op_summary(m["file"])
        work = os.path.join(args.work, m["name"])
        os.makedirs(work, exist_ok=True)
        make_inputs(m, work)
        ref = ort_reference(m, work, args)
        if ref.get("error"):
            res["ort_error"] = ref["error"]
        else:
            res["ort_ref"] = ref
            res["ort_runs"] = True
        ours = ours_outputs(m, work, args)
        if ours.get("error"):
            res["error"] = ours["error"]
        elif ref.get("outputs"):
            diff, why = max_rel_diff(work, ref["outputs"])
            res["rel_diff"] = diff
            res["rel_diff_text"] = f"{diff:.1e}" if diff is not None else why
        res["ours_profile"] = ours_profile(m, work, args) if not ours.get("error") else None
        m["out_ios"] = [{"name": o["name"], "shape": o["dims"]} for o in ref.get("outputs", [])]
        all_float = all(io["dtype"] == "float32" and "value" not in io for io in m["inputs"])
        # ORT alone is still timed when we cannot run the model: the figure to beat
        m["sides"] = [side for side, ok in (("ours", not ours.get("error")), ("ort", not ref.get("error")))
                      if ok and all_float]
        res["timed"] = m["sides"] == ["ours", "ort"]
        if not all_float:
            res["why_untimed"] = "non-float32 input (ort_c_bench reads float32 only)"
        res["ours"], res["ort"], res["ratio"], res["samples"] = {}, {}, {}, []
        m["res"] = res
        results.append(res)
        sys.stderr.write(f"{m['name']}: ours {'error: ' + res['error'] if res.get('error') else 'ok'}, "
                         f"diff {res.get('rel_diff_text', '-')}\n")

    timed = [m for m in models if m["sides"]]
    dirs = {"ours": os.path.join(args.work, "manifest-ours"), "ort": os.path.join(args.work, "manifest-ort")}
    for side, d in dirs.items():
        write_manifests([m for m in timed if side in m["sides"]], {side: d})
    samples = {}  # (model, T, side) -> [median_us per rep]
    for rep in range(args.reps):
        for m in timed:
            for t in args.threads:
                order = ["ours", "ort"] if (rep + t) % 2 == 0 else ["ort", "ours"]
                for side in (x for x in order if x in m["sides"]):
                    tool = ours_bench if side == "ours" else ort_bench
                    cmd = [tool, "--models", dirs[side], "--only", m["name"], "--threads", str(t),
                           "--modes", "prealloc", "--min-time", str(args.min_time)]
                    got, err = time_one(cmd)
                    if err:
                        m["res"].setdefault("timing_errors", []).append(f"{side} T={t}: {err}")
                        continue
                    samples.setdefault((m["name"], t, side), []).append(got["median_us"])
                    m["res"]["samples"].append({"rep": rep, "threads": t, "side": side, **got})
        sys.stderr.write(f"repetition {rep + 1}/{args.reps} done ({time.time() - t_start:.0f} s)\n")
    for m in timed:
        res = m["res"]
        for t in args.threads:
            for side in ("ours", "ort"):
                v = samples.get((m["name"], t, side))
                if v:
                    med = statistics.median(v)
                    res[side][t] = {"median_us": med, "spread": (max(v) - min(v)) / med, "reps": v}
            a, b = samples.get((m["name"], t, "ours")), samples.get((m["name"], t, "ort"))
            if a and b and len(a) == len(b):
                rr = [x / y for x, y in zip(a, b)]
                res["ratio"][t] = {"median": statistics.median(rr), "min": min(rr), "max": max(rr)}
    info["loadavg_end"] = open("/proc/loadavg").read().split()[:3]
    info["wall_s"] = time.time() - t_start
    text = report(results, info, args)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    if args.json:
        for r in results:
            for side in ("ours", "ort", "ratio"):
                r[side] = {str(k): v for k, v in r[side].items()}
        with open(args.json, "w") as f:
            json.dump({"env": info, "args": vars(args), "results": results}, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
