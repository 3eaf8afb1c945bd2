#!/usr/bin/python3
"""Recurrent single-node models for the peer harness (issue 17's LSTM target), written with a
manifest.tsv that `bench/peer_compare.py` and ../shared/peer's ort_c_bench read:

    /usr/bin/python3 bench/recurrent_models.py OUT_DIR [FILTER]

- lstm_b{B}_h{H}_s{S}_i{I}[_bi]: LSTM over X [S, B, I], hidden H, weights W/R/B initializers
  (forward, or bidirectional), outputs Y [S, D, B, H]; no initial state, no sequence_lens.
- gru_b{B}_h{H}_s{S}_i{I}: GRU likewise (linear_before_reset 1, as PyTorch exports it).
The issue's target shape is lstm_b1_h256_s100 (batch 1, hidden 256, 100 steps); the others are the
small speech and keyword models' sizes.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

MODELS = {}
for op, b, h, s, i, bi in [("LSTM", 1, 256, 100, 256, False), ("LSTM", 1, 128, 100, 64, False),
                           ("LSTM", 1, 64, 50, 40, True), ("LSTM", 4, 256, 100, 256, False),
                           ("GRU", 1, 256, 100, 256, False)]:
    name = f"{op.lower()}_b{b}_h{h}_s{s}_i{i}" + ("_bi" if bi else "")
    MODELS[name] = (op, b, h, s, i, bi)


def main(out, only=""):
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(5)
    lines = ["# name\tfile\tkind\tN\tbytes\tflops\tinputs\toutputs"]
    for name, (op, b, h, s, i, bi) in MODELS.items():
        if only not in name:
            continue
        d = 2 if bi else 1
        gates = 4 if op == "LSTM" else 3
        scale = 1.0 / np.sqrt(h)
        w = rng.uniform(-scale, scale, (d, gates * h, i)).astype(np.float32)
        r = rng.uniform(-scale, scale, (d, gates * h, h)).astype(np.float32)
        bias = rng.uniform(-scale, scale, (d, 2 * gates * h)).astype(np.float32)
        attrs = {"hidden_size": h, "direction": "bidirectional" if bi else "forward"}
        if op == "GRU":
            attrs["linear_before_reset"] = 1
        node = helper.make_node(op, ["x", "w", "r", "b"], ["y"], **attrs)
        graph = helper.make_graph([node], name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [s, b, i])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [s, d, b, h])],
                                  [numpy_helper.from_array(w, "w"), numpy_helper.from_array(r, "r"),
                                   numpy_helper.from_array(bias, "b")])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
        model.ir_version = 8
        onnx.checker.check_model(model)
        onnx.save(model, os.path.join(out, name + ".onnx"))
        lines.append(f"{name}\t{name}.onnx\trecurrent\t0\t0\t0\tx:float32:{s}x{b}x{i}\ty:float32:{s}x{d}x{b}x{h}")
    with open(os.path.join(out, "manifest.tsv"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/recurrent_models", sys.argv[2] if len(sys.argv) > 2 else "")
