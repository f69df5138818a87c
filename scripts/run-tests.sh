#!/usr/bin/env bash
# Runs every test once against one build directory: unit tests, lit tests,
# ONNX conformance on the reference interpreter, and (with ../shared) the
# peer cases (on the interpreter, and the [POS] ones as CPU plans), the ONNX
# round trip, the comparison with ONNX Runtime (QDQ
# and, after lower-qoperator, QOperator form), the
# exactness of exact passes and pipelines and ORT loading [1]-shaped params.
# usage: scripts/run-tests.sh <build-dir>
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?build directory}
shared=${QOPT_SHARED_DIR:-$root/../shared}
status=0
# Each step's header says how long the one before it took (CI's budget).
last=$(date +%s)
step() {
  local now; now=$(date +%s)
  [ -n "${current:-}" ] && echo "-- $current: $((now - last)) s"
  current="$*"; current=${current:0:60}; last=$now
  echo; echo "== $* ($(basename "$build"))"
}
step "unit tests"
"$build/bin/QoptUnitTests" --gtest_brief=1 || status=1
if [ -d "$build/python/qopt" ]; then
  step "the qopt Python module (pytest): the CLI's explain entries and plan outputs"
  QOPT_BUILD_DIR="$build" QOPT_SHARED_DIR="$shared" /usr/bin/python3 -m pytest -q \
    -p no:cacheprovider "$root/test/python" || status=1
fi
if [ "${QOPT_SANITIZED:-0}" != 1 ]; then
  step "hostile inputs: a quick sweep (test/hostile/sweep_hostile.py --quick; the lit tests run each finding under the sanitizers)"
  /usr/bin/python3 "$root/test/hostile/sweep_hostile.py" --quick --bin "$build/bin" \
    --work "$build/hostile-sweep" | tail -15 || status=1
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi
step "lit tests"
/usr/bin/python3 /usr/lib/llvm-14/build/utils/lit/lit.py -s "$build/test/lit" || status=1
step "ONNX backend node tests on the reference interpreter"
"$build/bin/qopt-onnx-conformance" || status=1
step "ONNX backend node tests as CPU plans (QLinearConv, QLinearMatMul, ConvInteger, MatMulInteger, Q/DQ among them)"
"$build/bin/qopt-onnx-conformance" --plan || status=1
if [ -d "$shared/models" ]; then
  step "peer cases with expected outputs ([REF]) on the reference interpreter, then as CPU plans"
  for mode in "" --plan; do
    "$build/bin/qopt-onnx-conformance" $mode \
      --dir "$shared/peer-cases/onnx/onnx/backend/test/data/node" \
      --dir "$shared/peer-cases/onnx-acaa175e/onnx/backend/test/data/node" \
      --dir "$shared/peer-cases/tract/onnx/test_cases" || status=1
  done
  step "[POS] peer cases as CPU plans, each step against the reference; they and the shared models as plan files"
  "$root/test/plan/run_peer_plans.sh" "$build/bin/qopt-run" "$shared" |
    grep -v '^PASS ' || status=1
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  step "ONNX round trip through ONNX Runtime 1.30 ($shared)"
  # Under the sanitizers: without the zoo and the big shared models (the
  # release pass runs them all; the small ones take the same code paths).
  rt_filter=()
  [ "${QOPT_SANITIZED:-0}" = 1 ] && rt_filter=(--filter '^(?!models/(zoo/|resnet|yolo))')
  /usr/bin/python3 "$root/test/roundtrip/run_roundtrip.py" \
    --qopt "$build/bin/qopt" --shared "$shared" --work "$build/roundtrip" \
    "${rt_filter[@]}" | tail -25 || status=1
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  if [ "${QOPT_SANITIZED:-0}" != 1 ]; then
    step "torch.ao exports (eager, FX, QAT; bench/gen_torchao_models.py at 96 px)"
    torchao="$build/torchao-models"
    if [ ! -f "$torchao/.complete" ]; then
      # All but FX MobileNetV3-Large (its export alone takes 15 s; the
      # eager one is the same network through the same exporter).
      if /usr/bin/python3 "$root/bench/gen_torchao_models.py" "$torchao" --size 96 \
        torchao_eager_resnet18 torchao_eager_mobilenet_v2 torchao_eager_mobilenet_v3_large \
        torchao_fx_resnet18 torchao_fx_mobilenet_v2 torchao_qat_residual_concat; then
        touch "$torchao/.complete"
      else
        status=1
      fi
    fi
    step "ONNX Runtime quantize_static's QDQ form of four fp32 models (bench/gen_ort_qdq_models.py)"
    ortqdq="$build/ortqdq-models"
    if [ ! -f "$ortqdq/.complete" ]; then
      /usr/bin/python3 "$root/bench/gen_ort_qdq_models.py" "$ortqdq" \
        "$torchao/torchao_eager_resnet18_fp32.onnx" "$torchao/torchao_eager_mobilenet_v2_fp32.onnx" \
        "$shared/models/zoo/mobilenet_v3_small_fp32.onnx" "$shared/models/zoo/squeezenet1_0_fp32.onnx" &&
        touch "$ortqdq/.complete" || status=1
    fi
    step "quantize_dynamic's forms of an MLP and a transformer encoder (bench/gen_dynamic_models.py)"
    dynamic="$build/dynamic-models"
    if [ ! -f "$dynamic/.complete" ]; then
      /usr/bin/python3 "$root/bench/gen_dynamic_models.py" "$dynamic" &&
        /usr/bin/python3 "$root/bench/gen_dynamic_models.py" "$dynamic" --form=msft &&
        touch "$dynamic/.complete" || status=1
    fi
    step "every shared, zoo, torch.ao, ORT-quantizer and dynamic model as exported: import, default pipelines, plan, accuracy vs fp32 (qopt-run and ONNX Runtime)"
    /usr/bin/python3 "$root/test/zoo/check_zoo.py" --qopt "$build/bin/qopt" \
      --qopt-run "$build/bin/qopt-run" --shared "$shared" --work "$build/zoo" \
      --extra "$torchao" --extra "$ortqdq" --extra "$dynamic" --ort || status=1
  fi
  if [ "${QOPT_SANITIZED:-0}" != 1 ]; then
    step "TensorRT's own engine graphs (trt-truth) against fusion-plan<trt>"
    /usr/bin/python3 "$root/test/trt-truth/compare_engines.py" --qopt "$build/bin/qopt" \
      --truth "$shared/trt-truth" --work "$build/trt-truth" || status=1
  fi
  if [ "${QOPT_SANITIZED:-0}" != 1 ]; then
    step "every fix explain names as -passes='X' removes its leftover (trt, ort, cpu)"
    /usr/bin/python3 "$root/test/placement/check_fixes.py" --qopt "$build/bin/qopt" \
      --shared "$shared" --work "$build/fixes" || status=1
  fi
  step "reference interpreter vs ONNX Runtime 1.30 on $shared/models"
  # Under the sanitizers: the small models (ResNet-18 and the YOLOs took 40
  # of its 42 s there; the release pass runs them).
  ortcmp_filter=()
  [ "${QOPT_SANITIZED:-0}" = 1 ] && ortcmp_filter=(--filter '^(?!(resnet|yolo))')
  /usr/bin/python3 "$root/test/ort/compare_with_ort.py" "${ortcmp_filter[@]}" \
    --qopt-run "$build/bin/qopt-run" --shared "$shared" --work "$build/ortcmp" || status=1
  step "INT4/UINT4, FLOAT8, mixed INT8/FP8 and float16 models of bench/gen_lowbit_{models,networks}.py vs ONNX Runtime 1.30, op by op"
  lowbit="$build/lowbit"
  if [ ! -f "$lowbit/.generated" ]; then
    /usr/bin/python3 "$root/bench/gen_lowbit_models.py" "$lowbit/models" > /dev/null &&
      /usr/bin/python3 "$root/bench/gen_lowbit_networks.py" "$lowbit/models" > /dev/null &&
      touch "$lowbit/.generated" || status=1
  fi
  /usr/bin/python3 "$root/test/ort/compare_with_ort.py" --filter '^(int4|fp8|mixed)_.*_qdq' \
    --qopt-run "$build/bin/qopt-run" --shared "$lowbit" --work "$build/ortcmp-lowbit" || status=1
  step "the INT4 ones after default<ort> (com.microsoft.MatMulNBits) in ONNX Runtime 1.30 vs qopt-run, op by op"
  /usr/bin/python3 "$root/test/ort/compare_with_ort.py" --filter '^int4_.*_qdq' \
    --qopt "$build/bin/qopt" --pipeline 'default<ort>' \
    --qopt-run "$build/bin/qopt-run" --shared "$lowbit" --work "$build/ortcmp-nbits" || status=1
  step "the same models: round trip, explain under trt:8.6 and trt:10, plan vs reference"
  # (ONNX Runtime has no CPU kernel for FLOAT4E2M1: fp4_e2m1 is checked
  # here and in lit, against the generator's numpy decoding.)
  /usr/bin/python3 "$root/test/lowbit/check_lowbit.py" --filter '^(int4|fp8|fp4|nvfp4|mixed)_' \
    --qopt "$build/bin/qopt" --qopt-run "$build/bin/qopt-run" --models "$lowbit/models" \
    --work "$build/lowbit-check" || status=1
  step "QOperator form (default<ort>,fuse<ort>,lower-qoperator) in ONNX Runtime 1.30 vs qopt-run, op by op"
  # Under the sanitizers: the small models (the big ones run in the release pass).
  qop_filter=()
  [ "${QOPT_SANITIZED:-0}" = 1 ] && qop_filter=(--filter '^(?!(resnet|yolo))')
  /usr/bin/python3 "$root/test/ort/compare_with_ort.py" --qopt "$build/bin/qopt" \
    --pipeline 'default<ort>,fuse<ort>,lower-qoperator' "${qop_filter[@]}" \
    --qopt-run "$build/bin/qopt-run" --shared "$shared" --work "$build/ortcmp-qop" || status=1
  step "exact passes and pipelines: bit-identical outputs (reference interpreter, ONNX Runtime 1.30)"
  # Under the sanitizers the interpreter is several times slower: the small
  # models there, every model in the release run, and a pass alone only when
  # no exact pipeline runs it (each pass is still run on each model).
  # ONNX Runtime's half of the check (the exported file in ORT) runs no
  # sanitized code: the release run does it.
  exact_filter=()
  [ "${QOPT_SANITIZED:-0}" = 1 ] && exact_filter=(--filter '^(?!models/(resnet|yolo|zoo/))' --no-ort --through-pipelines)
  /usr/bin/python3 "$root/test/placement/check_exact_passes.py" --qopt "$build/bin/qopt" \
    --qopt-run "$build/bin/qopt-run" --shared "$shared" --work "$build/exact" \
    "${exact_filter[@]}" | grep -v '^PASS ' || status=1
  [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
  if [ "${QOPT_SANITIZED:-0}" != 1 ]; then
    step "data movement between Q/DQ, every op and mode: exact passes and the plan bit-identical"
    /usr/bin/python3 "$root/test/placement/check_movement_exact.py" --qopt "$build/bin/qopt" \
      --qopt-run "$build/bin/qopt-run" --work "$build/movement" || status=1
  fi
  step "[1]-shaped Q/DQ parameters load in ONNX Runtime 1.30 at level all after qopt"
  /usr/bin/python3 "$root/test/placement/ort_loads.py" --qopt "$build/bin/qopt" \
    --shared "$shared" --work "$build/ortloads" || status=1
else
  step "shared models: SKIPPED, nothing at $shared (set QOPT_SHARED_DIR)"
fi
step "done"
exit $status
