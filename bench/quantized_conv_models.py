#!/usr/bin/python3
"""Quantized convolution models for the peer harness (issue 17: QLinearConv and ConvInteger on AVX-512
VNNI against ONNX Runtime), layer shapes from quantized CNNs (ResNet-50's 3x3 64->64 at 56x56 and
1x1 128->256 at 28x28, MobileNetV2's depthwise 3x3 over 144 channels at 28x28, and a stride-2 stem),
with the manifest.tsv that `bench/peer_compare.py` and ../shared/peer's ort_c_bench read:

    /usr/bin/python3 bench/quantized_conv_models.py OUT_DIR [FILTER]

The peer harness feeds float32 tensors only, so each model quantizes its input first (uint8, per
tensor), runs the quantized convolution with int8 weights (initializers, per output channel scales,
zero points 0, int32 bias) and dequantizes its uint8 output; both runtimes pay those O(N*C*H*W) steps:

- qconv_...: QuantizeLinear -> QLinearConv -> DequantizeLinear
- cint_...:  QuantizeLinear -> ConvInteger (uint8 weights: ONNX Runtime's ConvInteger takes uint8 only) -> Cast
- fconv_...: the float Conv of the same shape, for scale
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# name, C, H, W, M, kernel, stride, pad, group
LAYERS = [
    ("64x56_3x3_64", 64, 56, 56, 64, 3, 1, 1, 1),
    ("128x28_1x1_256", 128, 28, 28, 256, 1, 1, 0, 1),
    ("dw144x28_3x3", 144, 28, 28, 144, 3, 1, 1, 144),
    ("3x224_3x3s2_32", 3, 224, 224, 32, 3, 2, 1, 1),
    ("256x14_3x3_256", 256, 14, 14, 256, 3, 1, 1, 1),
]


def models():
    for layer in LAYERS:
        yield "qconv_" + layer[0], layer, "qlinear"
    for layer in LAYERS[:2]:
        yield "cint_" + layer[0], layer, "integer"
        yield "fconv_" + layer[0], layer, "float"


def out_size(n, k, s, p):
    return (n + 2 * p - k) // s + 1


def build(name, layer, kind, rng):
    _, c, h, w, m, k, s, p, group = layer
    oh, ow = out_size(h, k, s, p), out_size(w, k, s, p)
    scalar = lambda nm, v, t: helper.make_tensor(nm, t, [], [v])
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, h, w])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, m, oh, ow])
    attrs = dict(kernel_shape=[k, k], strides=[s, s], pads=[p, p, p, p], group=group)
    wshape = (m, c // group, k, k)
    if kind == "float":
        wf = numpy_helper.from_array(rng.uniform(-0.1, 0.1, wshape).astype(np.float32), "w")
        nodes = [helper.make_node("Conv", ["x", "w"], ["y"], **attrs)]
        inits = [wf]
    else:
        inits = [scalar("xs", 1 / 127.0, TensorProto.FLOAT), scalar("xz", 128, TensorProto.UINT8)]
        nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"])]
        if kind == "integer":
            inits += [numpy_helper.from_array(rng.integers(0, 256, wshape, dtype=np.uint8), "wq"),
                      scalar("wz", 128, TensorProto.UINT8)]
            nodes += [helper.make_node("ConvInteger", ["xq", "wq", "xz", "wz"], ["acc"], **attrs),
                      helper.make_node("Cast", ["acc"], ["y"], to=TensorProto.FLOAT)]
        else:
            depth = c // group * k * k
            inits += [numpy_helper.from_array(rng.integers(-127, 128, wshape, dtype=np.int8), "wq"),
                      numpy_helper.from_array(rng.uniform(0.5, 1.5, m).astype(np.float32) / 64.0, "ws"),
                      numpy_helper.from_array(np.zeros(m, dtype=np.int8), "wz"),
                      scalar("ys", float(np.sqrt(depth)) / 32.0, TensorProto.FLOAT),
                      scalar("yz", 128, TensorProto.UINT8),
                      numpy_helper.from_array(rng.integers(-1000, 1000, m, dtype=np.int32), "b")]
            nodes += [helper.make_node("QLinearConv", ["xq", "xs", "xz", "wq", "ws", "wz", "ys", "yz", "b"], ["yq"],
                                       **attrs),
                      helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"])]
    graph = helper.make_graph(nodes, name, [x], [y], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model, 2 * m * (c // group) * k * k * oh * ow, (c * h * w, m * oh * ow)


def main(out, only=""):
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(17)
    lines = ["# name\tfile\tkind\tN\tbytes\tflops\tinputs\toutputs"]
    for name, layer, kind in models():
        if only not in name:
            continue
        model, flops, _ = build(name, layer, kind, rng)
        onnx.save(model, os.path.join(out, name + ".onnx"))
        _, c, h, w, m, k, s, p, _ = layer
        oh, ow = out_size(h, k, s, p), out_size(w, k, s, p)
        lines.append(f"{name}\t{name}.onnx\tconv\t0\t0\t{flops}\tx:float32:1x{c}x{h}x{w}\ty:float32:1x{m}x{oh}x{ow}")
    with open(os.path.join(out, "manifest.tsv"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/quantized_conv_models", sys.argv[2] if len(sys.argv) > 2 else "")
