#!/usr/bin/python3
"""Attention-shaped single-node models for the peer harness (issue 15: batched MatMul, Softmax,
LayerNorm, Transpose on the shapes of small transformers), written with a manifest.tsv that
`bench/peer_compare.py` and ../shared/peer's ort_c_bench read:

    /usr/bin/python3 bench/attention_models.py OUT_DIR [FILTER]

- qk_B_H_S_D:   MatMul [B,H,S,D] x [B,H,D,S] (scores), both operands graph inputs
- av_B_H_S_D:   MatMul [B,H,S,S] x [B,H,S,D] (weighted values)
- proj_S_E_F:   MatMul [1,S,E] x W[E,F] (a projection; W an initializer)
- softmax_B_H_S: Softmax over the last axis of [B,H,S,S]
- layernorm_S_E: LayerNormalization over the last axis of [1,S,E] (scale and bias initializers)
- transpose_S_H_D: Transpose [1,S,H,D] -> [1,H,S,D] (perm 0,2,1,3: splitting heads)
Shapes are those of BERT-tiny/mini-style encoders and of small speech/keyword transformers.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

MODELS = {}
for b, h, s, d in [(1, 4, 64, 64), (1, 8, 128, 64), (1, 12, 128, 64), (1, 4, 256, 32), (1, 2, 512, 16),
                   (4, 4, 32, 16)]:
    MODELS[f"qk_{b}_{h}_{s}_{d}"] = ("MatMul", [("a", [b, h, s, d]), ("b", [b, h, d, s])], {}, [], [b, h, s, s])
    MODELS[f"av_{b}_{h}_{s}_{d}"] = ("MatMul", [("a", [b, h, s, s]), ("b", [b, h, s, d])], {}, [], [b, h, s, d])
for s, e, f in [(128, 256, 256), (128, 256, 1024), (64, 512, 512)]:
    MODELS[f"proj_{s}_{e}_{f}"] = ("MatMul", [("a", [1, s, e])], {}, [("w", [e, f])], [1, s, f])
for b, h, s in [(1, 4, 64), (1, 8, 128), (1, 12, 128), (1, 2, 512)]:
    MODELS[f"softmax_{b}_{h}_{s}"] = ("Softmax", [("a", [b, h, s, s])], {"axis": -1}, [], [b, h, s, s])
for s, e in [(128, 256), (128, 768), (512, 128)]:
    MODELS[f"layernorm_{s}_{e}"] = ("LayerNormalization", [("a", [1, s, e])], {"axis": -1, "epsilon": 1e-5},
                                    [("scale", [e]), ("bias", [e])], [1, s, e])
for s, h, d in [(128, 4, 64), (128, 12, 64), (512, 2, 64)]:
    MODELS[f"transpose_{s}_{h}_{d}"] = ("Transpose", [("a", [1, s, h, d])], {"perm": [0, 2, 1, 3]}, [],
                                        [1, h, s, d])


def main(out, only=""):
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(11)
    lines = ["# name\tfile\tkind\tN\tbytes\tflops\tinputs\toutputs"]
    dims = lambda s: "x".join(map(str, s))
    for name, (op, inputs, attrs, weights, y) in MODELS.items():
        if only not in name:
            continue
        inits = [numpy_helper.from_array(rng.uniform(-1, 1, shape).astype(np.float32), n) for n, shape in weights]
        node = helper.make_node(op, [n for n, _ in inputs] + [n for n, _ in weights], ["y"], **attrs)
        graph = helper.make_graph([node], name, [helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
                                                 for n, s in inputs],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, y)], inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        onnx.checker.check_model(model)
        onnx.save(model, os.path.join(out, name + ".onnx"))
        ins = ";".join(f"{n}:float32:{dims(s)}" for n, s in inputs)
        lines.append(f"{name}\t{name}.onnx\tattention\t0\t0\t0\t{ins}\ty:float32:{dims(y)}")
    with open(os.path.join(out, "manifest.tsv"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/attention_models", sys.argv[2] if len(sys.argv) > 2 else "")
