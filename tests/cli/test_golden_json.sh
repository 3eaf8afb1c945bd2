#!/usr/bin/env bash
# Golden files for the --json output of every verb (issue 23): tests/cli/golden_json.py runs each
# verb against a scratch cache, normalises paths, times, this CPU's host fields and measured numbers
# (the rules are in its docstring) and compares the rest with tests/cli/golden/<case>.json.
# Usage: test_golden_json.sh TOOL SCRATCH [--update]   (--update rewrites the golden files)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
"$PY" "$(dirname "$0")/golden_json.py" "$TOOL" "$SCRATCH" "${@:3}"
