#!/usr/bin/env bash
# The cache writer's system calls, in order, as the real CLI makes them (strace): an exclusive
# flock on <cache>.lock; a temporary file created in the cache's directory; every byte of the new
# cache written to it; fsync (or fdatasync) of that file's descriptor; rename over the cache while
# the lock is held; fsync of the directory. A crash between any two of them leaves the old cache
# or the new one. Without strace this test fails (scripts/install-deps.sh installs it).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
command -v strace >/dev/null || fail "strace is not installed (scripts/install-deps.sh installs it); this test cannot run without it"

DIR="$(cd "$SCRATCH" && pwd -P)/cache-dir"  # strace -y prints resolved paths
CACHE="$DIR/kernel_tuning.cache"
mkdir -p "$DIR"
SYSCALLS=open,openat,creat,flock,fcntl,write,pwrite64,writev,fsync,fdatasync,rename,renameat,renameat2,close,unlink,unlinkat

# traced_set TRACE VALUE: one `set` under strace, -f for the thread pool, -y for fd paths.
traced_set() {
  strace -f -qq -y -s 0 -e trace=$SYSCALLS -o "$1" \
    "$TOOL" --cache "$CACHE" set Abs "parallel.minimum_elements=$2" --threads 2 --no-load >"$SCRATCH/out" 2>"$SCRATCH/err" \
    || { cat "$SCRATCH/err" >&2; fail "set under strace failed"; }
}

check_order() {
  $PY - "$1" "$CACHE" <<'PYEOF'
import os, re, sys
trace_path, cache = sys.argv[1], sys.argv[2]
directory, lock = os.path.dirname(cache), cache + ".lock"

# Join "<unfinished ...>" halves with their "<... resumed>" lines (per pid), keep one event per call.
pending, calls = {}, []
for line in open(trace_path):
    m = re.match(r"(\d+)\s+(.*)$", line.rstrip("\n"))
    pid, text = (m.group(1), m.group(2)) if m else ("0", line.rstrip("\n"))
    if text.endswith("<unfinished ...>"):
        pending[pid] = text[: -len("<unfinished ...>")]
        continue
    r = re.match(r"<\.\.\. \w+ resumed>(.*)$", text)
    if r:
        text = pending.pop(pid, "") + r.group(1)
    c = re.match(r"(\w+)\((.*)\)\s+=\s+(-?\d+)(?:<([^>]*)>)?", text)
    if c:
        calls.append({"name": c.group(1), "args": c.group(2), "ret": int(c.group(3)), "ret_path": c.group(4),
                      "text": text})

def fail(message):
    print("FAIL: " + message, file=sys.stderr)
    print("--- trace of the cache's directory:", file=sys.stderr)
    for i, call in enumerate(calls):
        if directory in call["text"]:
            print(f"  {i:4d} {call['text']}", file=sys.stderr)
    sys.exit(1)

def fd_path(args):  # first argument "5</path>" -> (5, "/path")
    m = re.match(r"(-?\d+)<([^>]*)>", args)
    return (int(m.group(1)), m.group(2)) if m else (None, None)

def rename_paths(call):  # (from, to) as absolute paths; renameat's are relative to their dirfds
    pairs = re.findall(r'(?:(?:AT_FDCWD|\d+)<([^>]*)>, )?"((?:[^"\\]|\\.)*)"', call["args"])
    return tuple(os.path.normpath(os.path.join(base or os.getcwd(), path)) for base, path in pairs[:2])

# Descriptor lifetimes: which path an fd number names at each call (numbers are reused).
def opened_at(path):
    return [i for i, c in enumerate(calls) if c["name"] in ("open", "openat", "creat") and c["ret"] >= 0
            and c["ret_path"] == path]

def closed_after(fd, start):
    for i in range(start + 1, len(calls)):
        c = calls[i]
        if c["name"] == "close" and fd_path(c["args"])[0] == fd:
            return i
    return len(calls)

# 1. The rename onto the cache, and what it renamed.
renames = [i for i, c in enumerate(calls) if c["name"] in ("rename", "renameat", "renameat2") and c["ret"] == 0
           and len(rename_paths(c)) == 2 and rename_paths(c)[1] == cache]
if len(renames) != 1:
    fail(f"expected one successful rename onto {cache}, found {len(renames)} (written in place?)")
rename = renames[0]
temp = rename_paths(calls[rename])[0]
if os.path.dirname(temp) != directory:
    fail(f"temporary file {temp} is not in the cache's directory {directory} (rename would not be atomic)")
if temp == cache:
    fail("renamed the cache onto itself")

# 2. The exclusive lock on <cache>.lock, held (not closed, not unlocked) until after the rename.
lock_open = [i for i in opened_at(lock) if i < rename]
if not lock_open:
    fail(f"{lock} was never opened before the rename")
lock_fd = calls[lock_open[-1]]["ret"]
flocks = [i for i in range(lock_open[-1], rename) if calls[i]["name"] == "flock"
          and fd_path(calls[i]["args"])[0] == lock_fd and calls[i]["ret"] == 0]
if not any("LOCK_EX" in calls[i]["args"] for i in flocks):
    fail(f"no exclusive flock (LOCK_EX) on {lock} before the rename (flock calls: "
         f"{[calls[i]['text'] for i in flocks]})")
locked = min(i for i in flocks if "LOCK_EX" in calls[i]["args"])
for i in range(locked + 1, rename):
    c = calls[i]
    if fd_path(c["args"])[0] == lock_fd and (c["name"] == "close" or "LOCK_UN" in c["args"]):
        fail(f"the lock was released before the rename: {c['text']}")

# 3. The temporary file, created after taking the lock (exclusively: O_CREAT|O_EXCL).
temp_open = [i for i in opened_at(temp) if i < rename]
if not temp_open:
    fail(f"the temporary file {temp} was not created through open/openat")
created = temp_open[-1]
if created < locked:
    fail("the temporary file was created before the lock was taken")
if "O_CREAT" not in calls[created]["args"] or "O_EXCL" not in calls[created]["args"]:
    fail(f"the temporary file is not created exclusively: {calls[created]['text']}")
temp_fd = calls[created]["ret"]
temp_closed = closed_after(temp_fd, created)

# 4. Every byte of the new cache written through that descriptor.
writes = [i for i in range(created + 1, min(temp_closed, rename)) if calls[i]["name"] in ("write", "pwrite64", "writev")
          and fd_path(calls[i]["args"])[0] == temp_fd]
written = sum(calls[i]["ret"] for i in writes)
if not writes or written != os.path.getsize(cache):
    fail(f"{written} bytes written to the temporary file, the cache has {os.path.getsize(cache)}")

# 5. fsync/fdatasync of THAT descriptor after the last write, before the rename.
syncs = [i for i in range(writes[-1] + 1, min(temp_closed + 1, rename)) if calls[i]["name"] in ("fsync", "fdatasync")
         and fd_path(calls[i]["args"]) == (temp_fd, temp) and calls[i]["ret"] == 0]
if not syncs:
    fail(f"no fsync/fdatasync of the temporary file's descriptor {temp_fd} between its last write and the rename")

# 6. fsync of the directory after the rename.
dir_syncs = [i for i in range(rename + 1, len(calls)) if calls[i]["name"] in ("fsync", "fdatasync")
             and fd_path(calls[i]["args"])[1] == directory and calls[i]["ret"] == 0]
if not dir_syncs:
    fail(f"no fsync of the directory {directory} after the rename")
print(f"order ok: flock #{locked} < create #{created} < {len(writes)} write(s) of {written} bytes < "
      f"fsync #{syncs[0]} < rename #{rename} < directory fsync #{dir_syncs[0]}")
PYEOF
}

# A new cache, then an update of an existing one (re-read and merge under the lock).
traced_set "$SCRATCH/trace-new" 4096
check_order "$SCRATCH/trace-new"
traced_set "$SCRATCH/trace-update" 8192
check_order "$SCRATCH/trace-update"
expect_grep "$CACHE" '"parallel.minimum_elements" = 8192'
ls "$DIR" | grep -q '\.tmp-' && fail "temporary file left in $DIR: $(ls "$DIR")"
echo "ok"
