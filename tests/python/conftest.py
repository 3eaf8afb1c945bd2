"""Shared fixtures of the onnx_light Python tests.

Before anything imports onnx_light (whose import loads the default cache), HOME and
XDG_CACHE_HOME point at a private temporary directory, ONNX_LIGHT_TUNING_CACHE is unset and the
system cache layer is disabled, so no test reads or writes a real user's cache.
"""
from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

_SANDBOX = Path(tempfile.mkdtemp(prefix="onnx_light_pytest_"))
atexit.register(shutil.rmtree, _SANDBOX, ignore_errors=True)
(_SANDBOX / "home").mkdir()
os.environ["HOME"] = str(_SANDBOX / "home")
os.environ["XDG_CACHE_HOME"] = str(_SANDBOX / "xdg-cache")
os.environ.pop("ONNX_LIGHT_TUNING_CACHE", None)
os.environ.pop("ONNX_LIGHT_NO_AUTOLOAD", None)
os.environ["ONNX_LIGHT_SYSTEM_TUNING_CACHE"] = ""

HERE = Path(__file__).resolve().parent
ABS_MODEL_TEXT = (
    '<ir_version: 10, opset_import: ["" : 18]>'
    "agraph (float[N] x) => (float[N] y) { y = Abs(x) }"
)


def sandbox_env(root: Path, **extra: str) -> dict:
    """An environment for a child process whose caches all live under `root`."""
    env = dict(os.environ)
    (root / "home").mkdir(parents=True, exist_ok=True)
    env["HOME"] = str(root / "home")
    env["XDG_CACHE_HOME"] = str(root / "xdg-cache")
    env.pop("ONNX_LIGHT_TUNING_CACHE", None)
    env.pop("ONNX_LIGHT_NO_AUTOLOAD", None)
    env["ONNX_LIGHT_SYSTEM_TUNING_CACHE"] = ""
    env.update(extra)
    return env


def run_python(code: str, env: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
    """Runs `code` in a fresh interpreter (fresh tuning registry) with this test run's PYTHONPATH."""
    result = subprocess.run(
        [sys.executable, "-c", code], env=env if env is not None else dict(os.environ),
        capture_output=True, text=True, timeout=300,
    )
    if check and result.returncode != 0:
        raise AssertionError(f"python exited {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}")
    return result


def python_json(code: str, env: dict | None = None):
    """Runs `code` (which must print one JSON document) in a fresh interpreter and parses it."""
    return json.loads(run_python(code, env).stdout)


@pytest.fixture
def cache_path(tmp_path: Path) -> str:
    """A cache file path in a fresh temporary directory (the file does not exist yet)."""
    return str(tmp_path / "kernel_tuning.cache")


@pytest.fixture
def abs_model():
    from onnx_light.onnx_lib import parser

    return parser.parse_model(ABS_MODEL_TEXT)


@pytest.fixture(scope="session")
def cli() -> str:
    """The onnx-light-tune executable (ctest passes it in ONNX_LIGHT_CLI)."""
    path = os.environ.get("ONNX_LIGHT_CLI")
    if not path:
        pytest.skip("ONNX_LIGHT_CLI is not set (ctest sets it to the built onnx-light-tune)")
    if not os.access(path, os.X_OK):
        pytest.fail(f"ONNX_LIGHT_CLI={path} is not an executable")
    return path


@pytest.fixture
def run_cli(cli):
    """run_cli(*args, env=None, check=True) -> CompletedProcess of onnx-light-tune."""

    def run(*args: str, env: dict | None = None, check: bool = True) -> subprocess.CompletedProcess:
        result = subprocess.run(
            [cli, *args], env=env if env is not None else dict(os.environ),
            capture_output=True, text=True, timeout=300,
        )
        if check and result.returncode != 0:
            raise AssertionError(
                f"onnx-light-tune {' '.join(args)} exited {result.returncode}\n"
                f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
            )
        return result

    return run


def pytest_sessionfinish(session, exitstatus):
    """A run in which no test passed (nothing collected, everything skipped or deselected) fails."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    passed = len(reporter.stats.get("passed", [])) if reporter is not None else session.testscollected
    if exitstatus == 0 and passed == 0:
        session.exitstatus = pytest.ExitCode.NO_TESTS_COLLECTED


def abs_float_values(minimum_elements: int) -> dict:
    """What a float Abs profile holds after setting only parallel.minimum_elements: that value and
    the defaults of the host's implementation for every other parameter (the avx2 kernel also has
    store.streaming_minimum_elements; the portable one has nothing else)."""
    from onnx_light import kernel_tuning

    (entry,) = kernel_tuning.kernel_tuning_parameters(kernel="Abs", element_type=1)["kernels"]
    return {**entry["defaults"], "parallel.minimum_elements": minimum_elements}
