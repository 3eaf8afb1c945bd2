#!/usr/bin/env bash
# Cache file states through the CLI: malformed files are never overwritten, write-protected
# files and directories give read_only, a directory in place of the cache is unreadable, and
# classification of stale / incompatible / invalid profiles. Also the system layer.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
CACHE="$SCRATCH/kernel_tuning.cache"
T=("$TOOL" --cache "$CACHE" --color never)

# Malformed: set refuses (exit 1) and the bytes stay identical; inspect and load exit 1.
printf 'format = "onnx-light-kernel-tuning"\nformat_version = 7\n' >"$CACHE"
cp "$CACHE" "$SCRATCH/before"
expect_exit 1 "${T[@]}" set Abs parallel.minimum_elements=1024
expect_grep "$SCRATCH/out" "^malformed: "
expect_grep "$SCRATCH/out" "newer than this tool reads"
cmp -s "$CACHE" "$SCRATCH/before" || fail "malformed cache was changed"
[[ ! -e "$CACHE.lock" ]] || fail "lock file left behind after a refused update"
expect_exit 1 "${T[@]}" set Abs parallel.minimum_elements=1024 --json
$PY -c "import json; r=json.load(open('$SCRATCH/out')); assert r['status'] == 'malformed' and r['load'] is None, r"
expect_exit 1 "${T[@]}" inspect
expect_exit 1 "${T[@]}" load --json
$PY -c "import json; r=json.load(open('$SCRATCH/out')); assert r['status'] == 'malformed' and r['diagnostics'], r"
printf 'this is not TOML [\n' >"$CACHE"
cp "$CACHE" "$SCRATCH/before"
expect_exit 1 "${T[@]}" set Abs parallel.minimum_elements=1024
cmp -s "$CACHE" "$SCRATCH/before" || fail "non-TOML cache was changed"
expect_exit 0 "${T[@]}" remove --yes  # the remedy for a malformed cache
[[ ! -e "$CACHE" ]] || fail "malformed cache not removed"

# Write-protected file: read_only, unchanged.
expect_exit 0 "${T[@]}" set Abs parallel.minimum_elements=2048 --threads 2
chmod 0444 "$CACHE"
cp "$CACHE" "$SCRATCH/before"
expect_exit 1 "${T[@]}" set Abs parallel.minimum_elements=4096 --threads 2 --json
$PY -c "import json; r=json.load(open('$SCRATCH/out')); assert r['status'] == 'read_only', r"
cmp -s "$CACHE" "$SCRATCH/before" || fail "write-protected cache was changed"
chmod 0644 "$CACHE"

# Write-protected directory: read_only.
mkdir -p "$SCRATCH/ro"
"$TOOL" --cache "$SCRATCH/ro/k.cache" set Abs parallel.minimum_elements=2048 >/dev/null
chmod 0555 "$SCRATCH/ro"
expect_exit 1 "$TOOL" --cache "$SCRATCH/ro/k.cache" set Abs parallel.minimum_elements=4096 --json
chmod 0755 "$SCRATCH/ro"
$PY -c "import json; r=json.load(open('$SCRATCH/out')); assert r['status'] == 'read_only', r"

# A directory where the cache should be: unreadable.
mkdir -p "$SCRATCH/dir.cache"
expect_exit 1 "$TOOL" --cache "$SCRATCH/dir.cache" set Abs parallel.minimum_elements=4096 --json
$PY -c "import json; r=json.load(open('$SCRATCH/out')); assert r['status'] == 'unreadable', r"
expect_exit 1 "$TOOL" --cache "$SCRATCH/dir.cache" inspect

# A parent that is a file: write_failed.
touch "$SCRATCH/plain"
expect_exit 1 "$TOOL" --cache "$SCRATCH/plain/k.cache" set Abs parallel.minimum_elements=4096 --json
$PY -c "import json; r=json.load(open('$SCRATCH/out')); assert r['status'] == 'write_failed', r"

# Real permissions, not mode bits: a cache whose mode has a write bit that does not apply to the
# user gives read_only, one the user may not read gives unreadable; both stay byte-identical and
# nothing is left beside them. Root passes every permission check, so under root (how CI runs)
# the user is nobody, on copies owned by root in a directory of their own that nobody can reach.
AS_USER=()
PERMS="$SCRATCH/perms"
if [[ $(id -u) == 0 ]]; then
  AS_USER=(setpriv --reuid=65534 --regid=65534 --clear-groups --)
  PERMS=$(mktemp -d /tmp/onnx_light_cache_states.XXXXXX)
  trap 'rm -rf "$PERMS"' EXIT
fi
mkdir -p "$PERMS"
chmod 0777 "$PERMS"
as_user() {
  env HOME="$PERMS" XDG_CACHE_HOME="$PERMS/xdg" ONNX_LIGHT_SYSTEM_TUNING_CACHE="$PERMS/no-system.cache" \
    "${AS_USER[@]}" "$@"
}
as_user "$TOOL" --version >/dev/null ||
  fail "$(id -un) cannot run $TOOL as ${AS_USER[*]:-itself}: every directory above it must be world-executable"
cp "$CACHE" "$PERMS/k.cache"
# Writable by its owner (root) only; for a user running the tests, by its group only. An update
# renames a new file over the cache, so the directory's permission decides: the user may update
# it (after root wrote a user's cache, the user's next `set` works), and the mode is kept.
if [[ $(id -u) == 0 ]]; then chmod 0644 "$PERMS/k.cache"; else chmod 0464 "$PERMS/k.cache"; fi
MODE=$(stat -c %a "$PERMS/k.cache")
cp "$PERMS/k.cache" "$SCRATCH/before"
expect_exit 0 as_user "$TOOL" --cache "$PERMS/k.cache" set Abs parallel.minimum_elements=4096 --threads 2 --json
[[ $(stat -c %a "$PERMS/k.cache") == "$MODE" ]] || fail "the update changed the cache's mode to $(stat -c %a "$PERMS/k.cache")"
grep -q "parallel.minimum_elements\" = 4096" "$PERMS/k.cache" || fail "the user's update is not in the cache"
# ... but not in a sticky directory (/tmp-like), where only the file's owner may replace it.
if [[ $(id -u) == 0 ]]; then
  rm -f "$PERMS/k.cache" && cp "$SCRATCH/before" "$PERMS/k.cache" && chmod 0644 "$PERMS/k.cache" && chmod 1777 "$PERMS"
  ls -A "$PERMS" >"$SCRATCH/entries.before"
  expect_exit 1 as_user "$TOOL" --cache "$PERMS/k.cache" set Abs parallel.minimum_elements=4096 --threads 2 --json
  $PY -c "import json; r=json.load(open('$SCRATCH/out')); assert r['status'] == 'read_only' and 'sticky' in r['diagnostics'][0]['message'], r"
  cmp -s "$PERMS/k.cache" "$SCRATCH/before" || fail "a cache the user may not replace was changed"
  ls -A "$PERMS" | cmp -s - "$SCRATCH/entries.before" || fail "a refused update left files in $PERMS: $(ls -A "$PERMS")"
  chmod 0777 "$PERMS"
  # Root updating a user's cache keeps the user as its owner.
  chown 65534:65534 "$PERMS/k.cache"
  expect_exit 0 "$TOOL" --cache "$PERMS/k.cache" set Abs parallel.minimum_elements=8192 --threads 2 --no-load
  [[ $(stat -c %u:%g "$PERMS/k.cache") == 65534:65534 ]] || fail "root's update took the user's cache: $(stat -c %U "$PERMS/k.cache")"
  chown 0:0 "$PERMS/k.cache"
fi
# A symbolic link planted by another user is not followed for writing (root's write must not be
# redirected into a file of the planter's choosing); a link of one's own is.
if [[ $(id -u) == 0 ]]; then
  mkdir -p "$PERMS/private" && chmod 0700 "$PERMS/private"
  setpriv --reuid=65534 --regid=65534 --clear-groups -- ln -s "$PERMS/private/secret.cache" "$PERMS/planted.cache"
  expect_exit 1 "$TOOL" --cache "$PERMS/planted.cache" set Abs parallel.minimum_elements=4096 --no-load --json
  $PY -c "import json; r=json.load(open('$SCRATCH/out')); assert r['status'] == 'read_only' and 'symbolic link owned by uid 65534' in r['diagnostics'][0]['message'], r"
  [[ ! -e "$PERMS/private/secret.cache" ]] || fail "root's write followed a planted link"
  expect_exit 1 "$TOOL" --cache "$PERMS/planted.cache" remove --yes
  [[ -L "$PERMS/planted.cache" ]] || fail "remove followed a planted link"
  ln -s "$PERMS/private/own.cache" "$PERMS/own-link.cache"
  expect_exit 0 "$TOOL" --cache "$PERMS/own-link.cache" set Abs parallel.minimum_elements=4096 --no-load
  [[ -f "$PERMS/private/own.cache" && -L "$PERMS/own-link.cache" ]] || fail "an own link was not followed"
  rm -rf "$PERMS/private" "$PERMS/planted.cache" "$PERMS/own-link.cache"
fi
# No write bit at all is the operator's "do not change it".
rm -f "$PERMS/k.cache" && cp "$SCRATCH/before" "$PERMS/k.cache" && chmod 0444 "$PERMS/k.cache"
ls -A "$PERMS" >"$SCRATCH/entries.before"
expect_exit 1 as_user "$TOOL" --cache "$PERMS/k.cache" set Abs parallel.minimum_elements=4096 --threads 2 --json
$PY -c "import json; r=json.load(open('$SCRATCH/out')); assert r['status'] == 'read_only' and 'write-protected' in r['diagnostics'][0]['message'], r"
cmp -s "$PERMS/k.cache" "$SCRATCH/before" || fail "a write-protected cache was changed"
ls -A "$PERMS" | cmp -s - "$SCRATCH/entries.before" || fail "a refused update left files in $PERMS: $(ls -A "$PERMS")"
chmod 0000 "$PERMS/k.cache"
expect_exit 1 as_user "$TOOL" --cache "$PERMS/k.cache" set Abs parallel.minimum_elements=4096 --threads 2 --json
$PY -c "import json; r=json.load(open('$SCRATCH/out')); assert r['status'] == 'unreadable' and 'Permission denied' in r['diagnostics'][0]['message'], r"
expect_exit 1 as_user "$TOOL" --cache "$PERMS/k.cache" inspect
chmod 0644 "$PERMS/k.cache"
cmp -s "$PERMS/k.cache" "$SCRATCH/before" || fail "an unreadable cache was changed"
ls -A "$PERMS" | cmp -s - "$SCRATCH/entries.before" || fail "a refused update left files in $PERMS: $(ls -A "$PERMS")"

# Classification of hand-edited profiles: stale ABI, another machine, invalid value; good ones survive.
$PY - "$CACHE" <<'PYEOF'
import sys, tomllib
path = sys.argv[1]
text = open(path).read()
doc = tomllib.loads(text)
(good,) = doc["profile"]
block = text[text.index("[[profile]]"):]
stale = block.replace("tuning_abi = %d" % good["tuning_abi"], "tuning_abi = 999").replace("effective_threads = 2", "effective_threads = 3")
other = block.replace('vendor = "%s"' % good["host"]["vendor"], 'vendor = "elsewhere"')
invalid = block.replace("effective_threads = 2", "effective_threads = 5").replace(
    '"parallel.minimum_elements" = 2048', '"parallel.minimum_elements" = -7')
broken = '[[profile]]\nkernel = 42\n'
open(path, "w").write(text + "\n" + stale + "\n" + other + "\n" + invalid + "\n" + broken)
PYEOF
expect_exit 0 "${T[@]}" inspect --json
$PY - "$SCRATCH/out" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
classes = [p["classification"] for p in r["profiles"]]
assert classes == ["loaded", "stale", "incompatible", "invalid", "invalid"], classes
fields = {d.get("field") for d in r["diagnostics"]}
assert "host.vendor" in fields and "tuning_abi" in fields and "values.parallel.minimum_elements" in fields, fields
assert "kernel" in fields, fields
assert all("profile" in d and "message" in d for d in r["diagnostics"]), r["diagnostics"]
PYEOF
expect_exit 0 "${T[@]}" load --json
$PY - "$SCRATCH/out" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert len(r["loaded"]) == 1 and len(r["stale"]) == 1 and len(r["incompatible"]) == 1 and len(r["invalid"]) == 2, r
PYEOF
# An update keeps every one of them, including the unreadable profile.
expect_exit 0 "${T[@]}" set Relu parallel.minimum_elements=4096 --threads 2
expect_exit 0 "${T[@]}" inspect --json
$PY -c "import json; r=json.load(open('$SCRATCH/out')); assert len(r['profiles']) == 6, len(r['profiles'])"
expect_exit 0 "${T[@]}" set Relu parallel.minimum_elements=4096 --threads 2 --prune-stale --json
$PY -c "import json; r=json.load(open('$SCRATCH/out')); assert len(r['pruned']) == 1, r"

# System layer: read-only, under the user cache; user profiles win; inspect and list say which layer.
SYSTEM="$SCRATCH/system.cache"
"$TOOL" --cache "$SYSTEM" set Neg parallel.minimum_elements=1000 --threads 2 >/dev/null
"$TOOL" --cache "$SYSTEM" set Relu parallel.minimum_elements=1000 --threads 2 >/dev/null
cp "$SYSTEM" "$SCRATCH/system.before"
export ONNX_LIGHT_SYSTEM_TUNING_CACHE="$SYSTEM"
expect_exit 0 "${T[@]}" list Neg Relu --element-type float --threads 2
expect_grep "$SCRATCH/out" "^Neg .* 1000 \(system\) +1000 +published_profile"
expect_grep "$SCRATCH/out" "^Relu .* 4096 \(user\) +4096 +published_profile"
expect_exit 0 "${T[@]}" set Neg --threads 2 parallel.minimum_elements=3000
expect_grep "$SCRATCH/out" "parallel.minimum_elements +1000 +system cache +-> +3000"
cmp -s "$SYSTEM" "$SCRATCH/system.before" || fail "the system cache was written"
expect_exit 0 "${T[@]}" inspect --json --kernel Neg
$PY - "$SCRATCH/out" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
layers = [(p["layer"], p["values"]["parallel.minimum_elements"], p["shadowed"]) for p in r["profiles"]]
assert layers == [("user", 3000, False), ("system", 1000, True)], layers
PYEOF
expect_exit 0 "${T[@]}" remove --yes
cmp -s "$SYSTEM" "$SCRATCH/system.before" || fail "remove touched the system cache"
echo "ok"
