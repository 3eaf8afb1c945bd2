"""onnx_light.kernel_tuning: class profiles (issue 21): match=, host_class=, as_host= on set, and
the matched_by / in_force / shadowed_by / shadows keys of inspect and kernel_tuning_parameters."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from onnx_light import kernel_tuning

FLOAT = 1
MINIMUM = "parallel.minimum_elements"


def set_abs(path: Path, value: int, **options) -> dict:
    return kernel_tuning.set_kernel_tuning_parameters("Abs", FLOAT, {MINIMUM: value}, path=str(path), num_threads=2,
                                                      load=False, **options)


def abs_profiles(path: Path, match: str) -> list:
    """inspect's Abs float profiles at 2 threads whose host matches by `match`."""
    report = kernel_tuning.inspect_kernel_tuning_cache(str(path), user_only=True)
    return [p for p in report["profiles"]
            if p["kernel"] == "Abs" and p["element_type"] == FLOAT and p["effective_threads"] == 2
            and p["match"] == match]


def abs_entry(path: Path) -> dict:
    (entry,) = kernel_tuning.kernel_tuning_parameters("Abs", element_type=FLOAT, path=str(path),
                                                  num_threads=2)["kernels"]
    return entry


def test_host_matches_are_public():
    assert kernel_tuning.HOST_MATCHES == ("exact", "model", "microarchitecture", "isa")
    assert "HOST_MATCHES" in kernel_tuning.__all__
    for function in (kernel_tuning.set_kernel_tuning_parameters, kernel_tuning.calibrate_kernel_tuning):
        assert "match" in function.__doc__
    assert "host_class" in kernel_tuning.export_kernel_tuning_cache.__doc__
    assert "shadowed_by" in kernel_tuning.inspect_kernel_tuning_cache.__doc__


def test_a_model_profile_is_in_force_until_an_exact_one_shadows_it(tmp_path):
    cache = tmp_path / "kernel_tuning.cache"
    set_abs(cache, 32768, match="model")
    text = cache.read_text()
    assert "format_version = 2\n" in text and 'match = "model"\n' in text and "\nstepping = " not in text
    (model,) = abs_profiles(cache, "model")
    assert (model["classification"], model["matched_by"], model["in_force"]) == ("loaded", "model", True)
    assert model["shadowed"] is False and model["shadowed_by"] is None
    entry = abs_entry(cache)
    assert (entry["matched_by"], entry["shadows"], entry["cached_values"][MINIMUM]) == ("model", [], 32768)

    set_abs(cache, 8192)  # exact, same key and threads
    (model,) = abs_profiles(cache, "model")
    (exact,) = abs_profiles(cache, "exact")
    assert (exact["matched_by"], exact["in_force"], exact["shadowed_by"]) == ("exact", True, None)
    assert (model["matched_by"], model["in_force"], model["shadowed"]) == ("model", False, True)
    assert model["shadowed_by"] == {"layer": "user", "index": exact["index"], "matched_by": "exact"}
    entry = abs_entry(cache)
    assert entry["matched_by"] == "exact" and entry["cached_values"][MINIMUM] == 8192
    assert entry["shadows"] == [{"layer": "user", "index": model["index"], "matched_by": "model"}]


def test_omitted_values_come_from_the_profile_of_the_same_class(tmp_path):
    cache = tmp_path / "kernel_tuning.cache"
    set_abs(cache, 4096)
    report = kernel_tuning.set_kernel_tuning_parameters(
        "Abs", FLOAT, {"store.streaming_minimum_elements": 1 << 20}, path=str(cache), num_threads=2, load=False,
        match="model")
    # The exact profile's 4096 is not the model class's: the class profile starts from the default.
    assert report["values"][MINIMUM] == abs_entry(cache)["defaults"][MINIMUM] != 4096


def test_export_host_class_model_generalises_exact_profiles(tmp_path):
    cache = tmp_path / "kernel_tuning.cache"
    kernel_tuning.set_kernel_tuning_parameters("Abs", FLOAT, {MINIMUM: 1024}, path=str(cache), num_threads=1,
                                               load=False)
    set_abs(cache, 4096)
    assert "format_version = 1\n" in cache.read_text()
    out = tmp_path / "model.cache"
    report = kernel_tuning.export_kernel_tuning_cache(out, cache, host_class="model")
    assert report["status"] == "exported" and report["host_class"] == "model" and report["exported_count"] == 2
    assert [p["match"] for p in report["profiles"]] == ["model", "model"]
    text = out.read_text()
    assert "format_version = 2\n" in text and text.count('match = "model"\n') == 2 and "\nstepping = " not in text
    loaded = kernel_tuning.inspect_kernel_tuning_cache(str(out), user_only=True)["profiles"]
    assert sorted((p["effective_threads"], p["matched_by"], p["in_force"]) for p in loaded) == [
        (1, "model", True), (2, "model", True)]
    # The default leaves them exact.
    exact = kernel_tuning.export_kernel_tuning_cache(tmp_path / "exact.cache", cache)
    assert exact["host_class"] == "exact" and {p["match"] for p in exact["profiles"]} == {"exact"}


@pytest.mark.parametrize("call", [
    lambda cache: set_abs(cache, 4096, match="stepping"),
    lambda cache: kernel_tuning.export_kernel_tuning_cache(cache.parent / "x.cache", cache, host_class="bogus"),
    lambda cache: kernel_tuning.calibrate_kernel_tuning("Abs", save=False, path=str(cache), match="everything",
                                                        maximum_duration_ms=10),
])
def test_an_unknown_class_is_a_value_error_naming_the_classes(tmp_path, call):
    cache = tmp_path / "kernel_tuning.cache"
    set_abs(cache, 2048)
    before = cache.read_bytes()
    with pytest.raises(ValueError, match=r"use exact, model, microarchitecture or isa"):
        call(cache)
    assert cache.read_bytes() == before
    assert not (tmp_path / "x.cache").exists()


def test_a_match_of_the_wrong_type_is_a_type_error(tmp_path):
    with pytest.raises(TypeError, match="match must be a str"):
        set_abs(tmp_path / "kernel_tuning.cache", 2048, match=2)


def test_calibrate_saves_a_class_profile(tmp_path):
    cache = tmp_path / "kernel_tuning.cache"
    report = kernel_tuning.calibrate_kernel_tuning("Abs", path=str(cache), num_threads=2, match="isa",
                                                   maximum_duration_ms=200, force_save=True)
    assert report["cache_update"]["status"] == "updated"
    (isa,) = abs_profiles(cache, "isa")
    assert isa["matched_by"] == "isa" and isa["in_force"] and isa["provenance"]["source"].startswith("calibrate")


@pytest.mark.skipif(not os.environ.get("ONNX_LIGHT_CLI"), reason="needs ONNX_LIGHT_CLI (set by ctest)")
def test_set_as_host_writes_another_hosts_profile(tmp_path):
    host = json.loads(subprocess.run([os.environ["ONNX_LIGHT_CLI"], "host", "--json", "--threads", "2"],
                                     check=True, capture_output=True, text=True).stdout)
    other = tmp_path / "other.json"
    other.write_text(json.dumps(dict(host, stepping=host["stepping"] + 5, hostname="sim-other")))
    cache = tmp_path / "kernel_tuning.cache"
    set_abs(cache, 2048, as_host=other)
    (exact,) = abs_profiles(cache, "exact")
    assert exact["stepping"] == host["stepping"] + 5
    assert (exact["classification"], exact["matched_by"], exact["in_force"]) == ("incompatible", None, False)
    # Its model class applies here: same vendor, family and model.
    set_abs(cache, 16384, as_host=other, match="model")
    (model,) = abs_profiles(cache, "model")
    assert (model["classification"], model["matched_by"], model["in_force"]) == ("loaded", "model", True)
