#!/usr/bin/env bash
# The fleet recipe (issue 21, "The fleet recipe, runnable and tested"): runs examples/fleet/playbook.yml
# with ansible-playbook against localhost (ansible_connection=local). Three inventory hosts of two
# hardware classes are simulated with --as-host descriptors made from this machine's: a1 and a2 are
# this CPU model at two other steppings, b1 another family and model. Each host has its own user
# cache and system-cache path in the scratch dir. The first host of each class writes its class's
# profile (`set --as-host`, through fleet_calibrate_args: calibrating on a shared machine may
# legitimately save nothing), exports it as a model class profile, the controller merges, the merged
# file is pushed as every host's system cache, and the play verifies with inspect. Afterwards this
# script checks the pushed caches itself: each host has its class's profile in force, matched by
# model (a2 never wrote one, and differs from a1 in stepping). Then a run selecting a kernel nobody
# calibrated must fail the play.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
SRC="${ONNX_LIGHT_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
PLAYBOOK="$SRC/examples/fleet/playbook.yml"
[ -f "$PLAYBOOK" ] || fail "$PLAYBOOK is missing"
ANSIBLE_PLAYBOOK=$(command -v ansible-playbook || true)
[ -n "$ANSIBLE_PLAYBOOK" ] || fail "ansible-playbook not found: install Debian's ansible-core (apt-get install ansible-core; scripts/install-deps.sh installs it)"

# Everything Ansible writes stays in the scratch dir (HOME is already there, see lib.sh).
export ANSIBLE_HOME="$SCRATCH/ansible" ANSIBLE_LOCAL_TEMP="$SCRATCH/ansible/tmp" \
  ANSIBLE_REMOTE_TEMP="$SCRATCH/ansible/remote-tmp" ANSIBLE_NOCOLOR=1 ANSIBLE_FORCE_COLOR=0 \
  ANSIBLE_RETRY_FILES_ENABLED=0 ANSIBLE_PIPELINING=1 ANSIBLE_PYTHON_INTERPRETER="$PY" ANSIBLE_LOCALHOST_WARNING=0 \
  ANSIBLE_CONFIG="$SCRATCH/ansible/ansible.cfg" ANSIBLE_COLLECTIONS_PATH="$SCRATCH/ansible/collections" \
  TMPDIR="$SCRATCH/tmp"
mkdir -p "$ANSIBLE_HOME/tmp" "$ANSIBLE_HOME/remote-tmp" "$TMPDIR" "$SCRATCH/controller"
: >"$ANSIBLE_CONFIG"
TOOL=$(readlink -f "$TOOL")  # the inventory names it; Ansible runs modules in its own directories

json() {
  $PY -c "import json, sys; r = json.load(open(sys.argv[1])); assert $2, r" "$1" || fail "$1: $2"
}

# --- three simulated hosts, two classes -----------------------------------------------------------
expect_exit 0 "$TOOL" host --json --threads 2
cp "$SCRATCH/out" "$SCRATCH/this.host.json"
for h in a1 a2 b1; do mkdir -p "$SCRATCH/hosts/$h"; done
$PY - "$SCRATCH/this.host.json" "$SCRATCH/hosts" <<'EOF'
import json, sys
h = json.load(open(sys.argv[1]))
d = sys.argv[2]
# a1, a2: this CPU model at two other steppings (so no exact profile of this machine can match them);
# b1: another family and model of the same vendor.
json.dump(dict(h, stepping=h["stepping"] + 11, hostname="a1"), open(f"{d}/a1/host.json", "w"))
json.dump(dict(h, stepping=h["stepping"] + 12, hostname="a2"), open(f"{d}/a2/host.json", "w"))
json.dump(dict(h, family=h["family"] + 1, model=h["model"] + 7, hostname="b1"), open(f"{d}/b1/host.json", "w"))
EOF

cat >"$SCRATCH/inventory.yml" <<EOF
fleet:
  vars:
    ansible_connection: local
    ansible_python_interpreter: $PY
    fleet_tool: $TOOL
    fleet_host_class: model
    fleet_kernels: [Abs]
    fleet_out_dir: $SCRATCH/controller
    fleet_remote_tmp: $SCRATCH/tmp
    fleet_cache: "$SCRATCH/hosts/{{ inventory_hostname }}/user.cache"
    fleet_system_cache: "$SCRATCH/hosts/{{ inventory_hostname }}/etc/onnx-light/kernel_tuning.cache"
    fleet_as_host: "$SCRATCH/hosts/{{ inventory_hostname }}/host.json"
    # What the first host of a class runs instead of a calibration: quick and deterministic.
    fleet_calibrate_args: [set, Abs, "parallel.minimum_elements={{ test_threshold }}", --as-host, "{{ fleet_as_host }}"]
  children:
    class_a:
      vars: {hardware_class: class-a, test_threshold: 4096}
      hosts: {a1: {}, a2: {}}
    class_b:
      vars: {hardware_class: class-b, test_threshold: 65536}
      hosts: {b1: {}}
EOF

# --- the play ------------------------------------------------------------------------------------
run_status "$ANSIBLE_PLAYBOOK" -i "$SCRATCH/inventory.yml" "$PLAYBOOK"
cp "$SCRATCH/out" "$SCRATCH/play.log"
if [ "$STATUS" != 0 ]; then
  cat "$SCRATCH/play.log" "$SCRATCH/err" >&2
  fail "ansible-playbook exited $STATUS"
fi
expect_grep "$SCRATCH/play.log" "a1 +: ok=[0-9]+ +changed=[0-9]+ +unreachable=0 +failed=0"
expect_grep "$SCRATCH/play.log" "a2 +: ok=[0-9]+ +changed=[0-9]+ +unreachable=0 +failed=0"
expect_grep "$SCRATCH/play.log" "b1 +: ok=[0-9]+ +changed=[0-9]+ +unreachable=0 +failed=0"
# Only the first host of each class calibrated (wrote a user cache).
[ -f "$SCRATCH/hosts/a1/user.cache" ] || fail "a1 (first of class-a) wrote no user cache"
[ -f "$SCRATCH/hosts/b1/user.cache" ] || fail "b1 (first of class-b) wrote no user cache"
[ ! -e "$SCRATCH/hosts/a2/user.cache" ] || fail "a2 calibrated though a1 did for its class"
# The exports and the merged file on the controller; no temporary export left on the hosts.
for c in class-a class-b; do
  [ -f "$SCRATCH/controller/exports/$c.cache" ] || fail "the controller did not receive $c's export: $(ls -R "$SCRATCH/controller")"
done
[ -z "$(ls -A "$SCRATCH/tmp")" ] || fail "the play left temporary files: $(ls -A "$SCRATCH/tmp")"
MERGED="$SCRATCH/controller/fleet.cache"
$PY - "$MERGED" "$SCRATCH/this.host.json" <<'EOF' || fail "the merged cache is not two model class profiles of Abs"
import json, sys, tomllib
doc = tomllib.load(open(sys.argv[1], "rb"))
h = json.load(open(sys.argv[2]))
assert doc["format"] == "onnx-light-kernel-tuning" and doc["format_version"] == 2, doc
ps = doc["profile"]
assert len(ps) == 2, ps
by_family = {p["host"]["family"]: p for p in ps}
assert set(by_family) == {h["family"], h["family"] + 1}, ps
for p in ps:
    assert p["kernel"] == "Abs" and p["host"]["match"] == "model", p
    assert "stepping" not in p["host"] and p["host"]["effective_threads"] == 2, p
assert by_family[h["family"]]["values"]["parallel.minimum_elements"] == 4096, ps
assert by_family[h["family"] + 1]["values"]["parallel.minimum_elements"] == 65536, ps
EOF
# Every host got the merged file, byte for byte, as its system cache.
for h in a1 a2 b1; do
  cmp -s "$MERGED" "$SCRATCH/hosts/$h/etc/onnx-light/kernel_tuning.cache" || fail "$h's system cache is not the merged file"
done

# --- each host, as its sessions would see it: its class's profile in force ---------------------
check_host() {  # HOST THRESHOLD: with an empty user cache (what a fresh host of the class has)
  local h="$1" want="$2"
  ONNX_LIGHT_SYSTEM_TUNING_CACHE="$SCRATCH/hosts/$h/etc/onnx-light/kernel_tuning.cache" \
    run_status "$TOOL" --cache "$SCRATCH/hosts/$h/absent.cache" inspect --json --kernel Abs --as-host "$SCRATCH/hosts/$h/host.json"
  cp "$SCRATCH/out" "$SCRATCH/$h.system.json"
  json "$SCRATCH/$h.system.json" "r['status'] == 'not_found' and r['system_cache']['status'] == 'loaded'"
  json "$SCRATCH/$h.system.json" "[(p['layer'], p['matched_by'], p['effective_threads'], p['values']['parallel.minimum_elements']) for p in r['profiles'] if p['in_force'] and p['local']] == [('system', 'model', 2, $want)]"
  # The other class's profile is there, not applied, and says why.
  json "$SCRATCH/$h.system.json" "sum(p['classification'] == 'incompatible' and not p['in_force'] for p in r['profiles']) == 1"
  expect_grep "$SCRATCH/$h.system.json" "a model profile of another class of machines"
}
check_host a1 4096
check_host a2 4096
check_host b1 65536
# On a1, with the user cache the play's set wrote: that exact profile is in force, the class's shadowed.
ONNX_LIGHT_SYSTEM_TUNING_CACHE="$SCRATCH/hosts/a1/etc/onnx-light/kernel_tuning.cache" \
  expect_exit 0 "$TOOL" --cache "$SCRATCH/hosts/a1/user.cache" inspect --json --kernel Abs --as-host "$SCRATCH/hosts/a1/host.json"
json "$SCRATCH/out" "[(p['layer'], p['matched_by']) for p in r['profiles'] if p['in_force']] == [('user', 'exact')]"
json "$SCRATCH/out" "[(p['layer'], p['shadowed_by']['matched_by']) for p in r['profiles'] if p['classification'] == 'loaded' and not p['in_force']] == [('system', 'exact')]"
# This machine itself (another stepping than a1 and a2) is of class a too.
ONNX_LIGHT_SYSTEM_TUNING_CACHE="$MERGED" run_status "$TOOL" --cache "$SCRATCH/absent.cache" inspect --json --kernel Abs --threads 2
json "$SCRATCH/out" "[p['values']['parallel.minimum_elements'] for p in r['profiles'] if p['in_force'] and p['local']] == [4096]"
# The play's own verification reported each host's profile.
expect_grep "$SCRATCH/play.log" "a2 \(class class-a\): Abs .* from the system cache, matched by model"
expect_grep "$SCRATCH/play.log" "b1 \(class class-b\): Abs .* from the user cache, matched by exact"

# --- a kernel no host calibrated: verifying (--tags verify) fails on every host, naming it --------
run_status "$ANSIBLE_PLAYBOOK" -i "$SCRATCH/inventory.yml" "$PLAYBOOK" --tags verify -e '{"fleet_kernels": ["Abs", "Relu"]}'
cp "$SCRATCH/out" "$SCRATCH/play-relu.log"
[ "$STATUS" = 2 ] || { cat "$SCRATCH/play-relu.log" >&2; fail "the play passed (exit $STATUS) though no host has a Relu profile"; }
for h in a1 a2 b1; do
  expect_grep "$SCRATCH/play-relu.log" "$h \(class class-[ab]\): no profile in force for Relu"
  expect_grep "$SCRATCH/play-relu.log" "$h +: ok=[0-9]+ +changed=[0-9]+ +unreachable=0 +failed=1"
done
# --- a class whose first host fails: nothing is merged or shipped ---------------------------------
sed 's/test_threshold: 65536/test_threshold: not-a-number/' "$SCRATCH/inventory.yml" >"$SCRATCH/inventory-broken.yml"
for h in a1 a2 b1; do sha256sum "$SCRATCH/hosts/$h/etc/onnx-light/kernel_tuning.cache"; done >"$SCRATCH/system.sums"
cp "$MERGED" "$SCRATCH/merged.before"
run_status "$ANSIBLE_PLAYBOOK" -i "$SCRATCH/inventory-broken.yml" "$PLAYBOOK"
cp "$SCRATCH/out" "$SCRATCH/play-broken.log"
[ "$STATUS" = 2 ] || { cat "$SCRATCH/play-broken.log" >&2; fail "the play passed (exit $STATUS) though class-b's calibration failed"; }
expect_grep "$SCRATCH/play-broken.log" "no export of class class-b .*nothing is merged or shipped"
sha256sum --quiet -c "$SCRATCH/system.sums" || fail "a system cache changed though a class had no export"
cmp -s "$MERGED" "$SCRATCH/merged.before" || fail "the controller's fleet.cache changed though a class had no export"
echo "fleet recipe: OK"
