#!/usr/bin/env bash
# How long `qopt --explain` takes on a 100,000-node Q/DQ graph, as a whole process (import, strict
# verification, fusion plan, explanation). Target: under 2 s.
#
#   bench/explain_bench.sh [RUNS] [NODES]     (defaults: 7 runs, 100000 nodes; median printed)
#
# The graph is bench/gen_qdq_chain.py's chain of 16-node units (Conv with per-channel weights,
# Split/Concat with a scale per branch, residual Add): every unit leaves requantizes, reformats and
# float islands behind, so the explanation has ~50,000 entries (14 MB of text). Also prints one
# run's -time-passes split by phase, and the backend rule set (default trt; QOPT_EXPLAIN=ort|cpu).
# Env: QOPT_BUILD_DIR (default ./build).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${QOPT_BUILD_DIR:-$root/build}
runs=${1:-7}
nodes=${2:-100000}
backend=${QOPT_EXPLAIN:-trt}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 "$root/bench/gen_qdq_chain.py" "$nodes" "$work/chain.onnx"
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
qopt=("$build/bin/qopt" "$work/chain.onnx" "--explain=$backend")
"${qopt[@]}" >"$work/explain.txt" # warm-up (page cache, plugin loading)
echo "explanation: $(wc -c <"$work/explain.txt") bytes; $(tail -1 "$work/explain.txt")"
walls=()
for ((i = 0; i < runs; i++)); do
  /usr/bin/time -f '%e %M' -o "$work/time" "${qopt[@]}" >/dev/null
  read -r wall rss <"$work/time"
  walls+=("$wall")
done
sorted=$(printf '%s\n' "${walls[@]}" | sort -n | tr '\n' ' ')
median=$(printf '%s\n' "${walls[@]}" | sort -n | sed -n "$(((runs + 1) / 2))p")
echo "qopt --explain=$backend, $nodes nodes: wall s ${sorted}median $median (peak RSS ${rss} KB)"
echo "phases of one run (-time-passes):"
"${qopt[@]}" -time-passes 2>&1 >/dev/null | grep -E '^ +[0-9].*(model|plan|explanation|Total)$'
