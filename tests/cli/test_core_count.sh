#!/usr/bin/env bash
# The default thread count is one per physical core this process may use, counted from the
# kernel's topology (lscpu reads the same sysfs files independently), not from cpuinfo alone,
# which counts the CPUs of a processor it does not know (AMD family 26) as one core.
set -euo pipefail
TOOL="$1"
command -v lscpu >/dev/null || { echo "FAIL: lscpu (util-linux) is required" >&2; exit 1; }
command -v taskset >/dev/null || { echo "FAIL: taskset (util-linux) is required" >&2; exit 1; }
expected=$(lscpu -p=CORE,SOCKET | grep -v '^#' | sort -u | wc -l)
line=$("$TOOL" --version | grep '^host cores:')
echo "$line (lscpu: $expected physical)"
[[ "$line" =~ ^host\ cores:\ ([0-9]+)\ physical ]] || { echo "FAIL: no core count in: $line" >&2; exit 1; }
[[ "${BASH_REMATCH[1]}" == "$expected" ]] || { echo "FAIL: $TOOL says ${BASH_REMATCH[1]} physical cores, lscpu $expected" >&2; exit 1; }
# Sessions default to the cores of the process's affinity mask.
allowed=$(taskset -pc $$ | sed 's/.*: //')
first_cpu=$(echo "$allowed" | sed 's/[-,].*//')
pinned=$(taskset -c "$first_cpu" "$TOOL" --version | grep '^host cores:')
[[ "$pinned" == *"sessions default to 1 thread"* ]] || { echo "FAIL: pinned to CPU $first_cpu: $pinned" >&2; exit 1; }
[[ "$pinned" =~ ^host\ cores:\ ${expected}\ physical ]] || { echo "FAIL: the machine's cores change with affinity: $pinned" >&2; exit 1; }
unpinned_threads=$(lscpu -p=CPU,CORE,SOCKET | grep -v '^#' | awk -F, -v allowed="$allowed" '
  BEGIN { n = split(allowed, parts, ","); for (i = 1; i <= n; i++) { if (split(parts[i], r, "-") == 2) { for (c = r[1]; c <= r[2]; c++) ok[c] = 1 } else ok[parts[i]] = 1 } }
  ok[$1] { seen[$2 "," $3] = 1 } END { print length(seen) }')
[[ "$line" == *"sessions default to $unpinned_threads thread"* ]] || { echo "FAIL: expected $unpinned_threads default threads: $line" >&2; exit 1; }
echo "ok"
