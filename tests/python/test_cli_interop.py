"""Python and the onnx-light-tune CLI read and write the same cache, and report the same dictionaries.

Exact comparisons run the Python side in a fresh interpreter, so that neither side has published
anything the other has not (the tuning registry is per process).
"""
from __future__ import annotations

import json
from pathlib import Path

from conftest import abs_float_values, python_json, sandbox_env

from onnx_light import kernel_tuning


def py_report(call: str, env: dict) -> dict:
    return python_json(
        "import json\nfrom onnx_light import kernel_tuning\n"
        f"print(json.dumps({call}))",
        env,
    )


def test_cli_writes_python_reads(run_cli, tmp_path):
    cache = tmp_path / "cli.cache"
    run_cli("--cache", str(cache), "set", "Abs", "parallel.minimum_elements=24576", "--threads", "2", "--json")
    inspection = kernel_tuning.inspect_kernel_tuning_cache(cache)
    assert inspection["status"] == "loaded"
    (profile,) = inspection["profiles"]
    assert profile["values"] == abs_float_values(24576)
    assert profile["effective_threads"] == 2 and profile["classification"] == "loaded"
    load = kernel_tuning.load_kernel_tuning_cache(cache)
    assert [key["kernel"] for key in load["loaded"]] == ["Abs"]
    (entry,) = kernel_tuning.kernel_tuning_parameters(kernel="Abs", element_type=1, path=cache,
                                                      num_threads=2)["kernels"]
    assert entry["cached_values"] == abs_float_values(24576)
    assert entry["active_values"] == abs_float_values(24576)


def test_python_writes_cli_reads(run_cli, tmp_path):
    cache = tmp_path / "py.cache"
    update = kernel_tuning.set_kernel_tuning_parameters("Abs", 1, {"parallel.minimum_elements": 20000},
                                                        path=cache, num_threads=2, load=False)
    assert update["status"] == "updated"
    listed = json.loads(run_cli("--cache", str(cache), "list", "Abs", "--element-type", "float", "--threads", "2",
                                "--json").stdout)
    (entry,) = listed["kernels"]
    assert entry["cached_values"] == abs_float_values(20000)
    assert entry["active_values"] == abs_float_values(20000)
    assert entry["active_source"] == "published_profile"
    inspected = json.loads(run_cli("--cache", str(cache), "inspect", "--json").stdout)
    assert inspected["profiles"][0]["values"] == abs_float_values(20000)


def test_alternating_writers_merge_into_one_file(run_cli, tmp_path):
    cache = tmp_path / "shared.cache"
    kernel_tuning.set_kernel_tuning_parameters("Abs", 1, {"parallel.minimum_elements": 1000}, path=cache,
                                               num_threads=1, load=False)
    run_cli("--cache", str(cache), "set", "Abs", "parallel.minimum_elements=2000", "--threads", "2")
    kernel_tuning.set_kernel_tuning_parameters("Abs", "double", {"parallel.minimum_elements": 3000}, path=cache,
                                               num_threads=2, load=False)
    run_cli("--cache", str(cache), "set", "Abs", "parallel.minimum_elements=1500", "--threads", "1")
    profiles = kernel_tuning.inspect_kernel_tuning_cache(cache)["profiles"]
    seen = {(p["element_type"], p["effective_threads"]): p["values"]["parallel.minimum_elements"] for p in profiles}
    assert seen == {(1, 1): 1500, (1, 2): 2000, (11, 2): 3000}
    cli_view = json.loads(run_cli("--cache", str(cache), "inspect", "--json").stdout)
    assert cli_view == kernel_tuning.inspect_kernel_tuning_cache(cache)


def test_same_dictionaries_as_cli_json(run_cli, tmp_path):
    env = sandbox_env(tmp_path)
    cache = str(tmp_path / "same.cache")
    run_cli("--cache", cache, "set", "Abs", "parallel.minimum_elements=16384", "--threads", "2", env=env)

    cli_list = json.loads(run_cli("--cache", cache, "list", "Abs", "--element-type", "1", "--threads", "2",
                                  "--json", env=env).stdout)
    # `list` publishes the cache first; do the same in Python.
    py_list = python_json(
        "import json\nfrom onnx_light import kernel_tuning\n"
        f"kernel_tuning.load_kernel_tuning_cache({cache!r})\n"
        f"print(json.dumps(kernel_tuning.kernel_tuning_parameters(kernel='Abs', element_type=1, path={cache!r}, "
        "num_threads=2)))",
        env,
    )
    assert py_list == cli_list

    cli_propose = json.loads(run_cli("--cache", cache, "propose", "Abs", "--threads", "2", "--json", env=env).stdout)
    assert py_report(f"kernel_tuning.propose_kernel_tuning_updates(kernels=['Abs'], path={cache!r}, num_threads=2)",
                     env) == cli_propose

    cli_inspect = json.loads(run_cli("--cache", cache, "inspect", "--json", env=env).stdout)
    assert py_report(f"kernel_tuning.inspect_kernel_tuning_cache({cache!r})", env) == cli_inspect

    cli_load = json.loads(run_cli("--cache", cache, "load", "--json", env=env).stdout)
    py_load = py_report(f"kernel_tuning.load_kernel_tuning_cache({cache!r})", env)
    # The generation counts publications in each process; everything else is the same.
    assert py_load.pop("published_generation") >= 1 and cli_load.pop("published_generation") >= 1
    assert py_load == cli_load

    cli_set = json.loads(run_cli("--cache", cache, "set", "Abs", "parallel.minimum_elements=8192", "--threads", "2",
                                 "--json", env=env).stdout)
    py_set = py_report(
        f"kernel_tuning.set_kernel_tuning_parameters('Abs', 1, {{'parallel.minimum_elements': 8192}}, "
        f"path={cache!r}, num_threads=2)", env)
    cli_set["load"].pop("published_generation")
    py_set["load"].pop("published_generation")
    assert py_set == cli_set


def test_python_calibration_saved_is_read_by_cli(run_cli, tmp_path):
    cache = tmp_path / "calibrated.cache"
    report = kernel_tuning.calibrate_kernel_tuning("Abs", element_types=[1], maximum_duration_ms=60,
                                                   maximum_memory_bytes=4 << 20, path=cache, num_threads=2,
                                                   force_save=True)  # saved whatever this machine's noise
    assert report["cache_update"]["status"] == "updated"
    chosen = report["calibrated"][0]["values"]
    listed = json.loads(run_cli("--cache", str(cache), "list", "Abs", "--threads", "2", "--json").stdout)
    (entry,) = [e for e in listed["kernels"] if e["element_type"] == 1]
    assert entry["cached_values"] == chosen
    inspected = json.loads(run_cli("--cache", str(cache), "inspect", "--json").stdout)
    # A forced save is labelled by what it was: measured and agreeing, or forced past low confidence.
    (measurement,) = report["measurements"]
    want = ("calibrate-unmeasured" if not measurement["measured"]
            else "calibrate-low-confidence" if measurement["confidence"] == "low" else "calibrate")
    assert inspected["profiles"][0]["provenance"]["source"] == want


def test_cli_remove_then_python_sees_nothing(run_cli, tmp_path):
    cache = tmp_path / "removed.cache"
    kernel_tuning.set_kernel_tuning_parameters("Abs", 1, {"parallel.minimum_elements": 1000}, path=cache,
                                               load=False)
    run_cli("--cache", str(cache), "remove", "--yes")
    assert not Path(cache).exists()
    assert kernel_tuning.inspect_kernel_tuning_cache(cache)["status"] == "not_found"
    assert kernel_tuning.remove_kernel_tuning_cache(cache)["status"] == "not_found"
