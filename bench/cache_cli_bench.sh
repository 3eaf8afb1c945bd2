#!/usr/bin/env bash
# CLI-level timing of the tuning cache (issue 3), process start-up included:
#   inspect --json of a 10,000-profile cache (goal < 100 ms)
#   set into a 1,000-profile cache            (goal < 30 ms plus the fsyncs)
# Usage: bench/cache_cli_bench.sh path/to/onnx-light-tune [work dir on a real disk; default /var/tmp/...]
# Needs hyperfine (Debian: apt-get install hyperfine) and python3. Prints markdown tables.
set -euo pipefail
TOOL=$(realpath "$1")
WORK=$(realpath -m "${2:-$(mktemp -d /var/tmp/onnx-light-cache-bench.XXXXXX)}")
rm -rf "$WORK" && mkdir -p "$WORK"
export ONNX_LIGHT_SYSTEM_TUNING_CACHE=""  # no system layer: time the user cache alone

# A template profile written by the tool itself gives this machine's host fields.
"$TOOL" --cache "$WORK/template.cache" set Abs parallel.minimum_elements=1000 --threads 1 --no-load >/dev/null
"$TOOL" list --json --implementation all >"$WORK/keys.json"

make_cache() {  # make_cache COUNT FILE: COUNT profiles over every key, 1 in 5 for another machine
  python3 - "$WORK/template.cache" "$WORK/keys.json" "$1" >"$2" <<'PYEOF'
import json, sys, tomllib
template = tomllib.load(open(sys.argv[1], "rb"))["profile"][0]
keys = json.load(open(sys.argv[2]))["kernels"]
count = int(sys.argv[3])
def lit(v):
    if isinstance(v, bool): return "true" if v else "false"
    if isinstance(v, (int, float)): return repr(v)
    if isinstance(v, list): return "[" + ", ".join(lit(x) for x in v) + "]"
    return json.dumps(v)
out = ['format = "onnx-light-kernel-tuning"', "format_version = 1"]
n, threads = 0, 1
while n < count:
    for k in keys:
        if n == count: break
        host = dict(template["host"], effective_threads=threads)
        if n % 5 == 4: host["vendor"] = "other-vendor"
        out.append("\n[[profile]]")
        for f in ("library", "kernel", "implementation", "element_type", "device", "tuning_abi"):
            out.append(f"{f} = {lit(k[f])}")
        out.append("[profile.host]")
        out += [f"{f} = {lit(v)}" for f, v in host.items()]
        out.append("[profile.values]")
        out += [f"{json.dumps(name)} = {lit(v)}" for name, v in k["defaults"].items()]
        out.append('[profile.provenance]\nsource = "calibrate"\nwritten = 2026-12-02T11:39:29Z\ntool_version = "0.1.0"')
        n += 1
    threads += 1
print("\n".join(out))
PYEOF
}
make_cache 10000 "$WORK/10k.cache"
make_cache 1000 "$WORK/1k.cache"
: >"$WORK/empty.cache"
echo "10k cache: $(stat -c %s "$WORK/10k.cache") bytes; 1k cache: $(stat -c %s "$WORK/1k.cache") bytes"
"$TOOL" --cache "$WORK/10k.cache" inspect --json | python3 -c "
import json, sys; r = json.load(sys.stdin); assert r['status'] == 'loaded' and len(r['profiles']) == 10000, r['status']"

hyperfine -N --warmup 3 --runs 20 --export-markdown "$WORK/inspect.md" \
  -n "inspect --json, empty cache (start-up floor)" "$TOOL --cache $WORK/empty.cache inspect --json" \
  -n "inspect --json, 10,000 profiles" "$TOOL --cache $WORK/10k.cache inspect --json"
hyperfine -N --warmup 3 --runs 30 --export-markdown "$WORK/set.md" \
  -n "set --no-load, 1,000 profiles" "$TOOL --cache $WORK/1k.cache set Abs parallel.minimum_elements=1234 --threads 1 --no-load" \
  -n "set (load), 1,000 profiles" "$TOOL --cache $WORK/1k.cache set Abs parallel.minimum_elements=1234 --threads 1"
cat "$WORK/inspect.md" "$WORK/set.md"
df -T "$WORK" | tail -1 | awk '{print "filesystem of the work dir: " $2}'
