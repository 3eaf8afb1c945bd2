"""The user's gallery example, run unchanged as a script (the contract of issue 5)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import HERE, sandbox_env


def test_gallery_example_runs_unchanged(tmp_path: Path):
    env = sandbox_env(tmp_path)
    default_cache = Path(env["XDG_CACHE_HOME"]) / "onnx-light" / "kernel_tuning.cache"
    result = subprocess.run(
        [sys.executable, str(HERE / "gallery_example.py")],
        env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    out = result.stdout
    assert f"default cache: {default_cache}" in out
    assert "'active_source': 'portable_default'" in out
    assert "'cached_values': None" in out
    assert "proposed calibrations:" in out
    assert "'status': 'updated'" in out
    assert "active source: published_profile" in out
    assert "old session admitted 1 participant, new session admitted 2" in out
    assert "calibrated profile:" in out and "diagnostics:" in out
    # save=False: the calibration published in-process only; the default cache was never written.
    assert not default_cache.exists()
    assert not any(Path(env["HOME"]).rglob("*.cache"))


def test_gallery_example_uses_onnx_light_tuning_cache_variable(tmp_path: Path):
    chosen = tmp_path / "chosen" / "tuning.cache"
    env = sandbox_env(tmp_path, ONNX_LIGHT_TUNING_CACHE=str(chosen))
    result = subprocess.run(
        [sys.executable, str(HERE / "gallery_example.py")],
        env=env, capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )
    assert result.returncode == 0, f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    assert f"default cache: {chosen}" in result.stdout
    assert not chosen.exists()
    assert os.listdir(tmp_path / "home") == []
