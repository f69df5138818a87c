#!/usr/bin/env bash
# ONNX Runtime latency of the shared models before and after a qopt placement pipeline.
#
#   bench/run_placement_bench.sh [-p PIPELINE] [-f FALLBACK] [-n RUNS] [-w WARMUP] [-t THREADS]
#                                [MODEL.onnx ...]
#
#   PIPELINE  default 'default<ort>'. If it is default<NAME> and `qopt -print-passes` lists no
#             pipeline NAME (not merged yet), FALLBACK is used instead (default
#             'scalar-qparams,cse,dce'); the header says which one ran.
#   RUNS      timed runs per session and thread count (default 30), WARMUP untimed (default 5),
#   THREADS   comma-separated intra-op thread counts (default 1,2).
#   MODELs    default: every $QOPT_SHARED_DIR/models/*.onnx (QOPT_SHARED_DIR defaults to ../shared).
#
# Per model: `qopt M -passes=P -o WORK/M.ort.onnx`, then ONE node process (ort_placement_bench.js)
# loads M and M.ort.onnx at level `all` and alternates their runs; it prints median/min per thread
# count, the ratio of medians (before/after, > 1 = qopt's output is faster), whether each session
# loaded, and QLinearConv / ConvInteger / Conv counts in ORT's optimized graph of each.
# Inputs: ImageNet-normalised images for resnet18*, 0..1 images for yolo*, U[-1,1) otherwise.
# Nothing is asserted: this is a measurement. The machine is shared: compare ratios, not ms.
# Env: QOPT_BUILD_DIR (default ./build), WORK (default $QOPT_BUILD_DIR/placement-bench),
#      ORT_NODE_DIR (where onnxruntime-node is; default: the repository root).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${QOPT_BUILD_DIR:-$root/build}
shared=${QOPT_SHARED_DIR:-$root/../shared}
work=${WORK:-$build/placement-bench}
pipeline='default<ort>'
fallback='scalar-qparams,cse,dce'
runs=30 warmup=5 threads=1,2
while getopts "p:f:n:w:t:h" o; do
  case $o in
    p) pipeline=$OPTARG ;; f) fallback=$OPTARG ;; n) runs=$OPTARG ;; w) warmup=$OPTARG ;;
    t) threads=$OPTARG ;; *) sed -n '2,22p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
qopt=$build/bin/qopt
[ -x "$qopt" ] || { echo "run_placement_bench.sh: $qopt is missing; build first" >&2; exit 1; }
models=("$@")
[ ${#models[@]} -gt 0 ] || models=("$shared"/models/*.onnx)
mkdir -p "$work"

used=$pipeline note=
if [[ $pipeline =~ ^default\<(.*)\>$ ]]; then
  name=${BASH_REMATCH[1]}
  if ! "$qopt" -print-passes | sed -n '/^Pipelines/,/^[^ ]/p' | grep -q "^  $name - "; then
    used=$fallback
    note=" (pipeline $pipeline does not exist in this build: fallback)"
  fi
fi
ort_version=$(cd "$root" && node -e "
  const p=require('path');const d=[process.env.ORT_NODE_DIR,process.cwd()].filter(Boolean);
  console.log(require(require.resolve('onnxruntime-node/package.json',{paths:d})).version)" 2>/dev/null || echo unknown)
echo "cpu: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1) ($(nproc) cores), load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "onnxruntime-node $ort_version, level all, threads $threads, warm-up $warmup, runs $runs"
echo "qopt -passes='$used'$note"
echo "before = the model as given; after = qopt's output"
for m in "${models[@]}"; do
  base=$(basename "$m" .onnx)
  case $base in resnet18*) dist=imagenet ;; yolo*) dist=image ;; *) dist=uniform ;; esac
  out=$work/$base.ort.onnx
  t0=$(date +%s.%N)
  if ! err=$("$qopt" "$m" -passes="$used" -o "$out" 2>&1 >/dev/null); then
    echo "$base: qopt failed: $(echo "$err" | head -1)"
    continue
  fi
  echo "$base: qopt $(echo "$(date +%s.%N) - $t0" | bc | xargs printf '%.2f')s, dist $dist"
  (cd "$root" && node "$root/bench/ort_placement_bench.js" --before "$m" --after "$out" --name "$base" \
     --threads "$threads" --runs "$runs" --warmup "$warmup" --dist "$dist" --opt-dir "$work") \
    || echo "$base: ort_placement_bench.js failed (exit $?)"
done
