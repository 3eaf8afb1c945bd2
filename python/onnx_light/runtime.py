"""The runtime's lower-level API: tensors, contexts, sessions, parallel-region profiling.

The same objects as ``onnx_light.onnx_py._onnxpykernels.runtime`` (the seed gallery's spelling,
which keeps working), under a public name::

    from onnx_light import runtime
    session = runtime.RuntimeSession("model.onnx", runtime.RuntimeSessionOptions(num_threads=2))

For ONNX Runtime's ``run(None, feeds)`` style see :class:`onnx_light.InferenceSession`.
"""
from typing import List

from .onnx_py._onnxpykernels.runtime import (
    KernelContext,
    ParallelRegionCollector,
    ParallelRegionEvent,
    ParallelRegionReport,
    RuntimeContext,
    RuntimeParameters,
    RuntimeSession,
    RuntimeSessionOptions,
    Tensor,
    ValueInfo,
    default_opset,
    effective_threads,
    live_thread_pools,
    physical_core_count,
    tensor_from_numpy,
    tensor_from_proto,
    tensor_to_numpy,
    tensor_to_proto,
)

__all__ = [
    "KernelContext",
    "ParallelRegionCollector",
    "ParallelRegionEvent",
    "ParallelRegionReport",
    "RuntimeContext",
    "RuntimeParameters",
    "RuntimeSession",
    "RuntimeSessionOptions",
    "Tensor",
    "ValueInfo",
    "default_opset",
    "effective_threads",
    "live_thread_pools",
    "physical_core_count",
    "tensor_from_numpy",
    "tensor_from_proto",
    "tensor_to_numpy",
    "tensor_to_proto",
]


def __dir__() -> List[str]:
    return sorted(__all__)
