#!/usr/bin/env bash
# Quick start: installs what is missing, builds, and runs qopt on the small
# Q/DQ example model kept in the repo (prints a summary and the IR, and
# writes the result to build/conv_qdq.out.onnx).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
"$root/build/bin/qopt" -summary "$root/examples/conv_qdq.onnx" -o "$root/build/conv_qdq.out.onnx"
"$root/build/bin/qopt" "$root/build/conv_qdq.out.onnx"
echo "quickstart: wrote $root/build/conv_qdq.out.onnx"
