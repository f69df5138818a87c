#!/usr/bin/env bash
# Runs each libFuzzer target for $QOPT_FUZZ_SECONDS (default 60), as many at
# once as there are CPUs ($QOPT_FUZZ_JOBS), from its seed
# corpus: the repo's test inputs, examples, fuzz/corpus and the ../shared
# peer cases (for the plan reader: plan files of up to 30 of those models).
# Crashes are written to build-asan/fuzz-artifacts/.
# usage: scripts/fuzz.sh [build-dir]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-asan}
shared=${QOPT_SHARED_DIR:-$root/../shared}
seconds=${QOPT_FUZZ_SECONDS:-60}
work=$build/fuzz-work
artifacts=$build/fuzz-artifacts
rm -rf "$work" && mkdir -p "$work"/{onnx,qir,pipeline,plan} "$artifacts"
find "$root/test/inputs" "$root/examples" -name '*.onnx' -size -200k -exec cp {} "$work/onnx/" \; 2>/dev/null || true
[ -d "$shared/peer-cases" ] && find "$shared/peer-cases" -name '*.onnx' -size -200k | while read -r f; do cp "$f" "$work/onnx/$(echo "$f" | md5sum | cut -c1-12).onnx"; done
find "$root/test/lit" -name '*.qir' -exec cp {} "$work/qir/" \;
cp "$root/fuzz/corpus/pipeline/"* "$work/pipeline/"
# Plan files of the small test models (written by this build's qopt), text
# plans of ten of them, and the plan pass tests' text plans.
for f in $(ls "$work"/onnx/*.onnx | head -30); do
  "$build/bin/qopt" "$f" -passes='default<cpu>' -emit=plan -o "$work/plan/$(basename "$f" .onnx).qplan" \
    2>/dev/null || true
done
for f in $(ls "$work"/onnx/*.onnx | head -10); do
  "$build/bin/qopt" "$f" -passes='default<cpu>' -emit=plan-text -o "$work/plan/$(basename "$f" .onnx).plan" \
    2>/dev/null || true
done
cp "$root"/test/lit/PlanPasses/*.test "$work/plan/"
# The dynamic quantization steps' fields (lit's dynamic-quant.test models),
# as plan files and text plans: the models above have none.
for form in "" --varied; do
  name=dynamic_quant${form:+_${form#--}}
  model="$work/$name.onnx"
  /usr/bin/python3 "$root/test/lit/Explain/Inputs/make_dynamic_quant.py" "$model" $form 2>/dev/null &&
    for emit in plan plan-text; do
      "$build/bin/qopt" "$model" -passes='default<cpu>' -emit=$emit \
        -o "$work/plan/$name.$emit" 2>/dev/null || true
    done
done
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
status=0
# The targets run $QOPT_FUZZ_JOBS at a time (default: one per CPU); each is
# one process for $seconds, so the total fuzzing time does not change.
jobs=${QOPT_FUZZ_JOBS:-$(nproc)}
run() {
  local target=$1 corpus=$2; shift 2
  ls "$corpus" | wc -l > "$build/fuzz-$target.seeds"
  if "$build/bin/qopt-fuzz-$target" "$corpus" -max_total_time="$seconds" \
        -artifact_prefix="$artifacts/$target-" -print_final_stats=1 -timeout=10 \
        -rss_limit_mb=4096 "$@" > "$build/fuzz-$target.log" 2>&1; then
    echo ok > "$build/fuzz-$target.status"
  else
    echo failed > "$build/fuzz-$target.status"
  fi
}
report() {
  local target=$1
  echo "== fuzzed $target for ${seconds}s ($(cat "$build/fuzz-$target.seeds") seeds)"
  if [ "$(cat "$build/fuzz-$target.status" 2>/dev/null)" != ok ]; then
    echo "fuzz: $target FAILED; see $build/fuzz-$target.log and $artifacts"
    tail -30 "$build/fuzz-$target.log"
    status=1
  else
    grep -E "stat::number_of_executed_units|stat::new_units_added" "$build/fuzz-$target.log" | tr '\n' ' '
    echo
  fi
}
running=0
spawn() {
  run "$@" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
}
spawn OnnxImport "$work/onnx" -max_len=262144
spawn QirParser "$work/qir" -max_len=65536
spawn PipelineParser "$work/pipeline" -max_len=512
spawn PlanFile "$work/plan" -max_len=1048576
wait
report OnnxImport
report QirParser
report PipelineParser
report PlanFile
exit $status
