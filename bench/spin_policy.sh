#!/usr/bin/env bash
# Repeats bench/spin_policy_bench across processes, policies interleaved so that the VM's noise
# falls on all of them alike, and prints the markdown table of bench/RESULTS.md (2026-12-06):
# per policy and gap, the median over processes of each process's figure, and its min-max.
#
#   bench/spin_policy.sh BUILD/bench/spin_policy_bench [PROCESSES=7] [extra bench flags...]
set -euo pipefail
BENCH="$1"
PROCESSES="${2:-7}"
shift $(($# >= 2 ? 2 : 1))
TSV=$(mktemp)
trap 'rm -f "$TSV"' EXIT
for ((p = 0; p < PROCESSES; p++)); do
  for spin in none short long; do
    "$BENCH" --spin "$spin" "$@" >>"$TSV"
  done
done
/usr/bin/python3 - "$TSV" <<'PYEOF'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split("\t")
    key = (f[0], int(f[1]), int(f[3]))
    rows.setdefault(key, []).append([float(x) for x in f[4:]])
order = {"none": 0, "short": 1, "long": 2}
def cell(values, digits=1):
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"
print("| spin | gap asked (slept) us | run us, median | run us, p90 | process CPU us per cycle | pool workers' CPU us per cycle | workers' CPU / cycle wall |")
print("|:---|---:|---:|---:|---:|---:|---:|")
for key in sorted(rows, key=lambda k: (k[2], order.get(k[0], 9))):
    spin, us, gap = key
    r = rows[key]
    col = lambda i: [x[i] for x in r]
    # columns after gap_us: gap_wall, runs, run_med, run_p90, cycle_us, cpu_us, worker_us
    share = [x[6] / x[4] * 100 for x in r]
    print(f"| {spin} ({us} us) | {gap} ({statistics.median(col(0)):.0f}) | {cell(col(2))} | {cell(col(3))} | "
          f"{cell(col(5))} | {cell(col(6))} | {statistics.median(share):.0f}% |")
print(f"\n{len(next(iter(rows.values())))} processes per policy")
PYEOF
