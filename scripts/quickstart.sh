#!/usr/bin/env bash
# Quick start: installs what is missing, builds, and runs qopt's main job on
# a small QAT ResNet exported as pytorch-quantization exports it
# (examples/make_resnet_blocks.py writes it): where TensorRT would leave
# INT8 and why, what default<trt> changes, an HTML report to open, and the
# model as qopt's INT8 CPU plan against the reference interpreter, timed
# against ONNX Runtime when that is installed. Everything lands in
# build/quickstart/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/build/quickstart
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
mkdir -p "$out"
qopt=$root/build/bin/qopt
run=$root/build/bin/qopt-run
model=$out/resnet_blocks_qat.onnx
/usr/bin/python3 "$root/examples/make_resnet_blocks.py" "$model"

echo
echo "== 1. The model as exported, under TensorRT's rules (qopt $model --explain=trt)"
explained=$("$qopt" "$model" --explain=trt)
echo "$explained" | grep -E '^(\[|    reason)' | head -8
echo "   ... (all of them, each with its fix: qopt $model --explain=trt)"
echo "$explained" | grep '^summary'

echo
echo "== 2. -passes='default<trt>': what changes"
"$qopt" "$model" -passes='default<trt>' --explain=trt --report="$out/report.html" \
  -o "$out/resnet_blocks_qat.trt.onnx" 2>/dev/null | sed -n '/^changed by/,$p'
echo "   wrote $out/resnet_blocks_qat.trt.onnx (for trtexec --int8 --onnx=...)"
echo "   open $out/report.html: the graph before and after, leftovers marked"

echo
echo "== 3. The INT8 CPU plan, each step against the reference interpreter"
"$run" "$model" --plan --compare-reference --max-lsb=1 --atol=1e-4 2>/dev/null |
  grep 'step by step' | sed 's/^plan vs reference, step by step: /   /'
plan_ms=$("$run" "$model" --plan --threads=1 --bench=50 2>/dev/null |
  sed -n 's/.*median \([0-9.]*\) ms.*/\1/p')
echo "   plan: $plan_ms ms a run (1 thread, median of 50)"
if [ -d "$root/node_modules/onnxruntime-node" ]; then
  ort=$(node "$root/bench/ort_latency.js" "$model" --threads 1 --runs 50 |
    sed 's/.*"median_ms": *\([0-9.]*\).*/\1/' | xargs printf '%.3f')
  echo "   ONNX Runtime 1.30 on the same file: $ort ms (1 thread; bench/run_plan_bench.py compares properly)"
else
  echo "   (npm install --ignore-scripts onnxruntime-node@1.30.0 to time ONNX Runtime beside it)"
fi
echo
echo "quickstart: done. Python: PYTHONPATH=$root/build/python /usr/bin/python3 -c 'import qopt' (docs/python.md)"
