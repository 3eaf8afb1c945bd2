#!/usr/bin/python3
"""Writes ONNX's backend node tests (model.onnx + test_data_set_*/{input,output}_*.pb) into DIR.

Usage: generate_node_tests.py DIR

Debian 12 ships onnx 1.12 with numpy 1.24, which removed the aliases np.float, np.int, np.bool
and np.object that onnx.backend.test still uses; they are restored before the import. The
data is written once: a stamp naming the onnx version makes later calls return at once.
"""
import os
import shutil
import sys
import warnings


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out_dir = os.path.abspath(sys.argv[1])
    import numpy as np

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name, value in (("float", float), ("int", int), ("bool", bool), ("object", object)):
            if name not in np.__dict__:
                setattr(np, name, value)
        import onnx
        from onnx.backend.test.cmd_tools import main as cmd_tools_main

    stamp = os.path.join(out_dir, "generated-by-onnx")
    if os.path.exists(stamp):
        with open(stamp, encoding="utf-8") as f:
            if f.read().strip() == onnx.__version__:
                return 0
    # Generate into a scratch directory and move it into place, so that an interrupted run
    # never leaves a half-written tree that looks complete.
    scratch = out_dir + ".partial"
    shutil.rmtree(scratch, ignore_errors=True)
    os.makedirs(scratch)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        saved_argv = sys.argv
        sys.argv = ["onnx.backend.test.cmd_tools", "generate-data", "-o", scratch]
        try:
            cmd_tools_main()
        finally:
            sys.argv = saved_argv
    node_count = len(os.listdir(os.path.join(scratch, "node")))
    if node_count == 0:
        print(f"onnx {onnx.__version__} generated no node tests", file=sys.stderr)
        return 1
    with open(os.path.join(scratch, "generated-by-onnx"), "w", encoding="utf-8") as f:
        f.write(onnx.__version__ + "\n")
    shutil.rmtree(out_dir, ignore_errors=True)
    os.rename(scratch, out_dir)
    print(f"wrote {node_count} ONNX node tests (onnx {onnx.__version__}) to {out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
