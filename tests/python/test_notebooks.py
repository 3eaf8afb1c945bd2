"""Python for notebooks (issue 20): InferenceSession, readable reports, consistent tuning
arguments, cache errors, clean namespaces, profiling rows, type stubs and the notebook tour."""
from __future__ import annotations

import ast
import json
import os
import pprint
import subprocess
import sys
import types
import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import onnx_light
from onnx_light import kernel_tuning, reports, runtime

SOURCE = Path(os.environ.get("ONNX_LIGHT_SOURCE_DIR", Path(__file__).resolve().parents[2]))

TWO_OUTPUTS = (
    '<ir_version: 10, opset_import: ["" : 18]>'
    "g (float[N, 3] x, float[3, 4] w, int64[K] k) => (float[N, 4] y, float[N, 3] z, int64[K] kk) "
    "{ y = MatMul(x, w) z = Abs(x) kk = Neg(k) }"
)


@pytest.fixture
def model_file(tmp_path):
    path = tmp_path / "two_outputs.onnx"
    onnx.save(onnx_light.parse_model(TWO_OUTPUTS), str(path))
    return path


@pytest.fixture
def feeds():
    rng = np.random.default_rng(3)
    return {
        "x": rng.standard_normal((5, 3)).astype(np.float32),
        "w": rng.standard_normal((3, 4)).astype(np.float32),
        "k": np.arange(7, dtype=np.int64),
    }


def reference(feeds):
    return [feeds["x"] @ feeds["w"], np.abs(feeds["x"]), -feeds["k"]]


# ---- InferenceSession: what it accepts --------------------------------------------------------


@pytest.mark.parametrize("form", ["str", "path", "bytes", "proto"])
def test_inference_session_accepts_a_str_path_bytes_and_a_model_proto(form, model_file, feeds):
    model = {
        "str": str(model_file),
        "path": model_file,
        "bytes": model_file.read_bytes(),
        "proto": onnx.load(str(model_file)),
    }[form]
    session = onnx_light.InferenceSession(model, threads=1)
    for got, want in zip(session.run(None, feeds), reference(feeds)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_a_str_that_names_no_file_is_file_not_found_with_a_hint_for_text(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such model file") as raised:
        onnx_light.InferenceSession(str(tmp_path / "mlp.onnx"))
    assert "from_text" not in str(raised.value)
    with pytest.raises(FileNotFoundError, match="from_text=True"):
        onnx_light.InferenceSession(TWO_OUTPUTS)
    session = onnx_light.InferenceSession(TWO_OUTPUTS, from_text=True)
    assert [i.name for i in session.get_inputs()] == ["x", "w", "k"]
    with pytest.raises(TypeError, match="from_text"):
        onnx_light.InferenceSession(b"bytes", from_text=True)
    with pytest.raises(TypeError, match="not int"):
        onnx_light.InferenceSession(42)


def test_runtime_session_reads_a_str_naming_a_file_as_that_file(model_file, tmp_path, feeds):
    session = runtime.RuntimeSession(str(model_file))
    assert [i.name for i in session.inputs] == ["x", "w", "k"]
    with pytest.raises(onnx_light.IoError, match="no such file 'mlp.onnx'"):
        runtime.RuntimeSession("mlp.onnx")
    # ONNX text still works on the lower-level session (the seed's API), recognised by its body.
    assert runtime.RuntimeSession(TWO_OUTPUTS).outputs[0].name == "y"
    # ...and ONNX Runtime's call works on it too.
    (z,) = session.run(["z"], feeds)
    np.testing.assert_array_equal(z, np.abs(feeds["x"]))


def test_inputs_and_outputs_show_types_and_symbolic_dimensions_as_onnx_runtime(model_file):
    session = onnx_light.InferenceSession(model_file)
    x, w, k = session.get_inputs()
    assert (x.name, x.type, x.shape) == ("x", "tensor(float)", ["N", 3])
    assert (w.type, w.shape) == ("tensor(float)", [3, 4])
    assert (k.type, k.shape, k.element_type) == ("tensor(int64)", ["K"], TensorProto.INT64)
    assert [o.name for o in session.get_outputs()] == ["y", "z", "kk"]
    assert repr(x) == "NodeArg(name='x', type='tensor(float)', shape=['N', 3])"
    info = session.session.inputs[0]
    assert (info.type, info.element_type_name, info.dims) == ("tensor(float)", "float", ["N", 3])
    assert info.shape == [-1, 3]  # the lower-level field is unchanged
    assert session.get_providers() == ["CPUExecutionProvider"]


def test_a_value_of_unknown_rank_has_no_shape():
    graph = helper.make_graph(
        [helper.make_node("Abs", ["x"], ["y"])], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    session = onnx_light.InferenceSession(model)
    assert session.get_inputs()[0].shape is None
    (y,) = session.run(None, {"x": -np.ones((2, 2, 2), np.float32)})
    np.testing.assert_array_equal(y, np.ones((2, 2, 2), np.float32))


# ---- run(output_names, input_feed) ------------------------------------------------------------


def test_run_none_returns_every_output_in_order_and_names_select(model_file, feeds):
    session = onnx_light.InferenceSession(model_file, threads=1)
    everything = session.run(None, feeds)
    assert len(everything) == 3
    for got, want in zip(everything, reference(feeds)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    kk, y = session.run(["kk", "y"], feeds)
    np.testing.assert_array_equal(kk, -feeds["k"])
    np.testing.assert_array_equal(y, everything[0])
    np.testing.assert_array_equal(session.run_arrays([feeds["x"], feeds["w"], feeds["k"]])[1], everything[1])


def test_run_suggests_the_right_name_for_a_typo(model_file, feeds):
    session = onnx_light.InferenceSession(model_file)
    wrong = dict(feeds)
    wrong["X"] = wrong.pop("x")
    with pytest.raises(onnx_light.InputError, match=r"no input 'X' \(did you mean 'x'\?\); its inputs: x, w, k"):
        session.run(None, wrong)
    wrong = dict(feeds)
    wrong["weights"] = wrong.pop("w")
    with pytest.raises(ValueError, match="no input 'weights'"):
        session.run(None, wrong)
    with pytest.raises(onnx_light.InputError, match=r"no output 'zz' \(did you mean 'z'\?\)"):
        session.run(["zz"], feeds)
    with pytest.raises(onnx_light.InputError, match=r"missing 'w' \(tensor\(float\), shape \[3, 4\]\)"):
        session.run(None, {"x": feeds["x"], "k": feeds["k"]})


def test_a_wrong_dtype_or_shape_names_the_input_want_and_got_without_the_array(model_file, feeds):
    session = onnx_light.InferenceSession(model_file)
    big = dict(feeds, x=np.arange(3000, dtype=np.float64).reshape(1000, 3) + 0.123456)
    with pytest.raises(onnx_light.InputError) as raised:
        session.run(None, big)
    message = str(raised.value)
    assert "input 'x'" in message and "tensor(float)" in message and "float64" in message
    assert "(1000, 3)" in message and ".astype(np.float32)" in message
    assert "0.123" not in message and len(message) < 300  # no array dump
    with pytest.raises(onnx_light.InputError, match=r"input 'w'.*\[3, 4\], got \(3, 5\): dimension 1 is 5"):
        session.run(None, dict(feeds, w=np.ones((3, 5), np.float32)))
    with pytest.raises(onnx_light.InputError, match=r"input 'x': the model declares rank 2 \[N, 3\], got rank 1"):
        session.run(None, dict(feeds, x=np.ones(3, np.float32)))
    with pytest.raises(onnx_light.InputError, match=r"input 'k'.*tensor\(int64\).*int32"):
        session.run(None, dict(feeds, k=feeds["k"].astype(np.int32)))
    # A list is taken as numpy takes it, then checked the same way.
    with pytest.raises(onnx_light.InputError, match="float64"):
        session.run(None, dict(feeds, w=[[1.0] * 4] * 3))
    with pytest.raises(TypeError, match="input_feed must be a dict"):
        session.run(None, [feeds["x"], feeds["w"], feeds["k"]])
    with pytest.raises(TypeError, match=r"did you mean \['y'\]"):
        session.run("y", feeds)


def test_threads_and_options_and_what_cannot_be_combined(model_file):
    assert onnx_light.InferenceSession(model_file, threads=1).threads == 1
    assert onnx_light.InferenceSession(model_file, threads=2).threads == 2
    options = runtime.RuntimeSessionOptions(num_threads=2, profile=True)
    assert options.parameters.num_threads == 2
    assert onnx_light.InferenceSession(model_file, options).threads == 2
    with pytest.raises(onnx_light.InvalidValueError, match="not both"):
        runtime.RuntimeSessionOptions(parameters=runtime.RuntimeParameters(1), num_threads=2)
    with pytest.raises(onnx_light.InvalidValueError, match="threads on sess_options or as arguments"):
        onnx_light.InferenceSession(model_file, options, threads=1)
    with pytest.raises(onnx_light.InvalidValueError, match="CPU only"):
        onnx_light.InferenceSession(model_file, providers=["CUDAExecutionProvider"])
    assert onnx_light.InferenceSession(model_file, providers=["CPUExecutionProvider"]).threads >= 1
    with pytest.raises(ValueError, match="optimization"):
        onnx_light.InferenceSession(model_file, optimization="fastest")
    none = onnx_light.InferenceSession(model_file, optimization="none")
    assert none.optimization_report()["level"] == "none"


# ---- profiling from Python ------------------------------------------------------------------


def test_profile_rows_per_node_and_op_type_and_a_trace(model_file, feeds, tmp_path):
    session = onnx_light.InferenceSession(model_file, threads=1, profile=True)
    for _ in range(3):
        session.run(None, feeds)
    profile = session.profile()
    assert isinstance(profile, reports.Profile) and isinstance(profile, dict)
    assert profile["runs"] == 3
    rows = profile.to_rows()
    assert sorted(r["op_type"] for r in rows) == ["Abs", "MatMul", "Neg"]
    assert all(r["calls"] == 3 and r["implementation"] for r in rows)
    assert {r["op_type"] for r in profile.to_rows("op_types")} == {"Abs", "MatMul", "Neg"}
    text = str(profile)
    assert text.startswith("profile (runs=3") and "MatMul" in text
    trace = Path(profile.to_trace(tmp_path / "trace.json"))
    events = json.loads(trace.read_text())["traceEvents"]
    assert {e["name"] for e in events if e.get("cat") == "MatMul"}
    session.reset_profile()
    assert session.profile()["runs"] == 0
    quiet = onnx_light.InferenceSession(model_file)
    quiet.run(None, feeds)
    assert quiet.profile().to_rows() == []


# ---- reports: readable, yet the same dictionaries ------------------------------------------------


def test_reports_keep_the_dictionary_repr_pprint_and_equality(cache_path):
    update = kernel_tuning.set_kernel_tuning_parameters("Abs", 1, {"parallel.minimum_elements": 5000}, path=cache_path)
    assert isinstance(update, reports.UpdateReport)
    plain = dict(update)
    assert update == plain and plain == update
    assert repr(update) == repr(plain)
    assert pprint.pformat(update) == pprint.pformat(plain)
    assert json.dumps(update, sort_keys=True) == json.dumps(plain, sort_keys=True)
    assert type(update["updated"][0]) is dict  # nested values stay plain


def test_parameters_table_rows_html_and_truncation():
    report = kernel_tuning.kernel_tuning_parameters(element_type="float")
    assert isinstance(report, reports.ParametersReport)
    rows = report.to_rows()
    assert len(rows) == len(report["kernels"]) > reports.DISPLAY_ROWS
    abs_row = next(r for r in rows if r["kernel"] == "Abs")
    assert abs_row["defaults.parallel.minimum_elements"] == 32768
    assert "defaults" not in abs_row
    html = report._repr_html_()
    assert html.count("<tr>") == reports.DISPLAY_ROWS + 1  # header + shown rows
    assert "<th>kernel</th>" in html and f"has all {len(rows)}" in html
    text = str(report)
    assert text.splitlines()[0].startswith("kernel tuning parameters (cache_path=")
    assert "parallel.minimum_elements=32768" in text
    assert f"more rows (to_rows() has all {len(rows)})" in text
    with pytest.raises(KeyError, match="lists: "):
        report.to_rows("no_such_list")


def test_html_escapes_values():
    report = reports.InspectionReport({"status": "loaded", "path": "<p>", "profiles": [{"kernel": "<b>x</b>"}]})
    html = report._repr_html_()
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html and "&lt;p&gt;" in html


def test_to_dataframe_hands_the_rows_to_pandas_or_says_how_to_do_without(monkeypatch):
    report = kernel_tuning.kernel_tuning_parameters(kernel="Abs", element_type=1)
    received = []
    fake = types.ModuleType("pandas")
    fake.DataFrame = lambda rows: received.append(rows) or "frame"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pandas", fake)
    assert report.to_dataframe() == "frame"
    assert received == [report.to_rows()]
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas -> ImportError
    with pytest.raises(ImportError, match=r"to_rows\(\) returns the same rows"):
        report.to_dataframe()


def test_ipython_text_display_is_the_table():
    report = kernel_tuning.kernel_tuning_parameters(kernel="Abs", element_type=1)
    printed = []

    class Printer:
        def text(self, value):
            printed.append(value)

    report._repr_pretty_(Printer(), False)
    assert printed == [str(report)]


# ---- consistent arguments ----------------------------------------------------------------------


READERS = {
    "kernel_tuning_parameters": lambda path, **k: kernel_tuning.kernel_tuning_parameters(path=path, **k)["kernels"],
    "propose_kernel_tuning_updates": lambda path, **k: kernel_tuning.propose_kernel_tuning_updates(path=path, **k)["selected"],
    "inspect_kernel_tuning_cache": lambda path, **k: kernel_tuning.inspect_kernel_tuning_cache(path, **k)["profiles"],
    "load_kernel_tuning_cache": lambda path, **k: kernel_tuning.load_kernel_tuning_cache(path, **k)["loaded"],
    "remove_kernel_tuning_cache": lambda path, **k: kernel_tuning.remove_kernel_tuning_cache(
        path, dry_run=True, **k)["removed_profiles"],
    "calibrate_kernel_tuning": lambda path, **k: kernel_tuning.calibrate_kernel_tuning(
        path=path, save=False, maximum_duration_ms=20, **k)["calibrated"],
}


@pytest.mark.parametrize("function", sorted(READERS))
def test_every_tuning_function_takes_kernel_or_kernels_and_element_type_or_types(function, cache_path):
    kernel_tuning.set_kernel_tuning_parameters("Abs", 1, {"parallel.minimum_elements": 4096}, path=cache_path,
                                               load=False)
    kernel_tuning.set_kernel_tuning_parameters("Neg", 1, {"parallel.minimum_elements": 4096}, path=cache_path,
                                               load=False)
    call = READERS[function]

    def keys(items):
        return sorted((i["kernel"], i["element_type"]) for i in items)

    singular = keys(call(cache_path, kernel="Abs", element_type="float"))
    assert singular == [("Abs", 1)]
    assert keys(call(cache_path, kernels=["Abs"], element_types=[1])) == singular
    assert keys(call(cache_path, kernel="Abs", element_types=[TensorProto.FLOAT])) == singular
    assert keys(call(cache_path, kernels="Abs", element_type=1)) == singular
    with pytest.raises(TypeError, match="not both"):
        call(cache_path, kernel="Abs", kernels=["Abs"], element_type=1)
    with pytest.raises(TypeError, match="not both"):
        call(cache_path, kernel="Abs", element_type=1, element_types=[1])


# ---- a cache that cannot be used ------------------------------------------------------------------


def test_writers_raise_on_a_malformed_cache_and_readers_warn(cache_path):
    garbage = "[[[ not a tuning cache\n"
    Path(cache_path).write_text(garbage)
    with pytest.raises(kernel_tuning.TuningCacheError, match="remove_kernel_tuning_cache") as raised:
        kernel_tuning.calibrate_kernel_tuning("Abs", maximum_duration_ms=20, path=cache_path)
    assert isinstance(raised.value, onnx_light.IoError) and raised.value.status == "malformed"
    assert raised.value.report["failed"][0]["kernel"] == "Abs"  # the whole report travels with it
    assert "nothing was measured" in str(raised.value)
    with pytest.raises(kernel_tuning.TuningCacheError, match=cache_path):
        kernel_tuning.remove_kernel_tuning_cache(cache_path, kernel="Abs")
    for read in (
        lambda: kernel_tuning.kernel_tuning_parameters(kernel="Abs", element_type=1, path=cache_path),
        lambda: kernel_tuning.propose_kernel_tuning_updates(kernels=["Abs"], path=cache_path),
    ):
        with pytest.warns(kernel_tuning.TuningCacheWarning, match="remove_kernel_tuning_cache"):
            assert read()["cache_status"] == "malformed"
    assert Path(cache_path).read_text() == garbage  # never overwritten
    # The fix the messages name works.
    assert kernel_tuning.remove_kernel_tuning_cache(cache_path)["status"] == "removed"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        update = kernel_tuning.set_kernel_tuning_parameters("Abs", 1, {"parallel.minimum_elements": 9}, path=cache_path)
    assert update["status"] == "updated"


def test_a_model_calibration_on_a_malformed_cache_is_refused_before_measuring(cache_path, model_file):
    Path(cache_path).write_text("[[[\n")
    with pytest.raises(onnx_light.IoError, match="nothing was measured"):
        kernel_tuning.calibrate_kernel_tuning(model=str(model_file), path=cache_path, maximum_duration_ms=200)


# ---- namespaces -----------------------------------------------------------------------------------


@pytest.mark.parametrize("module", [onnx_light, kernel_tuning, runtime, reports])
def test_namespaces_show_only_public_names(module):
    shown = [n for n in dir(module) if not n.startswith("__")]
    assert set(shown) <= set(module.__all__) | {"__version__"}, set(shown) - set(module.__all__)
    assert not {"annotations", "os", "Any", "operator", "Optional", "Union"} & set(shown)
    for name in module.__all__:
        assert hasattr(module, name), name
    scope: dict = {}
    exec(f"from {module.__name__} import *", scope)
    assert set(scope) - {"__builtins__"} == set(module.__all__)


def test_top_level_names_are_the_runtime_objects():
    assert onnx_light.RuntimeSession is runtime.RuntimeSession
    assert runtime.RuntimeSession is onnx_light.onnx_py._onnxpykernels.runtime.RuntimeSession
    assert onnx_light.TuningCacheWarning is kernel_tuning.TuningCacheWarning
    assert issubclass(onnx_light.TuningCacheError, onnx_light.IoError)
    assert onnx_light.parse_model(TWO_OUTPUTS).graph.node[0].op_type == "MatMul"


# ---- type stubs ----------------------------------------------------------------------------------


def stub_names(path: Path) -> set:
    tree = ast.parse(path.read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {n for n in names if not n.startswith("_")}


STUBS = SOURCE / "python" / "onnx_light" / "onnx_py" / "_onnxpykernels"


@pytest.mark.parametrize("name", ["runtime", "_tuning", "__init__"])
def test_the_stubs_name_exactly_what_the_extension_has(name):
    module = onnx_light.onnx_py._onnxpykernels if name == "__init__" else getattr(onnx_light.onnx_py._onnxpykernels, name)
    actual = {n for n in dir(module) if not n.startswith("_") and not isinstance(getattr(module, n), types.ModuleType)}
    assert stub_names(STUBS / f"{name}.pyi") == actual


def test_stub_members_exist_on_the_runtime_classes():
    tree = ast.parse((STUBS / "runtime.pyi").read_text())
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        cls = getattr(runtime, node.name)
        for member in node.body:
            name = getattr(member, "name", None) or getattr(getattr(member, "target", None), "id", None)
            if name and not name.startswith("__"):
                assert hasattr(cls, name), f"{node.name}.{name}"
        documented = {getattr(m, "name", None) or getattr(getattr(m, "target", None), "id", None) for m in node.body}
        public = {n for n in dir(cls) if not n.startswith("_")}
        assert public <= documented, f"{node.name}: {public - documented} missing from the stub"


def test_mypy_strict_passes_on_the_notebook_example_and_the_package():
    build_path = Path(onnx_light.__file__).resolve().parent.parent
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental",
         str(SOURCE / "examples" / "notebook_tour.py"), str(build_path / "onnx_light")],
        capture_output=True, text=True, env=dict(os.environ, MYPYPATH=str(build_path)), timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success: no issues found" in result.stdout


# ---- the notebook tour ------------------------------------------------------------------------------


def test_the_notebook_tour_runs_as_a_script(tmp_path):
    env = dict(os.environ, HOME=str(tmp_path), XDG_CACHE_HOME=str(tmp_path / "cache"))
    result = subprocess.run(
        [sys.executable, str(SOURCE / "examples" / "notebook_tour.py"), "--budget-ms", "1500", "--runs", "3"],
        capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "inputs:  [NodeArg(name='input', type='tensor(float)', shape=['batch', 3, 96, 96])]" in out
    assert "output probabilities: shape (1, 100)" in out
    assert "profile (runs=10" in out and "FusedConv" in out and "trace: " in out
    assert "model calibration (model=" in out and "end to end" in out
    assert "median of 3 runs:" in out
    assert not (tmp_path / "cache" / "onnx-light").exists()  # everything went to its scratch directory


def test_runtime_session_run_with_a_wrong_argument_names_types_not_values(model_file):
    session = runtime.RuntimeSession(model_file)
    array = np.full((300, 3), 0.123456, np.float32)
    with pytest.raises(onnx_light.TypeMismatchError) as raised:
        session.run(array)
    message = str(raised.value)
    assert "got one ndarray" in message and "run_arrays" in message
    assert "0.123" not in message and len(message) < 300
    with pytest.raises(TypeError, match="input_feed must be a dict"):
        session.run(None, [array])
