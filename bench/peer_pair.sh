#!/bin/bash
# ORT's ort_c_bench and one or more onnx-light-peer-bench builds at the same time on ONE vCPU, so that
# they share its time slices and see the same host state. On this KVM guest a vCPU's speed changes
# from minute to minute (a busy host core behind it); run one after the other, two tools can land in
# different states and their ratio says more about the host than about the code. Concurrent on one
# vCPU, a run is rarely preempted (runs of ~100 us against scheduler slices of ms) and each side's
# median is taken over the same window. Single-thread figures only (T=1).
#
#   bash bench/peer_pair.sh CPU MODELS_DIR MODEL MIN_TIME BIN [BIN...]
#   e.g. for c in 0 1; do bash bench/peer_pair.sh $c /tmp/att qk_1_2_512_16 1.0 build/bench/onnx-light-peer-bench; done
# Prints one line: each tool's median, p10 and p90 in us (ort first, then the BINs in order).
set -euo pipefail
if [ $# -lt 5 ]; then sed -n '2,13p' "$0" >&2; exit 2; fi
cpu=$1 dir=$2 model=$3 min_time=$4
shift 4
ort=${PEER_WORK:-${XDG_CACHE_HOME:-$HOME/.cache}/onnx-light-peer}/bin/ort_c_bench
[ -x "$ort" ] || { echo "peer_pair.sh: $ort missing: run /work/shared/peer/setup.sh" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
taskset -c "$cpu" "$ort" --models "$dir" --threads 1 --modes prealloc --min-time "$min_time" --only "$model" \
  > "$out/0" 2>/dev/null &
i=0
for bin in "$@"; do
  i=$((i + 1))
  taskset -c "$cpu" "$bin" --models "$dir" --threads 1 --modes prealloc --min-time "$min_time" --only "$model" \
    > "$out/$i" 2>/dev/null &
done
wait
line="cpu$cpu $model"
for j in $(seq 0 "$i"); do
  name=ort; [ "$j" -gt 0 ] && name=$(basename "${!j}")
  line="$line | $name $(awk -F'\t' '$1 != "model" {printf "%s (p10 %s, p90 %s)", $4, $5, $6}' "$out/$j")"
done
echo "$line"
