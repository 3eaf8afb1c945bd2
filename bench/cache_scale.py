#!/usr/bin/env python3
"""Scale of the read verbs, and of import and merge, on fleet-shaped caches (issue 21, "Scale").

Makes caches of N profiles of one key whose hosts differ only in stepping and thread count (the
shape a fleet's merged cache takes: all of them foreign to this machine), then times each verb
as a whole process, start-up included, and prints a markdown table of medians with the spread
(min-max) and the time per profile, which stays flat when a verb is linear.

The transfer verbs work on two such files of N profiles each, the second shifted by N/2 hosts
(half of its profiles are the first file's, half are new): `merge A B -o OUT` (OUT removed before
each run), `import A B` into an empty cache (removed before each run), with and without --json,
`import B` into a cache holding A (restored before each run), and `diff A B --json`. Their time
per profile is per input profile (2N).

Usage:
  /usr/bin/python3 bench/cache_scale.py build-test/apps/onnx-light-tune/onnx-light-tune \
      [--sizes 10000,20000,40000,100000] [--runs 5] [--work DIR] [--verbs inspect-json,list-json]
  /usr/bin/python3 bench/cache_scale.py TOOL --sizes 40000 \
      --verbs merge,merge-json,import,import-json,import-into,diff-json
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib

THREADS = (1, 2, 4, 8)  # a fleet's usual session sizes


def literal(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(literal(v) for v in value) + "]"
    return json.dumps(value)


def template_profile(tool, work, env):
    """A profile written by the tool itself: this machine's host fields, a registered key."""
    path = os.path.join(work, "template.cache")
    subprocess.run([tool, "--cache", path, "set", "Abs", "parallel.minimum_elements=1000", "--threads", "1",
                    "--no-load"], check=True, stdout=subprocess.DEVNULL, env=env)
    with open(path, "rb") as f:
        return tomllib.load(f)["profile"][0]


def make_cache(template, count, path, first=0):
    """`count` profiles of the template's key; profile i (from `first`) runs at THREADS[i % 4]
    threads on a CPU of stepping 1000 + i // 4 (no real CPU has such a stepping: every profile is
    foreign)."""
    key = [f"{f} = {literal(template[f])}"
           for f in ("library", "kernel", "implementation", "element_type", "device", "tuning_abi")]
    values = [f"{json.dumps(k)} = {literal(v)}" for k, v in template["values"].items()]
    out = ['format = "onnx-light-kernel-tuning"', "format_version = 1"]
    for i in range(first, first + count):
        host = dict(template["host"], stepping=1000 + i // len(THREADS), effective_threads=THREADS[i % len(THREADS)])
        out.append("\n[[profile]]")
        out += key
        out.append("[profile.host]")
        out += [f"{f} = {literal(v)}" for f, v in host.items()]
        out.append("[profile.values]")
        out += values
        out.append('[profile.provenance]\nsource = "calibrate"\nwritten = 2026-12-02T11:39:29Z\ntool_version = "0.1.0"')
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


VERBS = {
    "inspect-json": ["inspect", "--json"],
    "inspect": ["inspect"],
    "list-json": ["list", "--json"],
    "propose-json": ["propose", "--json"],
    "load-json": ["load", "--json"],
    "remove-dry-run": ["remove", "--foreign", "--dry-run", "--json"],
}


# Verbs over two files A and B: (arguments after the tool, OUT's content before each run: None
# for no file, else the file to copy there).
TRANSFER = {
    "merge": lambda a, b, out: (["merge", a, b, "-o", out], None),
    "merge-json": lambda a, b, out: (["merge", a, b, "-o", out, "--json"], None),
    "import": lambda a, b, out: (["--cache", out, "import", a, b], None),
    "import-json": lambda a, b, out: (["--cache", out, "import", a, b, "--json"], None),
    "import-into": lambda a, b, out: (["--cache", out, "import", b], a),  # B into a cache holding A
    "diff-json": lambda a, b, out: (["diff", a, b, "--json"], None),
}


def time_run(command, env, fresh=None, start_from=None):
    if fresh and os.path.exists(fresh):
        os.remove(fresh)
    if fresh and start_from:
        shutil.copyfile(start_from, fresh)
    start = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({done.returncode}): {done.stderr.decode()[-500:]}")
    return elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tool")
    parser.add_argument("--sizes", default="10000,20000,40000,100000")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--work", default=None, help="directory for the caches (default: a temporary one)")
    parser.add_argument("--verbs", default="inspect-json,inspect,list-json,propose-json,load-json,remove-dry-run")
    parser.add_argument("--as-host", default=None, help="also pass --as-host FILE to the verbs that take it")
    args = parser.parse_args()
    tool = os.path.realpath(args.tool)
    work = args.work or tempfile.mkdtemp(prefix="onnx-light-cache-scale.")
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ, ONNX_LIGHT_SYSTEM_TUNING_CACHE="")  # the user cache alone
    template = template_profile(tool, work, env)
    sizes = [int(s) for s in args.sizes.split(",")]
    verbs = args.verbs.split(",")
    print(f"tool {tool}; {args.runs} runs per cell; median [min-max] seconds, then microseconds per profile")
    print()
    print("| verb | " + " | ".join(f"{n:,} profiles" for n in sizes) + " |")
    print("|:---|" + "---:|" * len(sizes))
    caches = {}
    shifted = {}
    for n in sizes:
        caches[n] = os.path.join(work, f"scale-{n}.cache")
        if not os.path.exists(caches[n]):
            make_cache(template, n, caches[n])
        if any(v in TRANSFER for v in verbs):
            shifted[n] = os.path.join(work, f"scale-{n}-shifted.cache")
            if not os.path.exists(shifted[n]):
                make_cache(template, n, shifted[n], first=n // 2)
    for verb in verbs:
        cells = []
        if verb in TRANSFER:
            for n in sizes:
                out = os.path.join(work, f"out-{n}.cache")
                arguments, start_from = TRANSFER[verb](caches[n], shifted[n], out)
                times = sorted(time_run([tool] + arguments, env, out, start_from) for _ in range(args.runs))
                median = statistics.median(times)
                cells.append(f"{median:.3f} [{times[0]:.3f}-{times[-1]:.3f}] ({median / (2 * n) * 1e6:.1f} us)")
                print(f"  {verb} {n}: {cells[-1]}", file=sys.stderr, flush=True)
            print(f"| `{' '.join(TRANSFER[verb]('A', 'B', 'OUT')[0])}` | " + " | ".join(cells) + " |", flush=True)
            continue
        for n in sizes:
            command = [tool, "--cache", caches[n]] + VERBS[verb]
            if args.as_host and verb.split("-")[0] in ("inspect", "list", "propose", "load"):
                command += ["--as-host", args.as_host]
            times = sorted(time_run(command, env) for _ in range(args.runs))
            median = statistics.median(times)
            cells.append(f"{median:.3f} [{times[0]:.3f}-{times[-1]:.3f}] ({median / n * 1e6:.1f} us)")
            print(f"  {verb} {n}: {cells[-1]}", file=sys.stderr, flush=True)
        print(f"| `{' '.join(VERBS[verb])}` | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
