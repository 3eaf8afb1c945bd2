#!/usr/bin/python3
"""Single-node depthwise and 1x1 Conv, pooling and Resize models on the shapes of the published CNNs (issue 15),
with a manifest.tsv in the format of ../shared/peer, so that ONNX Runtime's ort_c_bench and our
onnx-light-peer-bench time exactly the same models and inputs:

    /usr/bin/python3 bench/conv_pool_models.py DIR [NAME_SUBSTRING]   (e.g. convt: the ConvTranspose models only)
    $PEER_WORK/bin/ort_c_bench --models DIR --threads 1,2 --modes prealloc --min-time 0.3
    build/bench/onnx-light-peer-bench --models DIR --threads 1,2 --modes prealloc --min-time 0.3

Weights and biases are initializers (as in the real models); X is the only input. Resize's scales
are an initializer too (its roi omitted). An optional second argument keeps only the models whose
name contains it (e.g. `resize_`, `convt`).
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

# name -> (op, X shape, attributes, W shape or None)
MODELS = {
    "dw5x5_240x12x80": ("Conv", [1, 240, 12, 80], dict(group=240, pads=[2, 2, 2, 2]), [240, 1, 5, 5]),
    "dw3x3s1_32x112x112": ("Conv", [1, 32, 112, 112], dict(group=32, pads=[1, 1, 1, 1]), [32, 1, 3, 3]),
    "dw3x3s2_144x56x56": ("Conv", [1, 144, 56, 56], dict(group=144, pads=[1, 1, 1, 1], strides=[2, 2]), [144, 1, 3, 3]),
    "dw3x3s1_576x7x7": ("Conv", [1, 576, 7, 7], dict(group=576, pads=[1, 1, 1, 1]), [576, 1, 3, 3]),
    "dw5x5s2_120x24x160": ("Conv", [1, 120, 24, 160], dict(group=120, pads=[2, 2, 2, 2], strides=[2, 2]), [120, 1, 5, 5]),
    # Small planes of the PaddleOCR models (ppocr_cls 48x192 input, ppocrv4_rec 48x320).
    "dw3x3s1_120x12x48": ("Conv", [1, 120, 12, 48], dict(group=120, pads=[1, 1, 1, 1]), [120, 1, 3, 3]),
    "dw3x3s1_288x6x24": ("Conv", [1, 288, 6, 24], dict(group=288, pads=[1, 1, 1, 1]), [288, 1, 3, 3]),
    # The three PaddleOCR models' stems: 3 input channels, 3x3 stride 2 (group 1, dense).
    "stem3x3s2_3to16x320x320": ("Conv", [1, 3, 320, 320], dict(pads=[1, 1, 1, 1], strides=[2, 2]), [16, 3, 3, 3]),
    "stem3x3s2_3to16x48x320": ("Conv", [1, 3, 48, 320], dict(pads=[1, 1, 1, 1], strides=[2, 2]), [16, 3, 3, 3]),
    "stem3x3s2_3to8x48x192": ("Conv", [1, 3, 48, 192], dict(pads=[1, 1, 1, 1], strides=[2, 2]), [8, 3, 3, 3]),
    # PP-OCRv4 det at 1x3x320x320: the large planes (cut into bands of rows by the blocked kernel).
    "dw3x3s1_16x160x160": ("Conv", [1, 16, 160, 160], dict(group=16, pads=[1, 1, 1, 1]), [16, 1, 3, 3]),
    "dw3x3s2_32x160x160": ("Conv", [1, 32, 160, 160], dict(group=32, pads=[1, 1, 1, 1], strides=[2, 2]), [32, 1, 3, 3]),
    "dw3x3s1_48x80x80": ("Conv", [1, 48, 80, 80], dict(group=48, pads=[1, 1, 1, 1]), [48, 1, 3, 3]),
    "dw5x5s1_192x20x20": ("Conv", [1, 192, 20, 20], dict(group=192, pads=[2, 2, 2, 2]), [192, 1, 5, 5]),
    "dw3x3s2_64x24x96": ("Conv", [1, 64, 24, 96], dict(group=64, pads=[1, 1, 1, 1], strides=[2, 2]), [64, 1, 3, 3]),
    "dw5x5s1_480x6x80": ("Conv", [1, 480, 6, 80], dict(group=480, pads=[2, 2, 2, 2]), [480, 1, 5, 5]),
    "dw5x5s2x1_480x6x80": ("Conv", [1, 480, 6, 80], dict(group=480, pads=[2, 2, 2, 2], strides=[2, 1]), [480, 1, 5, 5]),
    # 1x1 Convs (group 1, stride 1, no pad: a GEMM on the activation), the heaviest of the three PaddleOCR
    # models by MACs (shape inference at their benchmark inputs): rec's 240 and 480 maps on 12x80/3x80 planes,
    # det's 192 maps on 20x20 and 384 on 10x10 (few positions), cls's expand/project pair on 2x96.
    "pw_240to240x12x80": ("Conv", [1, 240, 12, 80], dict(), [240, 240, 1, 1]),
    "pw_480to480x3x80": ("Conv", [1, 480, 3, 80], dict(), [480, 480, 1, 1]),
    "pw_128to240x12x80": ("Conv", [1, 128, 12, 80], dict(), [240, 128, 1, 1]),
    "pw_192to192x20x20": ("Conv", [1, 192, 20, 20], dict(), [192, 192, 1, 1]),
    "pw_384to384x10x10": ("Conv", [1, 384, 10, 10], dict(), [384, 384, 1, 1]),
    "pw_16to32x160x160": ("Conv", [1, 16, 160, 160], dict(), [32, 16, 1, 1]),
    "pw_32to200x2x96": ("Conv", [1, 32, 2, 96], dict(), [200, 32, 1, 1]),
    "pw_200to32x2x96": ("Conv", [1, 200, 2, 96], dict(), [32, 200, 1, 1]),
    "maxpool2x2s2_200x2x96": ("MaxPool", [1, 200, 2, 96], dict(kernel_shape=[2, 2], strides=[2, 2]), None),
    "maxpool3x3s2p1_64x112x112": ("MaxPool", [1, 64, 112, 112], dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]), None),
    "avgpool2x2s2_96x32x100": ("AveragePool", [1, 96, 32, 100], dict(kernel_shape=[2, 2], strides=[2, 2]), None),
    # Resize: the 4th field holds the scales. PP-OCRv4 det's FPN upsampling (nearest, asymmetric,
    # floor; 2x, 4x and 8x) and the common bilinear 2x of segmentation/detection necks.
    "resize_nearest2x_96x40x40": ("Resize", [1, 96, 40, 40], dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"), [1, 1, 2, 2]),
    "resize_nearest8x_24x10x10": ("Resize", [1, 24, 10, 10], dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"), [1, 1, 8, 8]),
    "resize_nearest2x_64x80x80": ("Resize", [1, 64, 80, 80], dict(mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor"), [1, 1, 2, 2]),
    "resize_bilinear2x_64x80x80": ("Resize", [1, 64, 80, 80], dict(mode="linear", coordinate_transformation_mode="half_pixel"), [1, 1, 2, 2]),
    "resize_bilinear2x_ac_64x80x80": ("Resize", [1, 64, 80, 80], dict(mode="linear", coordinate_transformation_mode="align_corners"), [1, 1, 2, 2]),
    # ConvTranspose 2x upsampling heads: W is [C, M, k, k]. The two ppocrv4_det nodes at its 320x320 input,
    # and the usual detector shapes (kernel 2 stride 2, kernel 4 stride 2 pads 1).
    "convt2x2s2_24x80x80": ("ConvTranspose", [1, 24, 80, 80], dict(strides=[2, 2]), [24, 24, 2, 2]),
    "convt2x2s2_24to1x160x160": ("ConvTranspose", [1, 24, 160, 160], dict(strides=[2, 2]), [24, 1, 2, 2]),
    "convt2x2s2_64x40x40": ("ConvTranspose", [1, 64, 40, 40], dict(strides=[2, 2]), [64, 64, 2, 2]),
    "convt4x4s2p1_64x40x40": ("ConvTranspose", [1, 64, 40, 40], dict(strides=[2, 2], pads=[1, 1, 1, 1]), [64, 64, 4, 4]),
}


def out_shape(x, attrs, w, op="Conv"):
    k = attrs.get("kernel_shape") or w[2:]
    s = attrs.get("strides", [1, 1])
    p = attrs.get("pads", [0, 0, 0, 0])
    if op == "ConvTranspose":
        return [x[0], w[1]] + [s[i] * (x[2 + i] - 1) + k[i] - p[i] - p[i + 2] for i in range(2)]
    c = w[0] if w else x[1]
    return [x[0], c] + [(x[2 + i] + p[i] + p[i + 2] - k[i]) // s[i] + 1 for i in range(2)]


def main(out, only=""):
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(7)
    lines = ["# name\tfile\tkind\tN\tbytes\tflops\tinputs\toutputs"]
    for name, (op, x, attrs, w) in MODELS.items():
        if only not in name:
            continue
        if op == "Resize":
            y = [int(np.floor(d * s)) for d, s in zip(x, w)]
            inits = [numpy_helper.from_array(np.array(w, dtype=np.float32), "scales")]
            inputs = ["x", "", "scales"]
        else:
            y = out_shape(x, attrs, w, op)
            inits, inputs = [], ["x"]
        if w and op != "Resize":
            inits.append(numpy_helper.from_array(rng.uniform(-1, 1, w).astype(np.float32), "w"))
            maps = w[1] if op == "ConvTranspose" else w[0]
            inits.append(numpy_helper.from_array(rng.uniform(-1, 1, [maps]).astype(np.float32), "b"))
            inputs += ["w", "b"]
        node = helper.make_node(op, inputs, ["y"], **attrs)
        graph = helper.make_graph([node], name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x)],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, y)], inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        onnx.checker.check_model(model)
        onnx.save(model, os.path.join(out, name + ".onnx"))
        dims = lambda s: "x".join(map(str, s))
        lines.append(f"{name}\t{name}.onnx\tconv\t0\t0\t0\tx:float32:{dims(x)}\ty:float32:{dims(y)}")
    with open(os.path.join(out, "manifest.tsv"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/conv_pool_models", sys.argv[2] if len(sys.argv) > 2 else "")
