"""onnx_light.kernel_tuning: every function's arguments, results and errors."""
from __future__ import annotations

import inspect
import os
import sys
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import abs_float_values

import onnx_light
from onnx_light import kernel_tuning
from onnx_light.onnx import TensorProto

FLOAT = int(TensorProto.FLOAT)
KEY_FIELDS = {"library", "kernel", "implementation", "element_type", "device", "device_name", "tuning_abi"}
ENTRY_FIELDS = KEY_FIELDS | {
    "parameter_names", "defaults", "calibratable", "cached_values", "matched_by", "shadows", "active_values",
    "active_source",
}
PUBLIC = [
    "default_kernel_tuning_cache_path",
    "kernel_tuning_parameters",
    "propose_kernel_tuning_updates",
    "set_kernel_tuning_parameters",
    "inspect_kernel_tuning_cache",
    "load_kernel_tuning_cache",
    "calibrate_kernel_tuning",
    "remove_kernel_tuning_cache",
]


def abs_default() -> int:
    (entry,) = kernel_tuning.kernel_tuning_parameters(kernel="Abs", element_type=FLOAT)["kernels"]
    return entry["defaults"]["parallel.minimum_elements"]


# ---- the module ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", PUBLIC)
def test_public_functions_have_docstrings(name):
    function = getattr(kernel_tuning, name)
    assert function.__doc__ and len(function.__doc__.strip()) > 40
    assert name in kernel_tuning.__all__


def test_keyword_arguments_of_design_section_5():
    def params(name):
        return set(inspect.signature(getattr(kernel_tuning, name)).parameters)

    assert {"kernel", "library", "implementation", "element_type", "path", "num_threads", "device"} <= params(
        "kernel_tuning_parameters")
    assert {"kernels", "element_types", "path", "num_threads"} <= params("propose_kernel_tuning_updates")
    assert {"kernel", "element_type", "values", "path", "num_threads", "load"} <= params(
        "set_kernel_tuning_parameters")
    assert {"path"} <= params("inspect_kernel_tuning_cache")
    assert {"path", "num_threads"} <= params("load_kernel_tuning_cache")
    assert {"kernel", "element_types", "maximum_duration_ms", "maximum_memory_bytes", "save", "path",
            "only_missing", "num_threads"} <= params("calibrate_kernel_tuning")
    assert {"path"} <= params("remove_kernel_tuning_cache")


# ---- default_kernel_tuning_cache_path ----------------------------------------------------------


def test_default_path_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.delenv("ONNX_LIGHT_TUNING_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert kernel_tuning.default_kernel_tuning_cache_path() == str(tmp_path / "xdg/onnx-light/kernel_tuning.cache")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert kernel_tuning.default_kernel_tuning_cache_path() == str(
        tmp_path / "home/.cache/onnx-light/kernel_tuning.cache")
    monkeypatch.setenv("ONNX_LIGHT_TUNING_CACHE", str(tmp_path / "explicit.cache"))
    assert kernel_tuning.default_kernel_tuning_cache_path() == str(tmp_path / "explicit.cache")


def test_default_path_without_any_variable_is_under_the_password_database_home(monkeypatch):
    import pwd
    for name in ("ONNX_LIGHT_TUNING_CACHE", "XDG_CACHE_HOME", "HOME"):
        monkeypatch.delenv(name, raising=False)
    home = pwd.getpwuid(os.geteuid()).pw_dir
    assert kernel_tuning.default_kernel_tuning_cache_path() == os.path.join(home, ".cache", "onnx-light",
                                                                            "kernel_tuning.cache")


# ---- kernel_tuning_parameters ------------------------------------------------------------------


def test_parameters_one_kernel_one_type_is_one_entry(cache_path):
    report = kernel_tuning.kernel_tuning_parameters(kernel="Abs", element_type=FLOAT, path=cache_path)
    assert set(report) == {"cache_path", "cache_status", "diagnostics", "kernels"}
    assert report["cache_path"] == cache_path
    assert report["cache_status"] == "not_found"
    (entry,) = report["kernels"]
    assert set(entry) == ENTRY_FIELDS
    assert entry["kernel"] == "Abs" and entry["element_type"] == 1 and entry["device"] == -1
    assert entry["device_name"] == "CPU" and entry["library"] == "onnx_light"
    assert entry["parameter_names"][0] == "parallel.minimum_elements"  # avx2 adds store.streaming_minimum_elements
    assert set(entry["defaults"]) == set(entry["parameter_names"])
    assert all(isinstance(value, int) for value in entry["defaults"].values())
    assert entry["cached_values"] is None
    assert entry["calibratable"] is True


def test_parameters_default_path_is_reported():
    report = kernel_tuning.kernel_tuning_parameters(kernel="Abs", element_type=FLOAT)
    assert report["cache_path"] == kernel_tuning.default_kernel_tuning_cache_path()


@pytest.mark.parametrize("spelling", [
    dict(kernel="Abs", element_type=1),
    dict(kernel=["Abs"], element_type=[1]),
    dict(kernels=("Abs",), element_types=[1]),
    dict(kernel="Abs", element_type="float"),
    dict(kernel="Abs", element_type="float32"),
    dict(kernel="Abs", element_type=np.int64(1)),
    dict(kernel="Abs", element_type=TensorProto.FLOAT),
])
def test_parameters_selection_spellings(spelling, cache_path):
    (entry,) = kernel_tuning.kernel_tuning_parameters(**spelling, path=cache_path)["kernels"]
    assert (entry["kernel"], entry["element_type"]) == ("Abs", 1)


def test_parameters_positional_order_matches_design(cache_path):
    # (kernel, library, implementation, element_type, path, num_threads, device)
    report = kernel_tuning.kernel_tuning_parameters("Abs", "onnx_light", None, 1, cache_path, 2, -1)
    (entry,) = report["kernels"]
    assert entry["kernel"] == "Abs"


def test_parameters_without_filters_lists_every_kernel(cache_path):
    kernels = kernel_tuning.kernel_tuning_parameters(path=cache_path)["kernels"]
    assert len(kernels) > 1
    assert {"Abs"} <= {entry["kernel"] for entry in kernels}


def test_parameters_path_like(tmp_path):
    report = kernel_tuning.kernel_tuning_parameters(kernel="Abs", element_type=1, path=tmp_path / "p.cache")
    assert report["cache_path"] == str(tmp_path / "p.cache")


def test_parameters_unknown_kernel_is_a_key_error(cache_path):
    with pytest.raises(KeyError) as error:
        kernel_tuning.kernel_tuning_parameters(kernel="NoSuchOp", path=cache_path)
    assert "NoSuchOp" in str(error.value)
    assert str(error.value) == error.value.args[0]  # the library's message, without KeyError's quotes


def test_parameters_unknown_element_type_name_is_a_key_error(cache_path):
    with pytest.raises(KeyError, match="float99"):
        kernel_tuning.kernel_tuning_parameters(kernel="Abs", element_type="float99", path=cache_path)


def test_parameters_unknown_element_type_number_is_a_key_error(cache_path):
    with pytest.raises(KeyError):
        kernel_tuning.kernel_tuning_parameters(kernel="Abs", element_type=10**12, path=cache_path)
    with pytest.raises(KeyError):
        kernel_tuning.kernel_tuning_parameters(kernel="Abs", element_type=-3, path=cache_path)


@pytest.mark.parametrize("arguments, match", [
    (dict(kernel=3), "kernel names must be str"),
    (dict(kernel=["Abs", 1]), "kernel names must be str"),
    (dict(element_type=1.0), "element_type must be an int"),
    (dict(element_type=True), "element_type must be an int, not bool"),
    (dict(path=3), "path must be"),
    (dict(num_threads="2"), "num_threads must be an int"),
    (dict(num_threads=2.0), "num_threads must be an int"),
    (dict(device="cpu"), "device must be an int"),
    (dict(implementation=1), "implementation must be a str"),
    (dict(library=b"onnx_light"), "library must be a str"),
    (dict(kernel="Abs", kernels=["Abs"]), "not both"),
    (dict(element_type=1, element_types=[1]), "not both"),
])
def test_parameters_wrong_types_are_type_errors(arguments, match, cache_path):
    with pytest.raises(TypeError, match=match):
        kernel_tuning.kernel_tuning_parameters(**{"path": cache_path, **arguments})


@pytest.mark.parametrize("threads", [-1, 1 << 20])
def test_parameters_threads_out_of_range_is_a_value_error(threads, cache_path):
    with pytest.raises(ValueError, match="num_threads"):
        kernel_tuning.kernel_tuning_parameters(kernel="Abs", element_type=1, path=cache_path, num_threads=threads)


def test_parameters_implementation_all_and_unknown(cache_path):
    every = kernel_tuning.kernel_tuning_parameters(kernel="Abs", element_type=1, implementation="all",
                                                   path=cache_path)["kernels"]
    assert len(every) >= 1
    assert "portable" in {entry["implementation"] for entry in every}
    with pytest.raises(KeyError):
        kernel_tuning.kernel_tuning_parameters(kernel="Abs", element_type=1, implementation="no-such-isa",
                                               path=cache_path)


# ---- propose_kernel_tuning_updates --------------------------------------------------------------


def test_propose_missing_cache(cache_path):
    proposal = kernel_tuning.propose_kernel_tuning_updates(kernels=["Abs"], element_types=[FLOAT], path=cache_path)
    assert set(proposal) == {"cache_path", "cache_status", "selected", "covered", "missing", "calibratable",
                             "unsupported", "diagnostics"}
    assert len(proposal["selected"]) == 1 and len(proposal["missing"]) == 1
    assert len(proposal["calibratable"]) == 1 and proposal["covered"] == []
    assert set(proposal["calibratable"][0]) == ENTRY_FIELDS
    assert not os.path.exists(cache_path)  # read-only


def test_propose_covered_after_set(cache_path):
    kernel_tuning.set_kernel_tuning_parameters("Abs", 1, {"parallel.minimum_elements": 4096}, path=cache_path,
                                               num_threads=1, load=False)
    proposal = kernel_tuning.propose_kernel_tuning_updates("Abs", 1, path=cache_path, num_threads=1)
    assert len(proposal["covered"]) == 1 and proposal["missing"] == []
    assert proposal["covered"][0]["cached_values"] == abs_float_values(4096)
    # Another thread count is not covered by that profile.
    assert len(kernel_tuning.propose_kernel_tuning_updates("Abs", 1, path=cache_path, num_threads=3)["missing"]) == 1


def test_propose_singular_spellings_and_errors(cache_path):
    proposal = kernel_tuning.propose_kernel_tuning_updates(kernel="Abs", element_type="float", path=cache_path)
    assert len(proposal["selected"]) == 1
    with pytest.raises(KeyError):
        kernel_tuning.propose_kernel_tuning_updates(kernels=["NoSuchOp"], path=cache_path)
    with pytest.raises(TypeError):
        kernel_tuning.propose_kernel_tuning_updates(kernels=[1], path=cache_path)
    with pytest.raises(ValueError):
        kernel_tuning.propose_kernel_tuning_updates(kernels="Abs", path=cache_path, num_threads=-2)


# ---- set_kernel_tuning_parameters --------------------------------------------------------------


def test_set_writes_publishes_and_reports(cache_path):
    update = kernel_tuning.set_kernel_tuning_parameters(
        "Abs", FLOAT, {"parallel.minimum_elements": 12345}, path=cache_path, num_threads=3)
    assert set(update) == {"status", "path", "values", "updated", "preserved", "pruned", "diagnostics", "load"}
    assert update["status"] == "updated" and update["path"] == cache_path
    assert update["values"] == abs_float_values(12345)
    (key,) = update["updated"]
    assert set(key) == KEY_FIELDS and key["kernel"] == "Abs"
    load = update["load"]
    assert set(load) == {"status", "path", "published_generation", "loaded", "stale", "incompatible", "invalid",
                         "missing", "diagnostics"}
    assert load["status"] == "loaded" and len(load["loaded"]) == 1
    (entry,) = kernel_tuning.kernel_tuning_parameters(kernel="Abs", element_type=1, path=cache_path,
                                                      num_threads=3)["kernels"]
    assert entry["cached_values"] == abs_float_values(12345)
    assert entry["active_values"] == abs_float_values(12345)
    assert entry["active_source"] == "published_profile"


def test_set_load_false_does_not_publish(cache_path):
    before = kernel_tuning.kernel_tuning_parameters(kernel="Abs", element_type=1, path=cache_path,
                                                    num_threads=5)["kernels"][0]
    update = kernel_tuning.set_kernel_tuning_parameters("Abs", 1, {"parallel.minimum_elements": 777},
                                                        path=cache_path, num_threads=5, load=False)
    assert update["status"] == "updated" and update["load"] is None
    after = kernel_tuning.kernel_tuning_parameters(kernel="Abs", element_type=1, path=cache_path,
                                                   num_threads=5)["kernels"][0]
    assert after["cached_values"] == abs_float_values(777)
    assert after["active_values"] == before["active_values"]


def test_set_accepts_numpy_integers_and_empty_values(cache_path):
    update = kernel_tuning.set_kernel_tuning_parameters("Abs", 1, {"parallel.minimum_elements": np.int32(2048)},
                                                        path=cache_path, num_threads=6, load=False)
    assert update["values"] == abs_float_values(2048)
    # Empty: every value comes from the cached profile.
    again = kernel_tuning.set_kernel_tuning_parameters("Abs", 1, {}, path=cache_path, num_threads=6, load=False)
    assert again["values"] == abs_float_values(2048)


def test_set_keyword_only_call_and_default_element_type(cache_path):
    update = kernel_tuning.set_kernel_tuning_parameters(kernel="Abs", values={"parallel.minimum_elements": 99},
                                                        path=Path(cache_path), num_threads=7, load=False)
    assert update["status"] == "updated"
    assert update["updated"][0]["element_type"] == 1


def test_set_unknown_names_are_key_errors(cache_path):
    with pytest.raises(KeyError, match="NoSuchOp"):
        kernel_tuning.set_kernel_tuning_parameters("NoSuchOp", 1, {"parallel.minimum_elements": 1}, path=cache_path)
    with pytest.raises(KeyError, match="parallel.no_such_parameter"):
        kernel_tuning.set_kernel_tuning_parameters("Abs", 1, {"parallel.no_such_parameter": 1}, path=cache_path)
    with pytest.raises(KeyError):
        kernel_tuning.set_kernel_tuning_parameters("Abs", "nonsense", {"parallel.minimum_elements": 1},
                                                   path=cache_path)
    assert not os.path.exists(cache_path)


@pytest.mark.parametrize("value", [0, -5, 1 << 41])
def test_set_value_breaking_its_rule_is_a_value_error_and_writes_nothing(value, cache_path):
    with pytest.raises(ValueError, match="parallel.minimum_elements") as error:
        kernel_tuning.set_kernel_tuning_parameters("Abs", 1, {"parallel.minimum_elements": value}, path=cache_path)
    assert isinstance(error.value, onnx_light.InvalidValueError)
    assert not os.path.exists(cache_path)


@pytest.mark.parametrize("value", [1.5, "16384", [1], None, True])
def test_set_value_of_the_wrong_type_is_a_type_error(value, cache_path):
    with pytest.raises(TypeError, match="parallel.minimum_elements"):
        kernel_tuning.set_kernel_tuning_parameters("Abs", 1, {"parallel.minimum_elements": value}, path=cache_path)
    assert not os.path.exists(cache_path)


def test_set_huge_integer_is_a_value_error(cache_path):
    with pytest.raises(ValueError, match="64-bit"):
        kernel_tuning.set_kernel_tuning_parameters("Abs", 1, {"parallel.minimum_elements": 1 << 70}, path=cache_path)


@pytest.mark.parametrize("arguments, match", [
    (dict(kernel=1, values={}), "kernel must be a str"),
    (dict(kernel="Abs"), "needs values"),
    (dict(kernel="Abs", values=[("parallel.minimum_elements", 1)]), "values must be a dict"),
    (dict(kernel="Abs", values={1: 2}), "parameter names"),
    (dict(kernel="Abs", values={}, load="yes"), "load must be a bool"),
    (dict(kernel="Abs", values={}, prune_stale=1), "prune_stale must be a bool"),
    (dict(kernel="Abs", values={}, element_type=1.0), "element_type must be an int"),
])
def test_set_argument_types(arguments, match, cache_path):
    with pytest.raises(TypeError, match=match):
        kernel_tuning.set_kernel_tuning_parameters(**{"path": cache_path, **arguments})


def test_set_on_a_malformed_cache_raises_names_the_fix_and_keeps_the_file(cache_path):
    Path(cache_path).write_text("this is = not [ toml\n")
    with pytest.raises(kernel_tuning.TuningCacheError) as raised:
        kernel_tuning.set_kernel_tuning_parameters("Abs", 1, {"parallel.minimum_elements": 5}, path=cache_path)
    assert isinstance(raised.value, onnx_light.IoError) and isinstance(raised.value, OSError)
    assert raised.value.status == "malformed" and raised.value.path == cache_path
    assert raised.value.report["diagnostics"]
    assert cache_path in str(raised.value) and "remove_kernel_tuning_cache" in str(raised.value)
    assert Path(cache_path).read_text() == "this is = not [ toml\n"


# ---- inspect_kernel_tuning_cache -------------------------------------------------------------


def test_inspect_reports_profiles_without_publishing(cache_path):
    kernel_tuning.set_kernel_tuning_parameters("Abs", 1, {"parallel.minimum_elements": 3000}, path=cache_path,
                                               num_threads=8, load=False)
    generation = kernel_tuning.load_kernel_tuning_cache(os.devnull + ".missing")["published_generation"]
    inspection = kernel_tuning.inspect_kernel_tuning_cache(cache_path, num_threads=8)
    assert set(inspection) == {"status", "path", "diagnostics", "profiles", "system_cache"}
    assert inspection["status"] == "loaded"
    (profile,) = inspection["profiles"]
    assert KEY_FIELDS <= set(profile)
    assert {"architecture", "vendor", "microarchitecture", "effective_threads", "values", "local",
            "classification"} <= set(profile)
    assert profile["values"] == abs_float_values(3000)
    assert profile["effective_threads"] == 8 and profile["local"] is True
    assert profile["classification"] == "loaded"
    # Inspection did not publish anything.
    assert kernel_tuning.load_kernel_tuning_cache(os.devnull + ".missing")["published_generation"] == generation


def test_inspect_filters_and_statuses(cache_path, tmp_path):
    kernel_tuning.set_kernel_tuning_parameters("Abs", 1, {"parallel.minimum_elements": 3000}, path=cache_path,
                                               num_threads=8, load=False)
    assert kernel_tuning.inspect_kernel_tuning_cache(cache_path, kernel="Abs")["profiles"]
    assert kernel_tuning.inspect_kernel_tuning_cache(cache_path, element_type="double")["profiles"] == []
    assert kernel_tuning.inspect_kernel_tuning_cache(cache_path, num_threads=9)["profiles"] == []
    assert kernel_tuning.inspect_kernel_tuning_cache(tmp_path / "none.cache")["status"] == "not_found"
    bad = tmp_path / "bad.cache"
    bad.write_text('format = "something-else"\n')
    with pytest.warns(kernel_tuning.TuningCacheWarning, match=str(bad)):
        assert kernel_tuning.inspect_kernel_tuning_cache(bad)["status"] == "malformed"
    with pytest.raises(TypeError):
        kernel_tuning.inspect_kernel_tuning_cache(42)


def test_inspect_classifies_an_invalid_profile(cache_path):
    kernel_tuning.set_kernel_tuning_parameters("Abs", 1, {"parallel.minimum_elements": 3000}, path=cache_path,
                                               num_threads=8, load=False)
    text = Path(cache_path).read_text()
    assert "3000" in text
    Path(cache_path).write_text(text.replace("3000", "0"))
    (profile,) = kernel_tuning.inspect_kernel_tuning_cache(cache_path)["profiles"]
    assert profile["classification"] == "invalid"


# ---- load_kernel_tuning_cache ------------------------------------------------------------------


def test_load_publishes_for_new_sessions(cache_path):
    kernel_tuning.set_kernel_tuning_parameters("Abs", 1, {"parallel.minimum_elements": 4321}, path=cache_path,
                                               num_threads=11, load=False)
    report = kernel_tuning.load_kernel_tuning_cache(cache_path)
    assert set(report) == {"status", "path", "published_generation", "loaded", "stale", "incompatible", "invalid",
                           "missing", "diagnostics"}
    assert report["status"] == "loaded" and len(report["loaded"]) == 1
    assert set(report["loaded"][0]) == KEY_FIELDS
    (entry,) = kernel_tuning.kernel_tuning_parameters(kernel="Abs", element_type=1, path=cache_path,
                                                      num_threads=11)["kernels"]
    assert entry["active_values"] == abs_float_values(4321)
    assert entry["active_source"] == "published_profile"
    again = kernel_tuning.load_kernel_tuning_cache(Path(cache_path))
    assert again["published_generation"] > report["published_generation"]


def test_load_missing_keys_and_statuses(cache_path, tmp_path):
    report = kernel_tuning.load_kernel_tuning_cache(cache_path, kernel="Abs", element_type=1, num_threads=12)
    assert report["status"] == "not_found"
    assert len(report["missing"]) == 1 and report["missing"][0]["kernel"] == "Abs"
    bad = tmp_path / "bad.cache"
    bad.write_text("[[[ not toml")
    with pytest.warns(kernel_tuning.TuningCacheWarning, match="remove_kernel_tuning_cache"):
        assert kernel_tuning.load_kernel_tuning_cache(bad)["status"] == "malformed"
    with pytest.raises(KeyError):
        kernel_tuning.load_kernel_tuning_cache(cache_path, kernel="NoSuchOp")
    with pytest.raises(TypeError):
        kernel_tuning.load_kernel_tuning_cache(cache_path, num_threads=1.5)
    with pytest.raises(TypeError):
        kernel_tuning.load_kernel_tuning_cache(cache_path, 2)  # filters are keyword-only


# ---- remove_kernel_tuning_cache ----------------------------------------------------------------


def test_remove_filtered_then_whole_file(cache_path):
    kernel_tuning.set_kernel_tuning_parameters("Abs", 1, {"parallel.minimum_elements": 100}, path=cache_path,
                                               num_threads=1, load=False)
    kernel_tuning.set_kernel_tuning_parameters("Abs", 1, {"parallel.minimum_elements": 200}, path=cache_path,
                                               num_threads=2, load=False)
    planned = kernel_tuning.remove_kernel_tuning_cache(cache_path, kernel="Abs", num_threads=1, dry_run=True)
    assert planned["status"] == "would_remove" and planned["removed_count"] == 1
    assert len(kernel_tuning.inspect_kernel_tuning_cache(cache_path, user_only=True)["profiles"]) == 2
    partial = kernel_tuning.remove_kernel_tuning_cache(cache_path, kernel="Abs", num_threads=1)
    assert set(partial) == {"status", "path", "dry_run", "removed_files", "removed", "preserved", "removed_profiles",
                            "removed_count", "preserved_count", "diagnostics"}
    assert len(partial["removed"]) == 1 and len(partial["preserved"]) == 1
    assert partial["removed_count"] == 1 and partial["preserved_count"] == 1
    assert partial["removed_profiles"][0]["effective_threads"] == 1
    assert kernel_tuning.remove_kernel_tuning_cache(cache_path, classifications=["stale"])["status"] == "unchanged"
    with pytest.raises(ValueError):
        kernel_tuning.remove_kernel_tuning_cache(cache_path, classifications=["old"])
    with pytest.raises(KeyError):
        kernel_tuning.remove_kernel_tuning_cache(cache_path, kernel="Abz")
    (left,) = kernel_tuning.inspect_kernel_tuning_cache(cache_path)["profiles"]
    assert left["effective_threads"] == 2
    whole = kernel_tuning.remove_kernel_tuning_cache(cache_path)
    assert whole["status"] == "removed"
    assert cache_path in whole["removed_files"]
    assert not os.path.exists(cache_path)
    assert kernel_tuning.remove_kernel_tuning_cache(cache_path)["status"] == "not_found"
    with pytest.raises(TypeError):
        kernel_tuning.remove_kernel_tuning_cache(cache_path, kernel=5)


# ---- calibrate_kernel_tuning -------------------------------------------------------------------


def test_calibrate_one_key_without_saving(cache_path):
    report = kernel_tuning.calibrate_kernel_tuning("Abs", element_types=[FLOAT], maximum_duration_ms=60,
                                                   maximum_memory_bytes=4 << 20, save=False, path=cache_path,
                                                   num_threads=2)
    assert {"calibrated", "skipped", "unsupported", "diagnostics", "published_generation",
            "cache_update"} <= set(report)
    (entry,) = report["calibrated"]
    assert KEY_FIELDS <= set(entry) and "values" in entry
    assert entry["kernel"] == "Abs" and entry["element_type"] == 1
    assert report["cache_update"] is None
    assert not os.path.exists(cache_path)
    (active,) = kernel_tuning.kernel_tuning_parameters(kernel="Abs", element_type=1, path=cache_path,
                                                       num_threads=2)["kernels"]
    assert active["active_values"] == entry["values"]
    assert active["active_source"] == "published_profile"


def test_calibrate_saves_and_only_missing_skips(cache_path):
    # force_save: this test is about saving, not about how noisy the machine is.
    report = kernel_tuning.calibrate_kernel_tuning("Abs", maximum_duration_ms=60, maximum_memory_bytes=4 << 20,
                                                   path=cache_path, num_threads=2, force_save=True)
    assert len(report["calibrated"]) == 1  # a named kernel without element types means float
    assert report["calibrated"][0]["element_type"] == 1
    assert report["cache_update"]["status"] == "updated"
    (profile,) = kernel_tuning.inspect_kernel_tuning_cache(cache_path)["profiles"]
    assert profile["values"] == report["calibrated"][0]["values"]
    skipped = kernel_tuning.calibrate_kernel_tuning(kernels=["Abs"], element_type="float", maximum_duration_ms=60,
                                                    path=cache_path, num_threads=2, only_missing=True, save=False)
    (m,) = report["measurements"]
    if m["measured"] and m["confidence"] != "low":
        assert profile["provenance"]["source"] == "calibrate"
        assert skipped["calibrated"] == [] and len(skipped["skipped"]) == 1
    else:  # a forced save of a result it could not trust is not a calibration to keep
        assert profile["provenance"]["source"].startswith("calibrate-")
        assert len(skipped["calibrated"]) == 1 and skipped["skipped"] == []


def test_calibrate_reports_confidence_and_saves_low_confidence_only_when_forced(cache_path):
    report = kernel_tuning.calibrate_kernel_tuning("Abs", maximum_duration_ms=60, maximum_memory_bytes=4 << 20,
                                                   path=cache_path, num_threads=2)
    (m,) = report["measurements"]
    assert m["confidence"] in ("high", "medium", "low") and m["measured"] is True
    for case in m["cases"]:
        low, high = case["ratio_interval"]
        assert low <= case["ratio"] <= high and case["verdict"] in ("win", "loss", "undecided")
    if m["confidence"] == "low":
        assert m["saved"] is False and report["cache_update"] is None and not os.path.exists(cache_path)
        assert any("not saved: confidence is low" in d["message"] for d in report["diagnostics"])
    else:
        assert m["saved"] is True and report["cache_update"]["status"] == "updated"
    # Nothing measured (the memory budget is below the first case): never saved unless forced.
    empty = kernel_tuning.calibrate_kernel_tuning("Abs", maximum_duration_ms=60, maximum_memory_bytes=64,
                                                  path=cache_path + ".empty", num_threads=2)
    assert empty["measurements"][0]["measured"] is False and empty["cache_update"] is None
    forced = kernel_tuning.calibrate_kernel_tuning("Abs", maximum_duration_ms=60, maximum_memory_bytes=64,
                                                   path=cache_path + ".empty", num_threads=2, force_save=True)
    assert forced["cache_update"]["status"] == "updated" and forced["measurements"][0]["saved"] is True


def test_calibrate_on_a_loaded_machine_is_low_confidence_unless_allow_load(cache_path):
    # A busy loop per CPU: other processes take at least half a CPU from the two threads measured.
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(os.cpu_count() or 1)]
    try:
        # The default memory budget: searches long enough (> 50 ms) to be judged.
        loaded = kernel_tuning.calibrate_kernel_tuning("Abs", maximum_duration_ms=200, save=False, num_threads=2)
        # A search that ends within 50 ms has no busy-time figure (other_cpus None): measure until one has.
        for _ in range(10):
            allowed = kernel_tuning.calibrate_kernel_tuning("Abs", maximum_duration_ms=200, save=False, num_threads=2,
                                                            allow_load=True)
            contention = allowed["measurements"][0]["contention"]
            if contention is not None and contention["other_cpus"] is not None:
                break
    finally:
        for p in loops:
            p.kill()
            p.wait()
    (m,) = loaded["measurements"]
    c = m["contention"]
    assert c is not None and ((c["other_cpus"] or 0) >= 0.5 or c["waiting_threads"] >= 0.25), c
    assert m["confidence"] == "low"
    assert any("measured on a loaded machine" in d["message"] for d in loaded["diagnostics"])
    (a,) = allowed["measurements"]
    assert a["contention"] is not None and a["contention"]["other_cpus"] >= 0.5, a["contention"]
    assert not any("measured on a loaded machine" in d["message"] for d in allowed["diagnostics"])
    with pytest.raises(TypeError, match="allow_load must be a bool"):
        kernel_tuning.calibrate_kernel_tuning("Abs", save=False, allow_load="yes")


@pytest.mark.parametrize("arguments, error, match", [
    (dict(), ValueError, "needs kernels"),
    (dict(kernel="Abs", all=True), ValueError, "not both"),
    (dict(kernel="NoSuchOp"), KeyError, "NoSuchOp"),
    (dict(kernel="Abs", element_types=["nonsense"]), KeyError, "nonsense"),
    (dict(kernel="Abs", maximum_duration_ms=0), ValueError, "maximum_duration_ms"),
    (dict(kernel="Abs", maximum_memory_bytes=0), ValueError, "maximum_memory_bytes"),
    (dict(kernel="Abs", repeat=0), ValueError, "repeat"),
    (dict(kernel="Abs", seed=-1), ValueError, "seed"),
    (dict(kernel="Abs", num_threads=-1), ValueError, "num_threads"),
    (dict(kernel="Abs", maximum_duration_ms=1.5), TypeError, "maximum_duration_ms"),
    (dict(kernel="Abs", save="no"), TypeError, "save must be a bool"),
    (dict(kernel="Abs", only_missing=None), TypeError, "only_missing must be a bool"),
    (dict(kernel="Abs", parameters=["parallel.minimum_elements"]), TypeError, "parameters must be a dict"),
    (dict(kernel="Abs", parameters={"parallel.minimum_elements": 5}), TypeError, "list of values"),
    (dict(kernel="Abs", parameters={"parallel.minimum_elements": [object()]}), TypeError, "values must be"),
    (dict(kernel="Abs", parameters={"parallel.minimum_elements": []}), ValueError, "no values"),
])
def test_calibrate_argument_errors(arguments, error, match, cache_path):
    with pytest.raises(error, match=match):
        kernel_tuning.calibrate_kernel_tuning(**{"path": cache_path, "save": False, **arguments})
    assert not os.path.exists(cache_path)


def test_calibrate_comparison_mode(cache_path):
    report = kernel_tuning.calibrate_kernel_tuning(
        "Abs", maximum_duration_ms=80, save=False, path=cache_path, num_threads=2,
        parameters={"parallel.minimum_elements": [32768, 16384]})
    (entry,) = report["calibrated"]
    (measured,) = report["measurements"]
    assert [e["value"] for e in measured["comparison"]] == [32768, 16384]
    # The pick is the value with the lowest summed median as measured when it is at least 2% below
    # the baseline's (the first value), else the baseline.
    fastest = min(measured["comparison"], key=lambda e: e["total_median_ns"])
    baseline = measured["comparison"][0]
    pick = fastest if fastest["total_median_ns"] <= 0.98 * baseline["total_median_ns"] else baseline
    assert entry["values"]["parallel.minimum_elements"] == pick["value"], measured["comparison"]
    assert measured["changed_default"] == (pick["value"] != 32768)


# ---- calibrate_kernel_tuning(model=...) --------------------------------------------------------

ABS_MODEL = """<ir_version: 8, opset_import: ["" : 18]>
g (float[N,16] x) => (float[N,16] y, float[N,16] z) { y = Abs(x)
 z = Abs(x) }"""


def test_calibrate_model_reports_the_models_keys_without_saving(cache_path):
    x = np.linspace(-1, 1, 64 * 16, dtype=np.float32).reshape(64, 16)
    report = kernel_tuning.calibrate_kernel_tuning(model=ABS_MODEL, inputs={"x": x}, maximum_duration_ms=400,
                                                   save=False, path=cache_path, num_threads=2)
    assert {"model", "keys", "nodes", "end_to_end", "saved", "cache_update", "diagnostics", "ok"} <= set(report)
    (key,) = report["keys"]
    assert key["kernel"] == "Abs" and key["nodes"] == 2
    assert KEY_FIELDS <= set(key) and "parallel.minimum_elements" in key["old_values"]
    assert [n["work"] for n in report["nodes"]] == [64 * 16, 64 * 16]
    assert report["end_to_end"]["verdict"] in {"unchanged", "faster", "same", "slower", "not_measured"}
    assert not report["saved"] and report["cache_update"] is None
    assert not os.path.exists(cache_path)


def test_calibrate_model_random_inputs_bind_symbolic_dims(cache_path):
    with pytest.raises(ValueError, match="dims=") as raised:
        kernel_tuning.calibrate_kernel_tuning(model=ABS_MODEL, save=False, path=cache_path, num_threads=1)
    assert "'N'" in str(raised.value)
    report = kernel_tuning.calibrate_kernel_tuning(model=ABS_MODEL, dims={"N": 8}, save=False, path=cache_path,
                                                   num_threads=1, maximum_duration_ms=200)
    assert [n for n in report["nodes"]] == []  # one thread: no threshold to place
    assert report["end_to_end"]["verdict"] == "unchanged" and report["ok"]


@pytest.mark.parametrize("arguments, error, match", [
    (dict(kernel="Abs"), ValueError, "does not take kernel"),
    (dict(all=True), ValueError, "does not take all"),
    (dict(repeat=2), ValueError, "does not take repeat"),
    (dict(inputs=[1, 2]), TypeError, "inputs must be a mapping"),
    (dict(dims={"N": "eight"}), TypeError, "dims"),
    (dict(dims={"N": -1}), ValueError, "must not be negative"),
    (dict(maximum_duration_ms=0), ValueError, "maximum_duration_ms"),
    (dict(inputs={"x": np.zeros((2, 16), np.float32), "nope": np.zeros(3, np.float32)}), ValueError, "'nope'"),
])
def test_calibrate_model_argument_errors(arguments, error, match, cache_path):
    with pytest.raises(error, match=match):
        kernel_tuning.calibrate_kernel_tuning(model=ABS_MODEL, **{"path": cache_path, "save": False, **arguments})
    assert not os.path.exists(cache_path)


def test_calibrate_without_model_refuses_inputs(cache_path):
    with pytest.raises(ValueError, match="need model="):
        kernel_tuning.calibrate_kernel_tuning("Abs", dims={"N": 4}, path=cache_path, save=False)


def test_calibrate_model_takes_a_file_name_as_a_path(cache_path, tmp_path):
    model_file = tmp_path / "abs.onnxtxt"
    model_file.write_text(ABS_MODEL)
    report = kernel_tuning.calibrate_kernel_tuning(model=str(model_file), dims={"N": 4}, save=False, path=cache_path,
                                                   num_threads=1, maximum_duration_ms=200)
    assert report["model"] == str(model_file)
    assert [k["kernel"] for k in report["keys"]] == ["Abs"]
