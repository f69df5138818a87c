#!/usr/bin/env bash
# Compile speed of qopt through a placement pipeline on synthetic Q/DQ graphs of 1k, 10k, 100k nodes.
#
#   bench/run_compile_bench.sh [-p PIPELINE] [-f FALLBACK] [-r REPEAT] [-s SIZES]
#
#   PIPELINE  default 'default<trt>'; if it is default<NAME> and `qopt -print-passes` lists no
#             pipeline NAME yet, FALLBACK runs instead (default 'cse,dce'); the header says which.
#   REPEAT    timed runs per size, the minimum is reported (default 3).
#   SIZES     comma-separated node counts (default 1000,10000,100000).
#
# Models come from bench/gen_qdq_chain.py (chains of Q/DQ conv units with Split/Concat, per-branch
# scales, residual Adds, multi-consumer DQs, [1]-shaped and scalar scales), cached in
# $WORK/qdq_chain_N.onnx. Timed: the whole process `qopt M -passes=P -disable-output` (import,
# pipeline with -verify-each, final verify; no export). Prints the time per size, and the
# ratios 10k/1k and 100k/10k (linear growth = ~10x). Nothing is asserted.
# Env: QOPT_BUILD_DIR (default ./build), WORK (default $QOPT_BUILD_DIR/compile-bench).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${QOPT_BUILD_DIR:-$root/build}
work=${WORK:-$build/compile-bench}
pipeline='default<trt>' fallback='cse,dce' repeat=3 sizes=1000,10000,100000
while getopts "p:f:r:s:h" o; do
  case $o in
    p) pipeline=$OPTARG ;; f) fallback=$OPTARG ;; r) repeat=$OPTARG ;; s) sizes=$OPTARG ;;
    *) sed -n '2,16p' "$0"; exit 2 ;;
  esac
done
qopt=$build/bin/qopt
[ -x "$qopt" ] || { echo "run_compile_bench.sh: $qopt is missing; build first" >&2; exit 1; }
mkdir -p "$work"
used=$pipeline note=
if [[ $pipeline =~ ^default\<(.*)\>$ ]] &&
   ! "$qopt" -print-passes | sed -n '/^Pipelines/,/^[^ ]/p' | grep -q "^  ${BASH_REMATCH[1]} - "; then
  used=$fallback note=" (pipeline $pipeline does not exist in this build: fallback)"
fi
echo "cpu: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1) ($(nproc) cores), load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "qopt -passes='$used' -disable-output$note; min of $repeat run(s)"
declare -A secs
IFS=, read -ra ns <<<"$sizes"
for n in "${ns[@]}"; do
  m=$work/qdq_chain_$n.onnx
  [ -f "$m" ] || /usr/bin/python3 "$root/bench/gen_qdq_chain.py" "$n" "$m" >/dev/null || exit 1
  best=
  for ((i = 0; i < repeat; i++)); do
    t0=$(date +%s.%N)
    if ! err=$("$qopt" "$m" -passes="$used" -disable-output 2>&1); then
      echo "$n nodes: qopt failed: $(echo "$err" | head -1)"; best=; break
    fi
    t=$(echo "$(date +%s.%N) - $t0" | bc)
    if [ -z "$best" ] || [ "$(echo "$t < $best" | bc)" = 1 ]; then best=$t; fi
  done
  [ -n "$best" ] || continue
  secs[$n]=$best
  printf '%7d nodes (%s): %8.3f s\n' "$n" "$(du -h "$m" | cut -f1)" "$best"
done
ratio() { [ -n "${secs[$1]:-}" ] && [ -n "${secs[$2]:-}" ] && printf '%s/%s: %.1fx\n' "$2" "$1" "$(echo "${secs[$2]} / ${secs[$1]}" | bc -l)"; }
ratio 1000 10000
ratio 10000 100000
exit 0
