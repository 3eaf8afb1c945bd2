"""A MobileNetV3-style test model for the graph optimizer, written with the onnx package.

Blocks as exporters write them: Conv + BatchNormalization + decomposed HardSwish
(x * Clip(x + 3, 0, 6) / 6), depthwise 3x3 Conv + BatchNormalization + Relu, 1x1 projection Conv +
BatchNormalization with a residual Add, a squeeze-excite gate (GlobalAveragePool, 1x1 Convs,
HardSigmoid, Mul), and a Flatten/Gemm head. Random weights (seeded), opset 13.
Usage: /usr/bin/python3 bench/mobilenet_like.py OUT.onnx [HEIGHT WIDTH]
Then: onnx-light-tune run OUT.onnx -i x=random:1 --optimize none|all --repeat 200 --warmup 20 --profile
"""
from __future__ import annotations

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(5)
nodes: list[onnx.NodeProto] = []
inits: list[onnx.TensorProto] = []
counter = [0]


def name(base: str) -> str:
    counter[0] += 1
    return f"{base}_{counter[0]}"


def const(values: np.ndarray, base: str) -> str:
    n = name(base)
    inits.append(numpy_helper.from_array(values.astype(np.float32), n))
    return n


def scalar(v: float) -> str:
    n = name("c")
    nodes.append(helper.make_node("Constant", [], [n], value=numpy_helper.from_array(np.array(v, np.float32))))
    return n


def conv_bn(x: str, cin: int, cout: int, k: int, stride: int = 1, group: int = 1) -> str:
    w = const(rng.normal(0, (2.0 / (cin // group * k * k)) ** 0.5, (cout, cin // group, k, k)), "w")
    c = name("conv")
    nodes.append(helper.make_node("Conv", [x, w], [c], kernel_shape=[k, k], strides=[stride, stride],
                                  pads=[k // 2] * 4, group=group))
    y = name("bn")
    nodes.append(helper.make_node("BatchNormalization", [c, const(rng.uniform(0.5, 1.5, cout), "s"),
                                                         const(rng.normal(0, 0.1, cout), "b"),
                                                         const(rng.normal(0, 0.1, cout), "m"),
                                                         const(rng.uniform(0.5, 1.5, cout), "v")], [y]))
    return y


def hard_swish(x: str) -> str:
    a, c, m, y = name("hs_add"), name("hs_clip"), name("hs_mul"), name("hs")
    nodes.append(helper.make_node("Add", [x, scalar(3.0)], [a]))
    nodes.append(helper.make_node("Clip", [a, scalar(0.0), scalar(6.0)], [c]))
    nodes.append(helper.make_node("Mul", [x, c], [m]))
    nodes.append(helper.make_node("Div", [m, scalar(6.0)], [y]))
    return y


def relu(x: str) -> str:
    y = name("relu")
    nodes.append(helper.make_node("Relu", [x], [y]))
    return y


def squeeze_excite(x: str, c: int) -> str:
    p, r, g, h, y = name("gap"), name("se_relu"), name("se_gate"), name("se_hs"), name("se")
    nodes.append(helper.make_node("GlobalAveragePool", [x], [p]))
    w1, b1 = const(rng.normal(0, 0.3, (c // 4, c, 1, 1)), "sew"), const(rng.normal(0, 0.1, c // 4), "seb")
    nodes.append(helper.make_node("Conv", [p, w1, b1], [name("se1")]))
    nodes.append(helper.make_node("Relu", [nodes[-1].output[0]], [r]))
    w2, b2 = const(rng.normal(0, 0.3, (c, c // 4, 1, 1)), "sew"), const(rng.normal(0, 0.1, c), "seb")
    nodes.append(helper.make_node("Conv", [r, w2, b2], [g]))
    nodes.append(helper.make_node("HardSigmoid", [g], [h], alpha=0.2, beta=0.5))
    nodes.append(helper.make_node("Mul", [x, h], [y]))
    return y


def block(x: str, cin: int, expand: int, cout: int, stride: int, se: bool) -> str:
    h = hard_swish(conv_bn(x, cin, expand, 1))
    h = relu(conv_bn(h, expand, expand, 3, stride, group=expand))
    if se:
        h = squeeze_excite(h, expand)
    y = conv_bn(h, expand, cout, 1)
    if stride == 1 and cin == cout:
        r = name("res")
        nodes.append(helper.make_node("Add", [y, x], [r]))
        y = r
    return y


def main() -> None:
    out = sys.argv[1] if len(sys.argv) > 1 else "mobilenet_like.onnx"
    height = int(sys.argv[2]) if len(sys.argv) > 2 else 48
    width = int(sys.argv[3]) if len(sys.argv) > 3 else 192
    x = hard_swish(conv_bn("x", 3, 16, 3, 2))
    for cin, expand, cout, stride, se in [(16, 16, 16, 1, False), (16, 64, 24, 2, False), (24, 72, 24, 1, False),
                                          (24, 72, 40, 2, True), (40, 120, 40, 1, True), (40, 240, 80, 2, False),
                                          (80, 200, 80, 1, False), (80, 480, 112, 1, True), (112, 672, 112, 1, True)]:
        x = block(x, cin, expand, cout, stride, se)
    x = hard_swish(conv_bn(x, 112, 480, 1))
    p, f = name("pool"), name("flat")
    nodes.append(helper.make_node("GlobalAveragePool", [x], [p]))
    nodes.append(helper.make_node("Flatten", [p], [f]))
    nodes.append(helper.make_node("Gemm", [f, const(rng.normal(0, 0.05, (480, 4)), "fcw"), const(np.zeros(4), "fcb")],
                                  ["logits"], transB=0))
    nodes.append(helper.make_node("Softmax", ["logits"], ["y"], axis=1))
    graph = helper.make_graph(nodes, "mobilenet_like",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, height, width])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4]),
                               helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 4])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="mobilenet_like.py")
    model.ir_version = 7
    onnx.checker.check_model(model)
    onnx.save(model, out)
    print(f"{out}: {len(nodes)} nodes, input 1x3x{height}x{width}")


if __name__ == "__main__":
    main()
