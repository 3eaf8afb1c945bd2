#!/usr/bin/python3
"""Quantized MatMul models for the peer harness (issue 17: int8 MatMulInteger and QLinearMatMul at
1024x1024x1024 against our float GEMM and against ONNX Runtime), with the manifest.tsv that
`bench/peer_compare.py` and ../shared/peer's ort_c_bench read:

    /usr/bin/python3 bench/integer_matmul_models.py OUT_DIR [FILTER]

The peer harness feeds float32 tensors only, so each quantized model quantizes its float input
first and returns floats; those steps touch M*K + M*N elements against the product's M*N*K
multiply-adds (under 0.3% of the work at 1024^3), and both runtimes pay them:

- fmm_M_K_N:   MatMul float[M,K] x W float[K,N] (W an initializer): the float GEMM to beat by 2x
- mmi_M_K_N:   QuantizeLinear(x) -> uint8, MatMulInteger with W int8 (initializer, per-tensor zero
               points), Cast to float: the int32 product
- qlmm_M_K_N:  QuantizeLinear(x) -> uint8, QLinearMatMul with W int8 -> uint8, DequantizeLinear
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

SHAPES = [(1024, 1024, 1024), (256, 1024, 1024), (128, 768, 768)]


def models():
    for m, k, n in SHAPES:
        yield f"fmm_{m}_{k}_{n}", m, k, n, "float"
        yield f"mmi_{m}_{k}_{n}", m, k, n, "integer"
        yield f"qlmm_{m}_{k}_{n}", m, k, n, "qlinear"


def build(name, m, k, n, kind, rng):
    scalar = lambda nm, v, t: helper.make_tensor(nm, t, [], [v])
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])
    if kind == "float":
        w = numpy_helper.from_array(rng.uniform(-1, 1, (k, n)).astype(np.float32), "w")
        nodes = [helper.make_node("MatMul", ["x", "w"], ["y"])]
        inits = [w]
    else:
        wq = numpy_helper.from_array(rng.integers(-128, 128, (k, n), dtype=np.int8), "wq")
        inits = [wq, scalar("xs", 1 / 127.0, TensorProto.FLOAT), scalar("xz", 128, TensorProto.UINT8),
                 scalar("wz", 0, TensorProto.INT8)]
        nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"])]
        if kind == "integer":
            nodes += [helper.make_node("MatMulInteger", ["xq", "wq", "xz", "wz"], ["acc"]),
                      helper.make_node("Cast", ["acc"], ["y"], to=TensorProto.FLOAT)]
        else:
            inits += [scalar("ws", 1 / 64.0, TensorProto.FLOAT), scalar("ys", float(k) / 256.0, TensorProto.FLOAT),
                      scalar("yz", 128, TensorProto.UINT8)]
            nodes += [helper.make_node("QLinearMatMul", ["xq", "xs", "xz", "wq", "ws", "wz", "ys", "yz"], ["yq"]),
                      helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])]
    graph = helper.make_graph(nodes, name, [x], [y], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main(out, only=""):
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(17)
    lines = ["# name\tfile\tkind\tN\tbytes\tflops\tinputs\toutputs"]
    for name, m, k, n, kind in models():
        if only not in name:
            continue
        onnx.save(build(name, m, k, n, kind, rng), os.path.join(out, name + ".onnx"))
        lines.append(f"{name}\t{name}.onnx\tgemm\t0\t0\t{2 * m * k * n}\tx:float32:{m}x{k}\ty:float32:{m}x{n}")
    with open(os.path.join(out, "manifest.tsv"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/integer_matmul_models", sys.argv[2] if len(sys.argv) > 2 else "")
