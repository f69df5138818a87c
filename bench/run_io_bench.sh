#!/usr/bin/env bash
# Import + export benchmark on resnet18_qat.onnx (or $1): Google Benchmark
# timings with peak memory, the qopt CLI end to end, and ONNX Runtime's load
# time for the same file measured in the same run (1 thread).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
model=${1:-${QOPT_SHARED_DIR:-$root/../shared}/models/resnet18_qat.onnx}
bin=$root/build/bin
size=$(stat -c %s "$model")
echo "model: $model ($((size / 1000000)) MB)"
for b in BM_Import BM_Export BM_ImportExport; do
  QOPT_BENCH_MODEL=$model "$bin/qopt-bench-io" --benchmark_filter="^$b/" 2>/dev/null | grep '^BM_'
done
tmp=$(mktemp -d)
best=""
for i in 1 2 3 4 5; do
  /usr/bin/time -f "%e %M" -o "$tmp/t" "$bin/qopt" "$model" -o "$tmp/out.onnx"
  read -r secs kb < "$tmp/t"
  echo "qopt cli run $i: ${secs}s, peak RSS $((kb / 1024)) MB"
  best=$secs
done
/usr/bin/time -f "%e %M" -o "$tmp/t" "$bin/qopt" "$root/examples/conv_qdq.onnx" -o "$tmp/small.onnx"
read -r _ basekb < "$tmp/t"
echo "qopt cli baseline (tiny model) peak RSS: $((basekb / 1024)) MB"
echo "peak RSS / file size: $(awk -v k="$kb" -v s="$size" 'BEGIN{printf "%.2f", k*1024/s}') (incl. baseline)"
ort_ms=$(node "$root/bench/ort_load_time.js" "$model" 10)
echo "ONNX Runtime 1.30 InferenceSession.create (level disabled, 1 thread), median of 10: ${ort_ms} ms"
rm -rf "$tmp"
