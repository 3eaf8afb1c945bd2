"""The package: imports (with the onnx package in either order), autoload at import, errors, parser."""
from __future__ import annotations

import pytest

import onnx_light
from onnx_light import kernel_tuning
from onnx_light.onnx_lib import parser

from conftest import ABS_MODEL_TEXT, abs_float_values, python_json, run_python, sandbox_env

# ---- imports ---------------------------------------------------------------------------------

CHECKABLE_MODEL_TEXT = ABS_MODEL_TEXT.replace("ir_version: 10", "ir_version: 8").replace('"" : 18', '"" : 17')
SEED_IMPORTS = """
from onnx_light import kernel_tuning
from onnx_light.onnx import TensorProto
from onnx_light.onnx_lib import parser
from onnx_light.onnx_py import _onnxpykernels
runtime = _onnxpykernels.runtime
"""


@pytest.mark.parametrize("order", ["onnx_first", "onnx_light_first", "onnx_light_only"])
def test_onnx_and_onnx_light_in_one_process(order, tmp_path):
    """Both extensions link the same shared libonnx_proto/libprotobuf: no duplicate descriptors."""
    before = {"onnx_first": "import onnx, onnx.checker, onnx.onnx_cpp2py_export\n",
              "onnx_light_first": "", "onnx_light_only": ""}[order]
    after = "import onnx, onnx.checker\n" if order != "onnx_light_only" else ""
    code = before + SEED_IMPORTS + after + f"""
import numpy as np, onnx
# onnx 1.12's checker (its C++ code, over the shared libonnx_proto) knows IR 8 and opset 17 at most.
model = parser.parse_model({CHECKABLE_MODEL_TEXT!r})
onnx.checker.check_model(model)
onnx.shape_inference.infer_shapes(model)
session = runtime.RuntimeSession(model)
context = runtime.RuntimeContext()
proto = onnx.numpy_helper.from_array(-np.arange(5, dtype=np.float32), name="x")
context.set("x", runtime.tensor_from_proto(proto))
session.run(context)
print(runtime.tensor_to_numpy(context.get("y")).tolist())
"""
    result = run_python(code, sandbox_env(tmp_path))
    assert result.stdout.strip() == "[0.0, 1.0, 2.0, 3.0, 4.0]"
    assert "already exists" not in result.stderr and "CHECK failed" not in result.stderr


def test_onnx_module_reexports_the_onnx_package():
    import onnx

    from onnx_light import onnx as reexport

    assert reexport.TensorProto is onnx.TensorProto and reexport.ModelProto is onnx.ModelProto
    assert reexport.helper is onnx.helper and reexport.numpy_helper is onnx.numpy_helper
    assert reexport.shape_inference is onnx.shape_inference  # any other onnx name, through __getattr__
    with pytest.raises(AttributeError):
        reexport.no_such_name  # noqa: B018


def test_version_and_errors_exported():
    assert onnx_light.__version__.count(".") == 2
    for name in ("Error", "NotFoundError", "InvalidValueError", "TypeMismatchError", "ModelError",
                 "UnsupportedError", "InputError", "IoError", "CalibrationMismatch"):
        assert getattr(onnx_light, name).__module__ == "onnx_light"
        assert issubclass(getattr(onnx_light, name), RuntimeError)
    assert issubclass(onnx_light.NotFoundError, KeyError)
    assert issubclass(onnx_light.InvalidValueError, ValueError)
    assert issubclass(onnx_light.TypeMismatchError, TypeError)
    for name in ("ModelError", "UnsupportedError", "InputError"):
        assert issubclass(getattr(onnx_light, name), ValueError)
    assert issubclass(onnx_light.IoError, OSError)
    assert str(onnx_light.NotFoundError("no kernel 'X'")) == "no kernel 'X'"


# ---- autoload at import -------------------------------------------------------------------


AUTOLOAD_PROBE = """
import json, warnings
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import onnx_light
    from onnx_light import kernel_tuning
(entry,) = kernel_tuning.kernel_tuning_parameters(kernel="Abs", element_type=1, num_threads=2)["kernels"]
print(json.dumps({
    "warnings": [str(w.message) for w in caught if issubclass(w.category, onnx_light.TuningCacheWarning)],
    "report": onnx_light.autoload_report,
    "active": entry["active_values"],
    "source": entry["active_source"],
}))
"""


def test_import_loads_the_default_cache(run_cli, tmp_path):
    env = sandbox_env(tmp_path)
    run_cli("set", "Abs", "parallel.minimum_elements=4096", "--threads", "2", env=env)  # the default cache
    result = python_json(AUTOLOAD_PROBE, env)
    assert result["warnings"] == []
    assert result["report"]["status"] == "loaded"
    assert result["active"] == abs_float_values(4096)
    assert result["source"] == "published_profile"


def test_import_without_a_cache_loads_nothing(tmp_path):
    result = python_json(AUTOLOAD_PROBE, sandbox_env(tmp_path))
    assert result["report"] is None and result["warnings"] == []
    assert result["source"] == "portable_default"


def test_import_with_a_malformed_cache_warns_and_succeeds(tmp_path):
    env = sandbox_env(tmp_path)
    cache = tmp_path / "xdg-cache" / "onnx-light" / "kernel_tuning.cache"
    cache.parent.mkdir(parents=True)
    cache.write_text("not = [valid toml\n")
    result = python_json(AUTOLOAD_PROBE, env)
    assert len(result["warnings"]) == 1 and "malformed" in result["warnings"][0]
    assert result["report"]["status"] == "malformed"
    assert result["source"] == "portable_default"
    assert cache.read_text() == "not = [valid toml\n"


def test_import_with_an_invalid_profile_warns(run_cli, tmp_path):
    env = sandbox_env(tmp_path)
    run_cli("set", "Abs", "parallel.minimum_elements=4096", "--threads", "2", env=env)
    cache = tmp_path / "xdg-cache" / "onnx-light" / "kernel_tuning.cache"
    cache.write_text(cache.read_text().replace("4096", "-1"))
    result = python_json(AUTOLOAD_PROBE, env)
    assert len(result["warnings"]) == 1 and "invalid" in result["warnings"][0]
    assert result["source"] == "portable_default"


def test_import_with_an_unreadable_cache_location_warns_or_ignores(tmp_path):
    env = sandbox_env(tmp_path, ONNX_LIGHT_TUNING_CACHE=str(tmp_path))  # a directory, not a file
    result = python_json(AUTOLOAD_PROBE, env)
    assert result["source"] == "portable_default"
    assert len(result["warnings"]) == 1


def test_import_without_home_succeeds(tmp_path):
    env = sandbox_env(tmp_path)
    for name in ("HOME", "XDG_CACHE_HOME", "ONNX_LIGHT_TUNING_CACHE"):
        env.pop(name, None)
    result = python_json(AUTOLOAD_PROBE.replace('num_threads=2)', 'num_threads=2, path="/nonexistent/x.cache")'), env)
    assert result["report"] is None and result["warnings"] == []


def test_autoload_can_be_turned_off(run_cli, tmp_path):
    env = sandbox_env(tmp_path)
    run_cli("set", "Abs", "parallel.minimum_elements=4096", "--threads", "2", env=env)
    env["ONNX_LIGHT_NO_AUTOLOAD"] = "1"
    result = python_json(AUTOLOAD_PROBE, env)
    assert result["report"] is None and result["source"] == "portable_default"


# ---- parser ------------------------------------------------------------------------------


def test_parse_model_returns_a_model_proto():
    import onnx

    model = parser.parse_model(ABS_MODEL_TEXT)
    assert isinstance(model, onnx.ModelProto)
    assert model.ir_version == 10
    assert [(o.domain, o.version) for o in model.opset_import] == [("", 18)]
    assert model.graph.name == "agraph"
    assert [n.op_type for n in model.graph.node] == ["Abs"]
    assert parser.parse_model(ABS_MODEL_TEXT.encode()) == model
    assert parser.parse_model.__doc__


def test_parse_model_errors():
    with pytest.raises(ValueError) as error:
        parser.parse_model("agraph (float[N] x) => (float[N] y) { y = Abs(x ")
    assert isinstance(error.value, onnx_light.ModelError)
    assert str(error.value)
    with pytest.raises(TypeError):
        parser.parse_model(42)


def test_pytest_runs_this_suite_with_the_built_package():
    """The package under test is the build tree's (PYTHONPATH), not an installed copy."""
    import os

    location = os.path.dirname(onnx_light.__file__)
    assert os.path.exists(os.path.join(location, "onnx_py"))
    assert kernel_tuning.__file__.startswith(location)
