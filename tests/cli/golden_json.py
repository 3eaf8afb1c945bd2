"""Golden files for the --json output of every onnx-light-tune verb (issue 23).

Runs each verb against a scratch cache, normalises what legitimately differs between runs and
machines, and compares the rest -- every key, the structure, and every stable value -- with
tests/cli/golden/<case>.json. With --update it rewrites the golden files instead (review the diff
before committing: a changed golden file is a changed public contract).

Usage: golden_json.py TOOL SCRATCH_DIR [--update]
(tests/cli/test_golden_json.sh runs it under ctest; scripts pass the tool the build made.)

The normaliser (normalise() below) replaces, and only replaces:
  - paths: the scratch directory -> "<scratch>", the source tree -> "<source>";
  - RFC 3339 timestamps ("2026-12-03T15:51:26Z") -> "<timestamp>";
  - provenance.tool_version -> "<tool_version>", after checking it equals the version
    `--version` prints;
  - provenance.hostname -> "<hostname>", after checking it is this machine's hostname (profiles
    written by older versions have "", which stays);
  - host fields that describe this CPU (vendor, family, model, stepping, microarchitecture,
    features, cache sizes, core counts) -> "<host.FIELD>", after checking their types; the
    architecture and effective_threads stay (the cases pin --threads);
  - the implementation a kernel dispatches to on this CPU, where a case leaves it to dispatch
    ("avx2", "avx512", "portable" depending on the ISA) -> "<dispatched>", after checking it is
    the one `list` reports for that kernel, and the values that depend on it (that
    implementation's defaults) -> "<dispatched defaults>", after checking they equal them;
  - measured values (latencies, wall times, calibrated values, the sizes, picks, brackets and
    verdicts of a calibration, and the text of its diagnostics, which quote them) -> "<measured>";
    a measured field may be a scalar, null or an object (a calibration's bracket is null until
    a crossover is found), never a list;
  - lists whose length is measured (a calibration's cases, picks, diagnostics) -> the sorted
    distinct normalised forms of their elements, so the golden file holds each element's shape;
  each case names the JSON paths it treats as measured ("a.*.b", * = any key or index); nothing
  else is touched.
Everything else must be equal: keys, list lengths, strings, numbers, booleans, nulls.
The cases pin what would otherwise follow the machine: --threads, --element-type, and
--implementation where dispatch is not the point.
"""
import difflib
import socket
import json
import os
import re
import subprocess
import sys

HOST_FIELDS = {
    "vendor": str, "family": int, "model": int, "stepping": int, "microarchitecture": str,
    "features": list, "l1d_cache_bytes": int, "l2_cache_bytes": int, "l3_cache_bytes": int,
    "physical_cores": int, "logical_cores": int,
}
TIMESTAMP = re.compile(r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z\b")


class Mismatch(Exception):
    pass


def fail(message):
    raise Mismatch(message)


class Context:
    def __init__(self, tool, scratch, source):
        self.tool = tool
        self.scratch = os.path.realpath(scratch)
        self.source = os.path.realpath(source)
        self.cache = os.path.join(self.scratch, "golden.cache")  # "<scratch>/golden.cache" in goldens
        self.version = None
        self.dispatch = {}  # (kernel, element_type) -> list entry of the dispatched key

    def run(self, *args, expect_exit=0):
        env = dict(os.environ)
        env.pop("ONNX_LIGHT_TUNING_CACHE", None)
        env["HOME"] = os.path.join(self.scratch, "home")
        env["XDG_CACHE_HOME"] = os.path.join(self.scratch, "xdg-cache")
        env["ONNX_LIGHT_SYSTEM_TUNING_CACHE"] = os.path.join(self.scratch, "no-system.cache")
        env["NO_COLOR"] = "1"
        done = subprocess.run([self.tool, *args], capture_output=True, text=True, env=env, cwd=self.scratch)
        if done.returncode != expect_exit:
            fail(f"{' '.join(args)}: exit {done.returncode}, expected {expect_exit}\n"
                 f"--- stdout\n{done.stdout}--- stderr\n{done.stderr}")
        return done.stdout

    def json(self, *args, expect_exit=0):
        text = self.run(*args, expect_exit=expect_exit)
        try:
            return json.loads(text)
        except json.JSONDecodeError as error:
            fail(f"{' '.join(args)}: not JSON ({error}):\n{text}")


def path_matches(path, pattern):
    """path: tuple of keys/indices; pattern: tuple where '*' matches any one key or index."""
    return len(path) == len(pattern) and all(p == "*" or p == k for k, p in zip(path, pattern))


def parse_pattern(text):
    return tuple(int(part) if part.isdigit() else part for part in text.split("."))


def matches_any(path, patterns):
    return any(path_matches(path, parse_pattern(p)) for p in patterns)


def normalise(value, ctx, measured=(), measured_lists=(), path=()):
    """A copy of `value` with the replacements listed in the module docstring."""
    where = ".".join(map(str, path))
    if matches_any(path, measured):
        if isinstance(value, list):
            fail(f"{where}: measured field is the list {json.dumps(value)}; name it in measured_lists")
        return "<measured>"
    if matches_any(path, measured_lists):
        if not isinstance(value, list):
            fail(f"{where}: measured list is {json.dumps(value)}")
        forms = {json.dumps(normalise(item, ctx, measured, measured_lists, path + ("*",)), sort_keys=True)
                 for item in value}
        return [json.loads(form) for form in sorted(forms)]
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key == "tool_version" and isinstance(item, str):
                if item != ctx.version:
                    fail(f"{where}.{key} is {item!r}, --version says {ctx.version!r}")
                out[key] = "<tool_version>"
            elif key == "hostname" and "provenance" in path and isinstance(item, str):
                if item not in ("", socket.gethostname()):
                    fail(f"{where}.{key} is {item!r}, this machine is {socket.gethostname()!r}")
                out[key] = "<hostname>" if item else ""
            elif key in HOST_FIELDS and ("host" in path or "architecture" in value):
                if not isinstance(item, HOST_FIELDS[key]) or isinstance(item, bool):
                    fail(f"{where}.{key}: {item!r} is not {HOST_FIELDS[key].__name__}")
                out[key] = f"<host.{key}>"
            else:
                out[key] = normalise(item, ctx, measured, measured_lists, path + (key,))
        return out
    if isinstance(value, list):
        return [normalise(item, ctx, measured, measured_lists, path + (i,)) for i, item in enumerate(value)]
    if isinstance(value, str):
        text = value.replace(ctx.scratch, "<scratch>").replace(ctx.source, "<source>")
        return TIMESTAMP.sub("<timestamp>", text)
    return value


def replace_dispatched(entry, ctx, kernel_field="kernel", values_fields=("defaults", "active_values")):
    """In one kernel entry, swaps the dispatched implementation and its defaults for placeholders."""
    key = (entry[kernel_field], entry["element_type"])
    dispatched = ctx.dispatch.get(key)
    if dispatched is None:
        fail(f"no dispatched implementation known for {key}")
    if entry["implementation"] != dispatched["implementation"] or entry["tuning_abi"] != dispatched["tuning_abi"]:
        fail(f"{key}: ran {entry['implementation']} abi {entry['tuning_abi']}, `list` dispatches "
             f"{dispatched['implementation']} abi {dispatched['tuning_abi']}")
    entry["implementation"] = "<dispatched>"
    entry["tuning_abi"] = "<dispatched>"
    for field in values_fields:
        if field in entry and field != "defaults":
            if entry[field] != dispatched["defaults"]:
                fail(f"{key}: {field} {entry[field]} are not the dispatched defaults {dispatched['defaults']}")
            entry[field] = "<dispatched defaults>"
    if "defaults" in entry:
        entry["defaults"] = "<dispatched defaults>"
    if "parameter_names" in entry:
        if sorted(entry["parameter_names"]) != sorted(dispatched["defaults"]):
            fail(f"{key}: parameter names {entry['parameter_names']} differ from the defaults' names")
        entry["parameter_names"] = "<dispatched parameter names>"


# A profile of another machine, written into the scratch cache before the first `set`: every
# writer must keep it, and inspect/load must classify it as incompatible.
FOREIGN_PROFILE = """format = "onnx-light-kernel-tuning"
format_version = 1

[[profile]]
library = "onnx_light"
kernel = "Abs"
implementation = "portable"
element_type = 1
device = -1
tuning_abi = 2
[profile.host]
architecture = "aarch64"
vendor = "arm"
family = 65
model = 3340
stepping = 17
microarchitecture = "neoverse-n1"
features = ["asimd", "fp16"]
l1d_cache_bytes = 65536
l2_cache_bytes = 1048576
l3_cache_bytes = 33554432
physical_cores = 64
logical_cores = 64
effective_threads = 2
[profile.values]
"parallel.minimum_elements" = 131072
[profile.provenance]
source = "set"
written = 2026-11-30T23:59:59Z
tool_version = "0.1.0"
"""

FLOAT_AND_DOUBLE = ("--element-type", "float", "--element-type", "double")


# Each case returns the normalised JSON document of one command; they run in order against one
# cache, as a user's session would.
def case_list(ctx):
    # Pinned implementation and types: the same document on every ISA.
    return normalise(ctx.json("--cache", ctx.cache, "list", "--kernel", "Abs", "--kernel", "Gemm", "--element-type",
                              "float", "--implementation", "portable", "--threads", "2", "--json"), ctx)


def case_list_dispatched(ctx):
    doc = ctx.json("--cache", ctx.cache, "list", "Abs", "Relu", "--element-type", "float", "--threads", "2", "--json")
    for entry in doc["kernels"]:
        replace_dispatched(entry, ctx)
    return normalise(doc, ctx)


def case_propose(ctx):
    return normalise(ctx.json("--cache", ctx.cache, "propose", "Abs", "Relu", *FLOAT_AND_DOUBLE, "--implementation",
                              "portable", "--threads", "2", "--json"), ctx)


def case_set(ctx):
    with open(ctx.cache, "w") as out:
        out.write(FOREIGN_PROFILE)
    return normalise(ctx.json("--cache", ctx.cache, "set", "Abs", "parallel.minimum_elements=8192",
                              "--implementation", "portable", "--threads", "2", "--json"), ctx)


def case_set_second_key(ctx):
    return normalise(ctx.json("--cache", ctx.cache, "set", "Relu", "parallel.minimum_elements=64K", "--element-type",
                              "double", "--implementation", "portable", "--threads", "2", "--json"), ctx)


def case_set_one_thread(ctx):
    return normalise(ctx.json("--cache", ctx.cache, "set", "Abs", "parallel.minimum_elements=1M",
                              "--implementation", "portable", "--threads", "1", "--no-load", "--json"), ctx)


def case_inspect(ctx):
    return normalise(ctx.json("--cache", ctx.cache, "inspect", "--threads", "2", "--json"), ctx)


def case_load(ctx):
    return normalise(ctx.json("--cache", ctx.cache, "load", "--kernel", "Abs", "--kernel", "Relu", *FLOAT_AND_DOUBLE,
                              "--implementation", "portable", "--threads", "2", "--json"), ctx)


def case_propose_after_set(ctx):
    return case_propose(ctx)


def case_calibrate(ctx):
    # A tiny fixed budget: what it measures varies, the report's shape and identity do not.
    doc = ctx.json("--cache", ctx.cache, "calibrate", "Abs", "--implementation", "portable", "--threads", "2",
                   "--max-duration-ms", "300", "--max-memory", "1M", "--no-save", "--json")
    return normalise(doc, ctx, measured=(
        "calibrated.*.values.*", "elapsed_ms", "diagnostics.*.message",
        "measurements.*.agreement", "measurements.*.bracket", "measurements.*.changed_default",
        "measurements.*.elapsed_ms", "measurements.*.picks.*", "measurements.*.cases.*.candidate_wins",
        "measurements.*.cases.*.descriptions.*", "measurements.*.cases.*.median_ns.*",
        "measurements.*.cases.*.size", "measurements.*.confidence", "measurements.*.noisy",
        "measurements.*.cases.*.ratio", "measurements.*.cases.*.ratio_interval.*", "measurements.*.cases.*.verdict",
        "measurements.*.cases.*.fitted_ratio",
        "measurements.*.cases.*.pairs", "measurements.*.cases.*.retested", "measurements.*.cases.*.refined",
        "measurements.*.cases.*.pair_ratios.*", "measurements.*.contention",
    ), measured_lists=("diagnostics", "measurements.*.cases", "measurements.*.picks",
                       "measurements.*.cases.*.pair_ratios"))


def case_run(ctx):
    doc = ctx.json("run", os.path.join(ctx.source, "examples", "abs.onnxtxt"), "-i", "x=random:3", "--dim", "N=1000",
                   "-t", "2", "-r", "3", "--max-memory", "64M", "--profile", "--json")
    for entry in doc.get("tuning", []):
        replace_dispatched(entry, ctx)
    for node in doc.get("profile", {}).get("nodes", []):
        # What ran: the dispatched implementation (Abs reports no other path).
        dispatched = ctx.dispatch.get((node["op_type"], 1))
        if dispatched is None or node["implementation"] != dispatched["implementation"]:
            fail(f"profile node {node['node']}: ran {node['implementation']}, `list` dispatches {dispatched}")
        node["implementation"] = "<dispatched>"
    return normalise(doc, ctx, measured=("latency_us.min", "latency_us.median", "latency_us.p90",
                                         "parallel_regions.events.*.wall_time_ns", "profile.total_us",
                                         "profile.nodes_us", "profile.nodes.*.total_us", "profile.nodes.*.mean_us",
                                         "profile.op_types.*.total_us"))


def case_verify(ctx):
    # Abs portable at 8192 (case_set) measured again: whether it holds depends on the machine.
    doc = ctx.json("--cache", ctx.cache, "verify", "Abs", "--implementation", "portable", "--threads", "2",
                   "--max-duration-ms", "200", "--json")
    return normalise(doc, ctx, measured=(
        "elapsed_ms", "profiles.*.measured", "profiles.*.status", "profiles.*.confidence", "profiles.*.reason",
        "profiles.*.elapsed_ms", "summary.*"))


def case_remove_kernel(ctx):
    return normalise(ctx.json("--cache", ctx.cache, "remove", "--kernel", "Abs", "--threads", "2", "--yes", "--json"),
                     ctx)


def case_remove_file(ctx):
    return normalise(ctx.json("--cache", ctx.cache, "remove", "--yes", "--json"), ctx)


def case_inspect_missing(ctx):
    return normalise(ctx.json("--cache", ctx.cache, "inspect", "--json", expect_exit=1), ctx)


# The fleet verbs (issue 21) on files of their own: this machine's two profiles (Abs float and Relu
# double, portable, 2 threads) beside FOREIGN_PROFILE, and a file from "another machine" whose Abs
# conflicts with FOREIGN_PROFILE (a later value) and which adds a Relu of its own.
def fleet_file(ctx, name):
    return os.path.join(ctx.scratch, name)


def conflicting_profiles():
    later = FOREIGN_PROFILE.replace('"parallel.minimum_elements" = 131072', '"parallel.minimum_elements" = 262144')
    later = later.replace("written = 2026-11-30T23:59:59Z", "written = 2026-12-01T08:00:00Z")
    relu = later[later.index("[[profile]]"):].replace('kernel = "Abs"', 'kernel = "Relu"')
    return later + "\n" + relu


def case_export(ctx):
    with open(ctx.cache, "w") as out:
        out.write(FOREIGN_PROFILE)
    ctx.run("--cache", ctx.cache, "set", "Abs", "parallel.minimum_elements=8192", "--implementation", "portable",
            "--threads", "2", "--no-load")
    ctx.run("--cache", ctx.cache, "set", "Relu", "parallel.minimum_elements=64K", "--element-type", "double",
            "--implementation", "portable", "--threads", "2", "--no-load")
    with open(fleet_file(ctx, "other-machine.cache"), "w") as out:
        out.write(conflicting_profiles())
    with open(fleet_file(ctx, "foreign.cache"), "w") as out:
        out.write(FOREIGN_PROFILE)
    return normalise(ctx.json("--cache", ctx.cache, "export", "-o", fleet_file(ctx, "exported.cache"), "--json"), ctx)


def case_import(ctx):
    return normalise(ctx.json("--cache", ctx.cache, "import", fleet_file(ctx, "other-machine.cache"),
                              fleet_file(ctx, "exported.cache"), "--on-conflict", "newest", "--json"), ctx)


def case_merge(ctx):
    return normalise(ctx.json("merge", fleet_file(ctx, "exported.cache"), fleet_file(ctx, "other-machine.cache"),
                              "-o", fleet_file(ctx, "merged.cache"), "--json"), ctx)


def case_merge_conflict(ctx):
    return normalise(ctx.json("merge", fleet_file(ctx, "foreign.cache"), fleet_file(ctx, "other-machine.cache"),
                              "-o", fleet_file(ctx, "not-written.cache"), "--json", expect_exit=1), ctx)


def case_diff(ctx):
    return normalise(ctx.json("diff", fleet_file(ctx, "foreign.cache"), fleet_file(ctx, "merged.cache"), "--json"),
                     ctx)


CASES = [
    ("list", case_list),
    ("list_dispatched", case_list_dispatched),
    ("propose", case_propose),
    ("set", case_set),
    ("set_second_key", case_set_second_key),
    ("set_one_thread", case_set_one_thread),
    ("inspect", case_inspect),
    ("load", case_load),
    ("propose_after_set", case_propose_after_set),
    ("calibrate", case_calibrate),
    ("run", case_run),
    ("verify", case_verify),
    ("remove_kernel", case_remove_kernel),
    ("remove_file", case_remove_file),
    ("inspect_missing", case_inspect_missing),
    ("export", case_export),
    ("import", case_import),
    ("merge", case_merge),
    ("merge_conflict", case_merge_conflict),
    ("diff", case_diff),
]
# `--version` prints text only (no --json); its version is checked against every tool_version.


def learn_host(ctx):
    """The tool's version and the implementation each kernel dispatches to on this CPU."""
    version = ctx.run("--version")
    match = re.search(r"onnx-light-tune (\S+)", version)
    if not match:
        fail(f"no version in --version output:\n{version}")
    ctx.version = match.group(1)
    doc = ctx.json("--cache", ctx.cache, "list", "--threads", "2", "--json")
    for entry in doc["kernels"]:
        ctx.dispatch[(entry["kernel"], entry["element_type"])] = entry


def main():
    args = [a for a in sys.argv[1:] if a != "--update"]
    update = "--update" in sys.argv[1:]
    if len(args) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    tool, scratch = args
    here = os.path.dirname(os.path.abspath(__file__))
    golden_dir = os.path.join(here, "golden")
    source = os.path.dirname(os.path.dirname(here))
    os.makedirs(os.path.join(scratch, "home"), exist_ok=True)
    ctx = Context(tool, scratch, source)
    failures = []
    try:
        learn_host(ctx)
    except Mismatch as error:
        print(f"FAIL: {error}", file=sys.stderr)
        return 1
    seen = set()
    for name, case in CASES:
        golden_path = os.path.join(golden_dir, f"{name}.json")
        seen.add(os.path.basename(golden_path))
        try:
            got = case(ctx)
        except Mismatch as error:
            failures.append(f"{name}: {error}")
            continue
        text = json.dumps(got, indent=2, sort_keys=True) + "\n"
        if update:
            with open(golden_path, "w") as out:
                out.write(text)
            print(f"wrote {golden_path}")
            continue
        if not os.path.exists(golden_path):
            failures.append(f"{name}: no golden file {golden_path} (run with --update to create it)")
            continue
        with open(golden_path) as f:
            want = f.read()
        if json.loads(want) != got:
            diff = "".join(difflib.unified_diff(want.splitlines(True), text.splitlines(True),
                                                f"golden/{name}.json", f"{name} (this build)"))
            failures.append(f"{name}: the output differs from the golden file:\n{diff}")
        else:
            print(f"ok {name}")
    stray = sorted(set(f for f in os.listdir(golden_dir) if f.endswith(".json")) - seen)
    if stray and not update:
        failures.append(f"golden files without a case: {', '.join(stray)}")
    for failure in failures:
        print(f"FAIL: {failure}", file=sys.stderr)
    if failures:
        print("If the change is intended, rerun with --update and review the diff "
              "(bash tests/cli/test_golden_json.sh TOOL SCRATCH --update).", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
