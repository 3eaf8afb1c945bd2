"""onnx_light.onnx_py._onnxpykernels.runtime: sessions, contexts, collectors, tensors, reprs, errors."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import onnx_light
from onnx_light import kernel_tuning
from onnx_light.onnx import TensorProto, helper
from onnx_light.onnx_lib import parser
from onnx_light.onnx_py import _onnxpykernels

from conftest import ABS_MODEL_TEXT, abs_float_values

runtime = _onnxpykernels.runtime


def make_context(x: np.ndarray) -> "runtime.RuntimeContext":
    context = runtime.RuntimeContext(runtime.KernelContext(runtime.default_opset(18)))
    context.set("x", runtime.tensor_from_numpy(x))
    return context


def test_runtime_is_importable_as_a_module():
    from onnx_light.onnx_py._onnxpykernels.runtime import RuntimeSession  # noqa: F401
    import onnx_light.onnx_py._onnxpykernels.runtime as by_path

    assert by_path is runtime


@pytest.mark.parametrize("name", [
    "RuntimeParameters", "RuntimeSessionOptions", "ParallelRegionCollector", "KernelContext", "default_opset",
    "RuntimeContext", "tensor_from_proto", "tensor_to_proto", "tensor_from_numpy", "tensor_to_numpy",
    "RuntimeSession", "Tensor", "ParallelRegionEvent", "ParallelRegionReport",
])
def test_public_names_have_docstrings(name):
    assert getattr(runtime, name).__doc__


def test_session_runs_a_parsed_model(abs_model):
    session = runtime.RuntimeSession(abs_model, runtime.RuntimeSessionOptions(parameters=runtime.RuntimeParameters(1)))
    x = np.array([-1.5, 2.0, -3.25, 0.0], dtype=np.float32)
    context = make_context(x)
    assert not session.initialized
    session.run(context)
    assert session.initialized
    y = runtime.tensor_to_numpy(context.get("y"))
    assert y.dtype == np.float32 and y.shape == (4,)
    np.testing.assert_array_equal(y, np.abs(x))
    np.testing.assert_array_equal(runtime.tensor_to_numpy(context.get("y")).view(np.float32), np.abs(x))
    assert sorted(context.names()) == ["x", "y"]
    assert session.threads == 1
    assert [i.name for i in session.inputs] == ["x"] and [o.name for o in session.outputs] == ["y"]
    assert session.inputs[0].symbols == ["N"] and session.inputs[0].shape == [-1]


@pytest.mark.parametrize("kind", ["proto", "bytes", "text", "path", "bytes_text"])
def test_session_model_inputs(kind, abs_model, tmp_path):
    if kind == "proto":
        model = abs_model
    elif kind == "bytes":
        model = abs_model.SerializeToString()
    elif kind == "text":
        model = ABS_MODEL_TEXT
    elif kind == "bytes_text":
        model = ABS_MODEL_TEXT.encode()
    else:
        model = tmp_path / "abs.onnx"
        model.write_bytes(abs_model.SerializeToString())
    session = runtime.RuntimeSession(model)
    context = make_context(-np.arange(10, dtype=np.float32))
    session.run(context)
    np.testing.assert_array_equal(context.get("y").numpy(), np.arange(10, dtype=np.float32))


def test_session_model_errors(tmp_path):
    with pytest.raises(TypeError, match="model must be"):
        runtime.RuntimeSession(42)
    with pytest.raises(ValueError) as error:
        runtime.RuntimeSession("agraph (float[N] x) => (float[N] y) { y = Abs(x }")
    assert isinstance(error.value, onnx_light.ModelError)
    with pytest.raises(OSError) as missing:
        runtime.RuntimeSession(tmp_path / "missing.onnx")
    assert isinstance(missing.value, onnx_light.IoError) and "missing.onnx" in str(missing.value)
    unsupported = parser.parse_model(
        '<ir_version: 10, opset_import: ["" : 18]>'
        "agraph (float[N] x) => (float[N] y) { y = NoSuchOperator(x) }")
    with pytest.raises(ValueError, match="NoSuchOperator") as error:
        runtime.RuntimeSession(unsupported)
    assert isinstance(error.value, onnx_light.UnsupportedError)
    with pytest.raises(TypeError):
        runtime.RuntimeSession(unsupported, options="fast")


def test_run_input_errors(abs_model):
    session = runtime.RuntimeSession(abs_model)
    context = runtime.RuntimeContext()
    with pytest.raises(ValueError, match="x") as error:
        session.run(context)
    assert isinstance(error.value, onnx_light.InputError)
    context.set("x", np.zeros(3, dtype=np.int64))
    with pytest.raises(ValueError, match="x"):
        session.run(context)
    with pytest.raises(TypeError):
        session.run("context")


def test_context_mapping_protocol():
    context = runtime.RuntimeContext()
    assert len(context) == 0 and "x" not in context
    context["x"] = np.ones((2, 3), dtype=np.float64)
    context.set("b", runtime.tensor_from_numpy(np.array([True, False])))
    assert "x" in context and context.contains("b") and len(context) == 2
    assert sorted(context) == ["b", "x"]
    assert context["x"].shape == (2, 3)
    with pytest.raises(KeyError, match="missing") as error:
        context.get("missing")
    assert isinstance(error.value, onnx_light.NotFoundError)
    with pytest.raises(KeyError):
        del context["missing"]
    del context["x"]
    context.erase("b")
    assert len(context) == 0
    with pytest.raises(TypeError):
        context.set("s", "not a tensor")
    with pytest.raises(TypeError):
        context.set("o", np.array([object()]))
    with pytest.raises(TypeError):
        context.set(1, np.ones(1))


def test_kernel_context_and_default_opset():
    assert runtime.default_opset(18) == {"": 18}
    kernel_context = runtime.KernelContext(runtime.default_opset(17))
    assert kernel_context.opsets == {"": 17}
    assert runtime.KernelContext().opsets == {}
    assert runtime.RuntimeContext(kernel_context).kernel_context.opsets == {"": 17}
    assert "17" in repr(kernel_context)
    with pytest.raises(ValueError):
        runtime.default_opset(0)
    with pytest.raises(TypeError):
        runtime.KernelContext({"": "eighteen"})


def test_parameters_and_options():
    parameters = runtime.RuntimeParameters(2)
    assert parameters.num_threads == 2 and parameters.effective_threads == 2
    assert runtime.RuntimeParameters().num_threads == 0
    assert runtime.RuntimeParameters(num_threads=3).num_threads == 3
    assert runtime.RuntimeParameters(0).effective_threads == runtime.physical_core_count() >= 1
    assert repr(parameters) == "RuntimeParameters(num_threads=2)"
    with pytest.raises(ValueError, match="num_threads"):
        runtime.RuntimeParameters(-1)
    with pytest.raises(TypeError):
        runtime.RuntimeParameters("2")
    with pytest.raises(ValueError):
        parameters.num_threads = -4
    collector = runtime.ParallelRegionCollector(capacity=2)
    options = runtime.RuntimeSessionOptions(parameters=parameters, parallel_region_collector=collector)
    assert options.parameters.num_threads == 2 and options.parallel_region_collector is collector
    assert "capacity=2" in repr(options)
    bare = runtime.RuntimeSessionOptions()
    assert bare.parallel_region_collector is None and bare.parameters.num_threads == 0
    with pytest.raises(TypeError):
        runtime.RuntimeSessionOptions(parameters=2)
    with pytest.raises(TypeError):
        runtime.RuntimeSessionOptions(parallel_region_collector="yes")


def test_collector_events_and_dropped_count(abs_model, tmp_path):
    cache = tmp_path / "t.cache"
    # A threshold of 1 element makes every Abs call a parallel region for 2-thread sessions.
    kernel_tuning.set_kernel_tuning_parameters("Abs", 1, {"parallel.minimum_elements": 1}, path=cache, num_threads=2)
    collector = runtime.ParallelRegionCollector(capacity=2)
    assert collector.capacity == 2
    session = runtime.RuntimeSession(abs_model, runtime.RuntimeSessionOptions(
        parameters=runtime.RuntimeParameters(2), parallel_region_collector=collector))
    context = make_context(-np.ones(4096, dtype=np.float32))
    for _ in range(3):
        session.run(context)
    report = session.parallel_region_report()
    assert len(report.events) == 2 and report.dropped_events == 1 and len(report) == 2
    event = report.events[0]
    assert event.requested_threads == 2 and event.admitted_threads == 2
    assert event.iterations == 4096 and event.grain >= 1 and event.wall_time_ns >= 0
    assert "Abs" in event.label
    assert repr(event).startswith("ParallelRegionEvent(label=")
    assert "admitted_threads=2" in repr(event)
    assert "dropped_events=1" in repr(report)
    assert "ParallelRegionCollector(capacity=2, events=2, dropped_events=1)" == repr(collector)
    assert collector.report().dropped_events == 1
    collector.clear()
    assert collector.report().events == [] and collector.report().dropped_events == 0
    resolved = session.resolved_tuning()
    assert resolved and resolved[0]["kernel"] == "Abs"
    assert resolved[0]["values"] == abs_float_values(1)
    assert resolved[0]["source"] == "published_profile"
    with pytest.raises(ValueError):
        runtime.ParallelRegionCollector(capacity=-1)
    with pytest.raises(TypeError):
        runtime.ParallelRegionCollector(capacity="4")


def test_session_without_collector_has_an_empty_report(abs_model):
    session = runtime.RuntimeSession(abs_model)
    session.run(make_context(np.ones(8, dtype=np.float32)))
    report = session.parallel_region_report()
    assert report.events == [] and report.dropped_events == 0


def test_reprs_are_readable(abs_model):
    collector = runtime.ParallelRegionCollector(capacity=4)
    session = runtime.RuntimeSession(abs_model, runtime.RuntimeSessionOptions(
        parameters=runtime.RuntimeParameters(2), parallel_region_collector=collector))
    text = repr(session)
    assert text.startswith("RuntimeSession(") and "x: float[N]" in text and "y: float[N]" in text
    assert "threads=2" in text and "initialized=False" in text
    tensor = runtime.tensor_from_numpy(np.arange(20, dtype=np.float32))
    assert repr(tensor).startswith("Tensor(float[20]: [0, 1, 2")
    assert "more" in repr(tensor)
    context = make_context(np.ones(3, dtype=np.float32))
    assert repr(context) == "RuntimeContext(opsets={'': 18}, values={x: float[3]})"


def test_new_session_uses_newly_published_values_old_session_keeps_its_own(abs_model, tmp_path):
    cache = tmp_path / "t.cache"
    n = 8192
    kernel_tuning.set_kernel_tuning_parameters("Abs", 1, {"parallel.minimum_elements": n + 1}, path=cache,
                                               num_threads=2)

    def profiled():
        collector = runtime.ParallelRegionCollector(capacity=8)
        return runtime.RuntimeSession(abs_model, runtime.RuntimeSessionOptions(
            parameters=runtime.RuntimeParameters(2), parallel_region_collector=collector))

    old = profiled()
    context = make_context(-np.ones(n, dtype=np.float32))
    old.run(context)
    kernel_tuning.set_kernel_tuning_parameters("Abs", 1, {"parallel.minimum_elements": n // 2}, path=cache,
                                               num_threads=2)
    old.run(context)
    new = profiled()
    new.run(context)
    assert [e.admitted_threads for e in old.parallel_region_report().events] == [1, 1]
    assert [e.admitted_threads for e in new.parallel_region_report().events] == [2]


def test_outputs_held_by_python_are_never_overwritten(abs_model):
    session = runtime.RuntimeSession(abs_model)
    context = make_context(-np.full(16, 2.0, dtype=np.float32))
    session.run(context)
    held = context.get("y")
    as_numpy = runtime.tensor_to_numpy(held)
    context.set("x", -np.full(16, 7.0, dtype=np.float32))
    session.run(context)
    np.testing.assert_array_equal(held.numpy(), np.full(16, 2.0, dtype=np.float32))
    np.testing.assert_array_equal(as_numpy, np.full(16, 2.0, dtype=np.float32))
    np.testing.assert_array_equal(context.get("y").numpy(), np.full(16, 7.0, dtype=np.float32))


def test_tensor_proto_round_trip_and_errors():
    x = np.arange(6, dtype=np.int32).reshape(2, 3)
    proto = helper.make_tensor("t", TensorProto.INT32, [2, 3], x.flatten().tolist())
    tensor = runtime.tensor_from_proto(proto)
    assert tensor.shape == (2, 3) and tensor.element_type == TensorProto.INT32
    assert tensor.element_type_name == "int32" and tensor.ndim == 2 and tensor.element_count == 6
    assert tensor.byte_size == 24 and tensor.tobytes() == x.tobytes() and tensor.describe() == "int32[2, 3]"
    np.testing.assert_array_equal(np.asarray(tensor), x)
    assert runtime.tensor_from_proto(proto.SerializeToString()).shape == (2, 3)
    back = runtime.tensor_to_proto(tensor, name="back")
    assert isinstance(back, TensorProto) and back.name == "back" and list(back.dims) == [2, 3]
    np.testing.assert_array_equal(runtime.tensor_to_numpy(runtime.tensor_from_proto(back)), x)
    with pytest.raises(TypeError, match="TensorProto"):
        runtime.tensor_from_proto(3.5)
    with pytest.raises(ValueError) as error:
        runtime.tensor_from_proto(TensorProto(name="empty", data_type=TensorProto.FLOAT, dims=[4]))
    assert isinstance(error.value, onnx_light.ModelError) and "empty" in str(error.value)
    with pytest.raises(ValueError):
        runtime.tensor_from_proto(helper.make_tensor("s", TensorProto.STRING, [1], [b"a"]))
    with pytest.raises(ValueError):
        runtime.tensor_from_proto(b"\xff\xff\xff not a proto")


def test_concurrent_runs_of_one_session_are_serialised(abs_model):
    session = runtime.RuntimeSession(abs_model, runtime.RuntimeSessionOptions(parameters=runtime.RuntimeParameters(2)))
    contexts = [make_context(-np.full(50000, float(i), dtype=np.float32)) for i in range(4)]
    errors = []

    def work(context):
        try:
            for _ in range(20):
                session.run(context)
        except Exception as error:  # noqa: BLE001
            errors.append(error)

    threads = [threading.Thread(target=work, args=(c,)) for c in contexts]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for i, context in enumerate(contexts):
        np.testing.assert_array_equal(context.get("y").numpy(), np.full(50000, float(i), dtype=np.float32))


# ---- run_arrays: the positional fast path ---------------------------------------------------------

def test_run_arrays_returns_results_as_numpy(abs_model):
    session = runtime.RuntimeSession(abs_model)
    x = np.linspace(-2, 2, 1000, dtype=np.float32)
    (y,) = session.run_arrays([x])
    assert isinstance(y, np.ndarray) and y.dtype == np.float32 and y.shape == (1000,)
    np.testing.assert_array_equal(y, np.abs(x))
    (y2,) = session.run_arrays([-x])  # y is the caller's: a later run never changes it
    np.testing.assert_array_equal(y, np.abs(x))
    np.testing.assert_array_equal(y2, np.abs(x))


def test_run_arrays_writes_into_the_given_output(abs_model):
    session = runtime.RuntimeSession(abs_model)
    x = np.array([-1.0, 2.0, -3.0], dtype=np.float32)
    out = np.full(3, 99.0, dtype=np.float32)
    (returned,) = session.run_arrays([x], [out])
    assert returned is out
    np.testing.assert_array_equal(out, [1.0, 2.0, 3.0])


def test_run_arrays_accepts_strided_and_foreign_inputs(abs_model):
    session = runtime.RuntimeSession(abs_model)
    base = np.arange(-10, 10, dtype=np.float32)
    (y,) = session.run_arrays([base[::2]])  # not contiguous: copied
    np.testing.assert_array_equal(y, np.abs(base[::2]))
    (y,) = session.run_arrays([np.array([-1.0, -2.0], dtype=np.float32)])
    np.testing.assert_array_equal(y, [1.0, 2.0])
    with pytest.raises(onnx_light.InputError, match="input 'x' must be float"):
        session.run_arrays([[-1.0, -2.0]])  # a list: numpy makes it float64


def test_run_arrays_output_at_any_float_offset_is_written_exactly(abs_model):
    # NumPy memory is often only 16-byte aligned; the span loops align their stores with a masked
    # head, which must write the view and nothing around it.
    session = runtime.RuntimeSession(abs_model)
    x = np.linspace(-3, 3, 1001, dtype=np.float32)
    for offset in range(8):
        backing = np.full(1001 + 16, 99.0, dtype=np.float32)
        out = backing[offset + 4:offset + 4 + 1001]
        (returned,) = session.run_arrays([x], [out])
        assert returned is out
        np.testing.assert_array_equal(out, np.abs(x))
        np.testing.assert_array_equal(backing[:offset + 4], 99.0)
        np.testing.assert_array_equal(backing[offset + 4 + 1001:], 99.0)


def test_run_arrays_output_that_does_not_fit_raises_naming_it(abs_model):
    session = runtime.RuntimeSession(abs_model)
    x = np.ones(4, dtype=np.float32)
    wrong = np.zeros(3, dtype=np.float32)
    with pytest.raises(onnx_light.InputError, match=r"outputs\[0\] \('y'\).*float\[4\]"):
        session.run_arrays([x], [wrong])
    np.testing.assert_array_equal(wrong, 0)  # never written
    read_only = np.zeros(4, dtype=np.float32)
    read_only.setflags(write=False)
    with pytest.raises(ValueError, match="writeable"):
        session.run_arrays([x], [read_only])
    with pytest.raises(ValueError, match="1 output"):
        session.run_arrays([x], [])
    with pytest.raises(ValueError, match="takes 1 input"):
        session.run_arrays([], None)


# ---- Relu fused into a packed MatMul -------------------------------------------------------------

MATMUL_RELU_TEXT = (
    '<ir_version: 8, opset_import: ["" : 17]>'
    "g (float[M, K] a, float[K, N] b) => (float[M, N] y) { p = MatMul(a, b)\n y = Relu(p) }"
)


def test_fuse_activations_option_keeps_results_and_drops_the_relu_step():
    from onnx_light.onnx_lib import parser

    model = parser.parse_model(MATMUL_RELU_TEXT)
    a = np.linspace(-1, 1, 6 * 7, dtype=np.float32).reshape(6, 7)
    b = np.linspace(1, -1, 7 * 5, dtype=np.float32).reshape(7, 5)
    assert runtime.RuntimeSessionOptions().fuse_activations is True
    assert "fuse_activations=False" in repr(runtime.RuntimeSessionOptions(fuse_activations=False))
    results, steps = {}, {}
    for fuse in (True, False):
        options = runtime.RuntimeSessionOptions(fuse_activations=fuse)
        options.optimization = "none"  # the graph as written: this is the session's own Relu fusion
        session = runtime.RuntimeSession(model, options)
        (results[fuse],) = session.run_arrays([a, b])
        steps[fuse] = [entry["node"] for entry in session.resolved_tuning()]
    np.testing.assert_array_equal(results[True], results[False])
    np.testing.assert_allclose(results[False], np.maximum(a.astype(np.float64) @ b, 0), rtol=1e-5, atol=1e-6)
    assert len(steps[False]) == 2
    packed = session.resolved_tuning()[0]["implementation"] != "portable"
    # Only the packed (avx2/avx512) MatMul applies Relu in its store; the portable one keeps the node.
    assert len(steps[True]) == (1 if packed else 2)
    if packed:
        assert "Relu node" in steps[True][0]


def test_models_breaking_the_schema_or_from_a_newer_opset_are_refused_at_load():
    arity = '<ir_version: 8, opset_import: ["" : 13]>\ng (float[4] x) => (float[4] y) {\n y = Abs(x, x, x)\n}'
    with pytest.raises(onnx_light.ModelError, match=r"Abs node #0 \(opset 13\): has input size 3"):
        runtime.RuntimeSession(arity)
    future = '<ir_version: 8, opset_import: ["" : 99]>\ng (float[4] x) => (float[4] y) {\n y = Abs(x)\n}'
    with pytest.raises(onnx_light.ModelError, match="opset 99, newer than the newest this runtime implements"):
        runtime.RuntimeSession(future)
    options = runtime.RuntimeSessionOptions()
    assert options.allow_newer_opset is False
    options.allow_newer_opset = True
    runtime.RuntimeSession(future, options)


def test_a_value_over_the_memory_limit_raises_memory_limit_error_naming_the_node():
    model = '<ir_version: 8, opset_import: ["" : 17]>\ng (int64[2] s) => (float[A, B] y) {\n y = ConstantOfShape(s)\n}'
    options = runtime.RuntimeSessionOptions(max_memory_bytes=1 << 20)
    assert options.max_memory_bytes == 1 << 20
    session = runtime.RuntimeSession(model, options)
    context = runtime.RuntimeContext()
    context.set("s", runtime.tensor_from_numpy(np.array([1024, 1024], np.int64)))
    with pytest.raises(onnx_light.MemoryLimitError,
                       match=r"ConstantOfShape node #0: output 'y' of type float and shape \[1024, 1024\] "
                             r"needs 4\.0 MiB \(4194304 bytes\), over the session's memory limit of 1\.0 MiB"):
        session.run(context)
    assert issubclass(onnx_light.MemoryLimitError, MemoryError)
    context.set("s", runtime.tensor_from_numpy(np.array([2, 3], np.int64)))
    session.run(context)  # the session is still usable
    assert runtime.tensor_to_numpy(context.get("y")).shape == (2, 3)
