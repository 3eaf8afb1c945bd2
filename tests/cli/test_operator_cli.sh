#!/usr/bin/env bash
# A CLI that never surprises an operator or a CI job: remove that counts and lists profiles, with
# --dry-run and classification/host filters; honest saves (nothing measured or low confidence:
# exit 1, nothing written; the cache checked before measuring); the system layer visible in
# inspect; usage errors (exit 2, one prefix, a suggestion, no CLI11 internals, a JSON error
# object); a relative XDG_CACHE_HOME ignored; one summary line for other machines' profiles;
# the hostname in provenance; a message while waiting for the lock.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
CACHE="$SCRATCH/k.cache"
T=("$TOOL" --cache "$CACHE" --color never)
HOSTNAME_NOW=$(hostname)

# unchanged FILE SNAPSHOT: FILE has the bytes SNAPSHOT holds.
unchanged() { cmp -s "$1" "$2" || fail "$1 was changed"; }
# A profile of another machine: the cache's first 2-thread profile with host.model and hostname changed.
add_foreign_profile() {  # CACHE MODEL HOSTNAME
  $PY - "$@" <<'PYEOF'
import re, sys
path, model, name = sys.argv[1:]
text = open(path).read()
blocks = ["[[profile]]" + b for b in text.split("[[profile]]")[1:]]
block = next(b for b in blocks if re.search(r"(?m)^effective_threads = 2$", b))
block = re.sub(r"(?m)^model = \d+", f"model = {model}", block)
block = re.sub(r'(?m)^hostname = ".*"', f'hostname = "{name}"', block)
open(path, "a").write("\n" + block.rstrip("\n") + "\n")
PYEOF
}

# ---- remove: profiles counted and listed, other hosts visible, --dry-run, filters ----------
expect_exit 0 "${T[@]}" set Abs parallel.minimum_elements=1000 --threads 2 --no-load
expect_exit 0 "${T[@]}" set Abs parallel.minimum_elements=1000 --threads 1 --no-load
expect_exit 0 "${T[@]}" set Relu parallel.minimum_elements=1000 --threads 2 --no-load
add_foreign_profile "$CACHE" 77 other-box   # Abs, 2 threads, another machine
cp "$CACHE" "$SCRATCH/before"

# Hostname recorded in provenance, shown by inspect --long, never part of the match.
expect_exit 0 "${T[@]}" inspect --long --user-only
expect_grep "$SCRATCH/out" "on host $HOSTNAME_NOW"
expect_grep "$SCRATCH/out" "on host other-box"
expect_grep "$CACHE" "hostname = \"$HOSTNAME_NOW\""

# --dry-run: lists exactly the profiles of every host that would go; the file keeps its bytes.
expect_exit 0 "${T[@]}" remove --kernel Abs --threads 2 --dry-run
expect_grep "$SCRATCH/out" "^would remove 2 profiles \(1 key\) from .*; 2 profiles kept"
expect_grep "$SCRATCH/out" "other-box +incompatible"
expect_grep "$SCRATCH/out" "$HOSTNAME_NOW +loaded"
unchanged "$CACHE" "$SCRATCH/before"
expect_exit 0 "${T[@]}" remove --kernel Abs --threads 2 --dry-run --json
$PY - "$SCRATCH/out" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["dry_run"] is True and r["status"] == "would_remove", r
assert r["removed_count"] == 2 and r["preserved_count"] == 2 and len(r["removed"]) == 1, r
hosts = sorted(p["provenance"]["hostname"] != "other-box" for p in r["removed_profiles"])
assert hosts == [False, True], r["removed_profiles"]
assert all(p["effective_threads"] == 2 and p["kernel"] == "Abs" for p in r["removed_profiles"]), r
PYEOF

# --foreign: only the other machine's profile; the count is of profiles.
expect_exit 0 "${T[@]}" remove --foreign --yes
expect_grep "$SCRATCH/out" "^removed 1 profile \(1 key\) from .*; 3 profiles kept"
expect_grep "$SCRATCH/out" "other-box"
expect_exit 0 "${T[@]}" inspect --json --user-only
$PY - "$SCRATCH/out" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert len(r["profiles"]) == 3 and all(p["classification"] == "loaded" for p in r["profiles"]), r["profiles"]
PYEOF

# --host: by the hostname provenance records.
cp "$SCRATCH/before" "$CACHE"
expect_exit 0 "${T[@]}" remove --host other-box --yes --json
$PY - "$SCRATCH/out" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["status"] == "removed" and r["removed_count"] == 1 and r["preserved_count"] == 3, r
assert r["removed_profiles"][0]["provenance"]["hostname"] == "other-box", r
PYEOF
expect_exit 0 "${T[@]}" remove --host no-such-host --yes
expect_grep "$SCRATCH/out" "no profile matches; nothing removed \(3 profiles kept"

# --stale: a profile of an old tuning ABI (what set --prune-stale did); --invalid: bad values.
cp "$SCRATCH/before" "$CACHE"
$PY - "$CACHE" <<'PYEOF'
import re, sys
path = sys.argv[1]
text = open(path).read()
blocks = text.split("[[profile]]")
head, profiles = blocks[0], blocks[1:]
stale = re.sub(r"(?m)^tuning_abi = \d+", "tuning_abi = 999", profiles[0])  # an ABI this build does not have
invalid = re.sub(r'(?m)^"parallel.minimum_elements" = \d+', '"parallel.minimum_elements" = -5', profiles[1])
profiles[0] = stale
open(path, "w").write(head + "".join("[[profile]]" + p for p in profiles) + "[[profile]]" + invalid.rstrip("\n") + "\n")
PYEOF
expect_exit 0 "${T[@]}" remove --invalid --dry-run --json
$PY - "$SCRATCH/out" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["removed_count"] >= 1 and all(p["classification"] == "invalid" for p in r["removed_profiles"]), r
PYEOF
expect_exit 0 "${T[@]}" remove --invalid --yes
expect_exit 0 "${T[@]}" remove --stale --yes --json
$PY - "$SCRATCH/out" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["removed_count"] == 1, r
(p,) = r["removed_profiles"]
assert p["classification"] == "stale" and p["tuning_abi"] == 999, p
PYEOF
expect_exit 0 "${T[@]}" inspect --json --user-only
$PY - "$SCRATCH/out" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert all(p["classification"] != "invalid" for p in r["profiles"]), r["profiles"]
PYEOF

# Unknown kernel names are usage errors with a suggestion (remove and inspect); nothing changes.
cp "$CACHE" "$SCRATCH/snapshot"
expect_exit 2 "${T[@]}" remove --kernel Abz --yes
expect_grep "$SCRATCH/err" "^onnx-light-tune: error: unknown kernel 'Abz': did you mean Abs\?"
unchanged "$CACHE" "$SCRATCH/snapshot"
expect_exit 2 "${T[@]}" inspect --kernel Abz
expect_grep "$SCRATCH/err" "did you mean Abs\?"
# ... but a kernel this build does not have, named by a cached profile, can still be removed.
sed -i '0,/^kernel = "Abs"/s//kernel = "RetiredOp"/' "$CACHE"
expect_exit 0 "${T[@]}" remove --kernel RetiredOp --implementation all --yes
expect_grep "$SCRATCH/out" "^removed 1 profile"

# On a terminal (script(1) gives the tool a pty): the profiles that would go are listed before the
# prompt; declining changes nothing (exit 1), accepting removes them.
cp "$CACHE" "$SCRATCH/snapshot"
set +e
printf 'n\n' | script -qec "'$TOOL' --cache '$CACHE' --color never remove --kernel Relu" /dev/null >"$SCRATCH/tty" 2>&1
status=$?
set -e
[[ $status == 1 ]] || { cat "$SCRATCH/tty" >&2; fail "declined prompt exited $status"; }
expect_grep "$SCRATCH/tty" "would remove 1 profile \(1 key\)"
expect_grep "$SCRATCH/tty" "Relu +float"
expect_grep "$SCRATCH/tty" "Remove 1 profile from .*\? \[y/N\]"
unchanged "$CACHE" "$SCRATCH/snapshot"
printf 'y\n' | script -qec "'$TOOL' --cache '$CACHE' --color never remove --kernel Relu" /dev/null >"$SCRATCH/tty" 2>&1
expect_grep "$SCRATCH/tty" "\\[y/N\\] removed 1 profile"
if grep -q 'kernel = "Relu"' "$CACHE"; then fail "the accepted prompt did not remove Relu"; fi

# Without a terminal: --yes is required, and the message says what --dry-run would do.
expect_exit 2 "${T[@]}" remove </dev/null
expect_grep "$SCRATCH/err" "^onnx-light-tune: error: remove: pass --yes .*--dry-run"

# ---- honest saves --------------------------------------------------------------------------
SAVE="$SCRATCH/save/k.cache"
# Nothing measured (every case past the memory budget): exit 1, nothing written.
expect_exit 1 "$TOOL" --cache "$SAVE" calibrate Abs --max-memory 1K --save --json
test ! -e "$SAVE" || fail "an unmeasured result was written"
$PY - "$SCRATCH/out" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert [k["kernel"] for k in r["not_saved"]] == ["Abs"], r["not_saved"]
assert r["measurements"][0]["measured"] is False and r["cache_update"] is None, r
assert any("not saved: nothing was measured" in d["message"] for d in r["diagnostics"]), r["diagnostics"]
PYEOF
expect_grep "$SCRATCH/err" "1 result not saved"
# Forced: saved, and its provenance says it measured nothing; --only-missing does not skip it.
expect_exit 0 "$TOOL" --cache "$SAVE" calibrate Abs --max-memory 1K --save --save-unmeasured
expect_exit 0 "$TOOL" --cache "$SAVE" --color never inspect --user-only
expect_grep "$SCRATCH/out" "calibrate-unmeasured"
expect_exit 1 "$TOOL" --cache "$SAVE" calibrate Abs --max-memory 1K --only-missing --json
$PY - "$SCRATCH/out" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["skipped"] == [] and [k["kernel"] for k in r["calibrated"]] == ["Abs"], r
PYEOF

# A cache that cannot be written is found before measuring: exit 1 at once, bytes unchanged.
printf 'not [ toml\n' >"$SCRATCH/bad.cache"
cp "$SCRATCH/bad.cache" "$SCRATCH/bad.snapshot"
expect_exit 1 "$TOOL" --cache "$SCRATCH/bad.cache" calibrate Abs --max-duration-ms 5000 --json
unchanged "$SCRATCH/bad.cache" "$SCRATCH/bad.snapshot"
$PY - "$SCRATCH/out" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["elapsed_ms"] < 1000 and r["calibrated"] == [], r["elapsed_ms"]
assert r["cache_update"]["status"] == "malformed", r["cache_update"]
assert any(d["message"].startswith("nothing was measured") for d in r["diagnostics"]), r["diagnostics"]
PYEOF
mkdir -p "$SCRATCH/ro" && chmod 555 "$SCRATCH/ro"
expect_exit 1 "$TOOL" --cache "$SCRATCH/ro/k.cache" calibrate Abs --max-duration-ms 5000 --json
$PY - "$SCRATCH/out" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["elapsed_ms"] < 1000 and r["cache_update"]["status"] == "read_only", r
PYEOF
chmod 755 "$SCRATCH/ro"

# ---- layers: the system cache in inspect, --system to write it -----------------------------
SYS="$SCRATCH/system.cache"
export ONNX_LIGHT_SYSTEM_TUNING_CACHE="$SYS"
expect_exit 0 "$TOOL" --system set Neg parallel.minimum_elements=5000 --threads 2 --no-load
expect_grep "$SCRATCH/err" "using the system cache $SYS"
expect_grep "$SYS" 'kernel = "Neg"'
expect_exit 0 "${T[@]}" inspect --json
$PY - "$SCRATCH/out" "$SYS" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["system_cache"] == {"path": sys.argv[2], "status": "loaded", "profiles": 1}, r["system_cache"]
assert any(p["layer"] == "system" and p["kernel"] == "Neg" for p in r["profiles"]), r["profiles"]
PYEOF
printf 'not [ toml\n' >"$SYS"
expect_exit 1 "${T[@]}" inspect --json
expect_grep "$SCRATCH/out" '"status": "malformed"'
expect_grep "$SCRATCH/err" "^onnx-light-tune: error: system cache .* is malformed"
expect_exit 0 "${T[@]}" inspect --json --user-only
expect_grep "$SCRATCH/out" '"system_cache": null'
expect_exit 2 "$TOOL" --system --cache "$CACHE" inspect
export ONNX_LIGHT_SYSTEM_TUNING_CACHE="$SCRATCH/no-system.cache"

# A named cache that does not exist: exit 1, and stderr says why.
expect_exit 1 "$TOOL" --cache "$SCRATCH/nonexist" inspect
expect_grep "$SCRATCH/err" "nonexist: no such cache file"

# load says what a process would publish (this one exits).
expect_exit 0 "${T[@]}" load
expect_grep "$SCRATCH/out" "^a process loading this cache would publish [0-9]+ profiles?"

# ---- usage errors: exit 2, one prefix, a suggestion, no CLI11 internals ---------------------
check_usage() {  # PATTERN ARGS...: exit 2, the prefix, PATTERN on stderr, no CLI11 internals
  local pattern="$1"; shift
  expect_exit 2 "$TOOL" "$@"
  expect_grep "$SCRATCH/err" "^onnx-light-tune: error: "
  expect_grep "$SCRATCH/err" "$pattern"
  if grep -Eq 'FAILED|TYPE:TYPE|INT in|\{false\}|->[0-9]|Run with --help|The following argument' "$SCRATCH/err"; then
    cat "$SCRATCH/err" >&2; fail "CLI11 internals in the message for: $*"
  fi
}
check_usage "unknown verb 'inspekt' \(did you mean 'inspect'\?\)" inspekt
check_usage "unknown verb 'calbrate' \(did you mean 'calibrate'\?\)" --cache x calbrate
check_usage "unknown option '--lnog' \(did you mean '--long'\?\)" inspect --lnog
check_usage "unknown option '--dryrun' \(did you mean '--dry-run'\?\)" remove --dryrun
check_usage "--max-memory: '12Q' is not a size" calibrate Abs --max-memory 12Q --no-save
check_usage "--element-type: unknown element type 'flaot'" list --element-type flaot
check_usage "--color: 'blue' is not one of auto, always, never" --color blue list
check_usage "--threads: 'abc' is not a whole number" list --threads abc
check_usage "--threads needs a value" list --threads
check_usage "unknown kernel 'Abz': did you mean Abs\?" list Abz
check_usage "no verb given" --cache x
# With --json, the error is also a JSON object on stdout.
expect_exit 2 "$TOOL" list --json --element-type flaot
$PY - "$SCRATCH/out" <<'PYEOF'
import json, sys
e = json.load(open(sys.argv[1]))["error"]
assert e["kind"] == "usage" and e["exit_status"] == 2 and "flaot" in e["message"], e
PYEOF
expect_exit 2 "$TOOL" remove --kernel Abz --yes --json
$PY - "$SCRATCH/out" <<'PYEOF'
import json, sys
e = json.load(open(sys.argv[1]))["error"]
assert e["kind"] == "not_found" and e["exit_status"] == 2 and "did you mean Abs" in e["message"], e
PYEOF
# Help shows no validator internals.
for verb in list calibrate verify run remove inspect; do
  expect_exit 0 "$TOOL" "$verb" --help
  if grep -Eq 'TYPE:TYPE|INT in \[|:FILE|\{false\}|TEXT:' "$SCRATCH/out"; then
    cat "$SCRATCH/out" >&2; fail "$verb --help shows CLI11 internals"
  fi
done

# ---- a relative XDG_CACHE_HOME is ignored (XDG Base Directory spec) ------------------------
(
  cd "$SCRATCH"
  XDG_CACHE_HOME=relative-cache "$TOOL" set Abs parallel.minimum_elements=2000 --no-load >/dev/null
)
test -f "$HOME/.cache/onnx-light/kernel_tuning.cache" || fail "the default cache is not under HOME"
test ! -e "$SCRATCH/relative-cache" || fail "a relative XDG_CACHE_HOME was used"

# ---- a shared cache with many foreign profiles: one summary line ---------------------------
SHARED="$SCRATCH/shared.cache"
expect_exit 0 "$TOOL" --cache "$SHARED" set Abs parallel.minimum_elements=1000 --threads 2 --no-load
for model in 81 82 83 84 85; do add_foreign_profile "$SHARED" "$model" "box$model"; done
expect_exit 0 "$TOOL" --cache "$SHARED" --color never set Relu parallel.minimum_elements=1000 --threads 2
expect_grep "$SCRATCH/out" "kept 5 profiles of other machines"
if grep -q "written on another machine" "$SCRATCH/out"; then fail "set listed every foreign profile"; fi

# ---- the lock: a message after 1 s of waiting, naming the lock file ------------------------
flock "$SHARED.lock" sleep 2.5 &
HOLDER=$!
sleep 0.3
expect_exit 0 "$TOOL" --cache "$SHARED" set Neg parallel.minimum_elements=3000 --no-load
wait "$HOLDER"
expect_grep "$SCRATCH/err" "waiting for the cache lock $SHARED.lock"
# ... and gives up after --lock-timeout, naming the lock and its holder; the cache is unchanged.
cp "$SHARED" "$SCRATCH/shared.snapshot"
flock "$SHARED.lock" sleep 3 &
HOLDER=$!
sleep 0.3
expect_exit 1 "$TOOL" --cache "$SHARED" --lock-timeout 1 set Neg parallel.minimum_elements=4000 --no-load --json
$PY - "$SCRATCH/out" "$SHARED.lock" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["status"] == "lock_timeout", r["status"]
message = r["diagnostics"][0]["message"]
assert sys.argv[2] in message and "held by pid" in message, message
PYEOF
wait "$HOLDER"
unchanged "$SHARED" "$SCRATCH/shared.snapshot"
echo "operator CLI ok"

# ---- cache paths that must not hang or fail a verb that needs no cache ---------------------
# A FIFO at the cache path (or its lock) is refused at once, never waited on.
mkfifo "$SCRATCH/fifo.cache"
expect_exit 1 timeout 10 "$TOOL" --cache "$SCRATCH/fifo.cache" inspect
expect_grep "$SCRATCH/out" "not a regular file"
expect_exit 0 timeout 10 "$TOOL" --cache "$SCRATCH/fifo.cache" list Abs
expect_exit 1 timeout 10 "$TOOL" --cache "$SCRATCH/fifo.cache" set Abs parallel.minimum_elements=1000 --no-load
touch "$SCRATCH/plain.cache" && mkfifo "$SCRATCH/plain.cache.lock"
expect_exit 1 timeout 10 "$TOOL" --cache "$SCRATCH/plain.cache" set Abs parallel.minimum_elements=1000 --no-load
expect_grep "$SCRATCH/out" "lock file .*plain.cache.lock is not a regular file"
# Without HOME (services, cron): the password database's home; run and calibrate --no-save work.
expect_exit 0 env -u HOME -u XDG_CACHE_HOME "$TOOL" -v run "$ONNX_LIGHT_SOURCE_DIR/examples/abs.onnxtxt" -i x=random --dim N=16
expect_exit 0 env -u HOME -u XDG_CACHE_HOME "$TOOL" calibrate Abs --no-save --max-duration-ms 50
expect_exit 0 env -u HOME -u XDG_CACHE_HOME "$TOOL" -v list Abs
expect_grep "$SCRATCH/err" "cache: $(getent passwd "$(id -u)" | cut -d: -f6)/.cache/onnx-light/kernel_tuning.cache"
# A user the password database does not know, without HOME: verbs that read or write the cache
# say why there is no path (exit 2); run needs none.
if [[ $(id -u) == 0 ]] && ! getent passwd 4242 >/dev/null; then
  NOBODY_HOME=(env -u HOME -u XDG_CACHE_HOME setpriv --reuid=4242 --regid=4242 --clear-groups --)
  expect_exit 2 "${NOBODY_HOME[@]}" "$TOOL" list Abs
  expect_grep "$SCRATCH/err" "no tuning cache path: set ONNX_LIGHT_TUNING_CACHE, XDG_CACHE_HOME or HOME"
  MODEL_DIR=$(mktemp -d /tmp/onnx_light_operator_cli.XXXXXX)
  chmod 0755 "$MODEL_DIR" && cp "$ONNX_LIGHT_SOURCE_DIR/examples/abs.onnxtxt" "$MODEL_DIR/" && chmod 0644 "$MODEL_DIR/abs.onnxtxt"
  expect_exit 0 "${NOBODY_HOME[@]}" "$TOOL" run "$MODEL_DIR/abs.onnxtxt" -i x=random --dim N=16
  rm -rf "$MODEL_DIR"
  expect_grep "$SCRATCH/err" "running with the default tuning values"
fi
echo "cache paths ok"

# ---- hostile models: arity and opset refused at load, naming the node and the versions -----
printf '<ir_version: 8, opset_import: ["" : 13]>\ng (float[4] x) => (float[4] y) {\n y = Abs(x, x, x)\n}\n' >"$SCRATCH/arity.onnxtxt"
expect_exit 1 "$TOOL" run "$SCRATCH/arity.onnxtxt" -i x=random
expect_grep "$SCRATCH/err" "Abs node #0 \(opset 13\): has input size 3 not in range \[min=1, max=1\]"
printf '<ir_version: 8, opset_import: ["" : 1000000]>\ng (float[4] x) => (float[4] y) {\n y = Abs(x)\n}\n' >"$SCRATCH/opset.onnxtxt"
expect_exit 1 "$TOOL" run "$SCRATCH/opset.onnxtxt" -i x=random --json
expect_grep "$SCRATCH/err" "imports ai.onnx opset 1000000, newer than the newest this runtime implements \(18\)"
$PY -c "import json; e=json.load(open('$SCRATCH/out'))['error']; assert e['kind'] == 'model' and e['exit_status'] == 1, e"
expect_exit 0 "$TOOL" run "$SCRATCH/opset.onnxtxt" -i x=random --allow-newer-opset
echo "hostile models ok"

# ---- memory limit: terabyte outputs fail naming node, output, shape and bytes; --max-memory ----
printf '<ir_version: 8, opset_import: ["" : 17]>\ng () => (float[A, B] y) <int64[2] s = {1000000, 1000000}> {\n y = ConstantOfShape(s)\n}\n' >"$SCRATCH/huge.onnxtxt"
expect_exit 1 "$TOOL" run "$SCRATCH/huge.onnxtxt"
expect_grep "$SCRATCH/err" "ConstantOfShape node #0: output 'y' of type float and shape \[1000000, 1000000\] needs 3\.6 TiB \(4000000000000 bytes\), over the session's memory limit of"
if grep -q "bad_alloc\|internal error" "$SCRATCH/err"; then fail "a memory error reached the user as bad_alloc"; fi
expect_exit 1 "$TOOL" run "$SCRATCH/huge.onnxtxt" --json
$PY -c "import json; e=json.load(open('$SCRATCH/out'))['error']; assert e['kind'] == 'memory_limit' and e['exit_status'] == 1, e"
printf '<ir_version: 8, opset_import: ["" : 17]>\ng (float[1] x, int64[2] s) => (float[A, B] y) {\n y = Expand(x, s)\n}\n' >"$SCRATCH/expand.onnxtxt"
$PY -c "import numpy as np; np.save('$SCRATCH/x.npy', np.ones(1, np.float32)); np.save('$SCRATCH/s.npy', np.array([1024, 1024], np.int64))"
expect_exit 0 "$TOOL" run "$SCRATCH/expand.onnxtxt" -i x="$SCRATCH/x.npy" -i s="$SCRATCH/s.npy" --max-memory 8M --json
$PY -c "import json; m=json.load(open('$SCRATCH/out'))['memory']; assert m['memory_limit_bytes'] == 8 << 20, m"
expect_exit 1 "$TOOL" run "$SCRATCH/expand.onnxtxt" -i x="$SCRATCH/x.npy" -i s="$SCRATCH/s.npy" --max-memory 2M
expect_grep "$SCRATCH/err" "Expand node #0: output 'y' of type float and shape \[1024, 1024\] needs 4\.0 MiB \(4194304 bytes\), over the session's memory limit of 2\.0 MiB"
expect_exit 2 "$TOOL" run "$SCRATCH/expand.onnxtxt" --max-memory lots
expect_grep "$SCRATCH/err" "--max-memory"
# Random inputs are made by the tool, but asked for by the model: the same limit.
printf '<ir_version: 8, opset_import: ["" : 17]>\ng (float[N, N] x) => (float[N, N] y) {\n y = Abs(x)\n}\n' >"$SCRATCH/square.onnxtxt"
expect_exit 1 "$TOOL" run "$SCRATCH/square.onnxtxt" -i x=random --dim N=1000000
expect_grep "$SCRATCH/err" "--input x=random: a float tensor of shape \[1000000, 1000000\] needs 3\.6 TiB"
echo "memory limit ok"

# ---- external data: read from the model's directory, confined to it -------------------------
mkdir -p "$SCRATCH/ext/model"
$PY - "$SCRATCH/ext" <<'PYEOF'
import sys, numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto
root = sys.argv[1]
w = numpy_helper.from_array(np.arange(4096, dtype=np.float32).reshape(64, 64), "w")
graph = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])], [w])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
onnx.save_model(model, f"{root}/model/matmul.onnx", save_as_external_data=True, all_tensors_to_one_file=True,
                location="matmul.weights", size_threshold=0)
np.save(f"{root}/x.npy", np.ones((1, 64), np.float32))
# The same model pointing outside its directory.
for name, location in (("escape", "../secret.bin"), ("absolute", f"{root}/secret.bin")):
    m = onnx.load(f"{root}/model/matmul.onnx", load_external_data=False)
    for entry in m.graph.initializer[0].external_data:
        if entry.key == "location":
            entry.value = location
    onnx.save_model(m, f"{root}/model/{name}.onnx")
PYEOF
cp "$SCRATCH/ext/model/matmul.weights" "$SCRATCH/ext/secret.bin"
expect_exit 0 "$TOOL" run "$SCRATCH/ext/model/matmul.onnx" -i x="$SCRATCH/ext/x.npy" -o "$SCRATCH/ext/out"
$PY -c "
import numpy as np
y = np.load('$SCRATCH/ext/out/y.npy'); w = np.arange(4096, dtype=np.float32).reshape(64, 64)
assert np.array_equal(y, np.ones((1, 64), np.float32) @ w), y"
expect_exit 1 "$TOOL" run "$SCRATCH/ext/model/escape.onnx" -i x="$SCRATCH/ext/x.npy"
expect_grep "$SCRATCH/err" "escape.onnx: tensor 'w': external data location '../secret.bin' contains '..'"
expect_exit 1 "$TOOL" run "$SCRATCH/ext/model/absolute.onnx" -i x="$SCRATCH/ext/x.npy"
expect_grep "$SCRATCH/err" "is an absolute path"
ln -s ../secret.bin "$SCRATCH/ext/model/link.weights"
$PY -c "
import onnx
m = onnx.load('$SCRATCH/ext/model/matmul.onnx', load_external_data=False)
for e in m.graph.initializer[0].external_data:
    if e.key == 'location': e.value = 'link.weights'
onnx.save_model(m, '$SCRATCH/ext/model/link.onnx')"
expect_exit 1 "$TOOL" run "$SCRATCH/ext/model/link.onnx" -i x="$SCRATCH/ext/x.npy"
expect_grep "$SCRATCH/err" "resolves to .*secret\.bin, outside the model's directory"
truncate -s 1000 "$SCRATCH/ext/model/matmul.weights"
expect_exit 1 "$TOOL" run "$SCRATCH/ext/model/matmul.onnx" -i x="$SCRATCH/ext/x.npy"
expect_grep "$SCRATCH/err" "runs past the end of 'matmul.weights' \(1000 bytes\)"
echo "external data ok"
