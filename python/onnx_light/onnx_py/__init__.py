"""The compiled part of onnx_light.

``_onnxpykernels`` is the pybind11 extension over libruntime and libtune; its ``runtime``
submodule is the public runtime API::

    from onnx_light.onnx_py import _onnxpykernels
    runtime = _onnxpykernels.runtime
"""
