"""RuntimeSessionOptions.optimization: the graph optimizer's level from Python, and its report."""
from __future__ import annotations

import numpy as np
import pytest

from onnx_light.onnx_py import _onnxpykernels

runtime = _onnxpykernels.runtime

# Identity (basic removes it), then a Gemm + Relu (all fuses it into FusedGemm).
MODEL = ('<ir_version: 8, opset_import: ["" : 17]>\n'
         'g (float[3, 8] x, float[8, 5] w) => (float[3, 5] y) { i = Identity(x)\n g = Gemm(i, w)\n y = Relu(g) }')


def session(level: str):
    options = runtime.RuntimeSessionOptions(parameters=runtime.RuntimeParameters(1))
    options.optimization = level
    return runtime.RuntimeSession(MODEL, options)


def test_default_is_all_and_levels_are_named():
    assert runtime.RuntimeSessionOptions().optimization == "all"
    with pytest.raises(ValueError, match="most"):
        runtime.RuntimeSessionOptions().optimization = "most"


def test_levels_report_their_transforms_and_agree():
    rng = np.random.default_rng(3)
    inputs = [rng.uniform(-1, 1, (3, 8)).astype(np.float32), rng.uniform(-1, 1, (8, 5)).astype(np.float32)]
    results = {}
    for level in ("none", "basic", "all"):
        s = session(level)
        report = s.optimization_report()
        assert report["level"] == level
        assert report["nodes_before"] == 3
        results[level] = (s.run_arrays(inputs)[0], report)
    assert results["none"][1]["transforms"] == []
    assert results["none"][1]["nodes_after"] == 3
    applied = {t["name"]: t["applied"] for t in results["all"][1]["transforms"]}
    assert applied["identity_elimination"] == 1
    assert applied["epilogue_fusion"] == 1
    assert results["all"][1]["nodes_after"] == 1
    assert results["basic"][1]["nodes_after"] == 2
    np.testing.assert_array_equal(results["basic"][0], results["none"][0])
    np.testing.assert_allclose(results["all"][0], results["none"][0], rtol=1e-5, atol=1e-6)
