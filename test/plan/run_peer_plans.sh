#!/usr/bin/env bash
# Every [POS] peer case (../shared/peer-cases/README.md: a graph qopt should
# optimize and run in INT8) as a CPU plan: default<cpu>, then each plan step
# on the reference's values of its inputs within 1 LSB of the reference on
# quantized tensors and 1e-4 of the largest magnitude on float ones.
# Symbolic input dims are 1, as for the random inputs. Then each case and
# each shared model as a plan file (qopt -emit=plan, next to qopt-run): its
# outputs must be the bytes `qopt-run --plan` gives on the model. The plans
# are built with -allow-float-plan: a case whose convs stay float (a bias
# off its grid, an fp32 twin) checks the float steps too.
# usage: test/plan/run_peer_plans.sh <qopt-run> <shared-dir>
set -uo pipefail
qopt_run=${1:?qopt-run binary}
shared=${2:?shared directory}
readme="$shared/peer-cases/README.md"
[ -f "$readme" ] || { echo "no $readme"; exit 1; }
mapfile -t cases < <(grep -F '[POS]' "$readme" | grep -o '^| `[^`]*\.onnx`' |
  sed 's/^| `//; s/`$//')
[ "${#cases[@]}" -gt 0 ] || { echo "no [POS] cases listed in $readme"; exit 1; }
# Cases run nproc at a time (QOPT_PEER_JOBS), each into its own result
# file, printed in order afterwards.
jobs=${QOPT_PEER_JOBS:-$(nproc)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
throttle() {
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
}

check_case() { # <case>
  local c=$1 out status summary
  out=$("$qopt_run" "$shared/peer-cases/$c" --plan --allow-float-plan --compare-reference \
    --max-lsb=1 --atol=1e-4 2>&1)
  status=$?
  summary=$(grep -m1 '^plan vs reference, step by step' <<<"$out")
  if [ $status -ne 0 ] || [ -z "$summary" ]; then
    echo "FAIL $c"
    grep -E 'DIFF|error' <<<"$out" | head -5 | sed 's/^/  /'
  else
    echo "PASS $c: ${summary#plan vs reference, step by step: }"
  fi
}
for i in "${!cases[@]}"; do
  throttle
  check_case "${cases[$i]}" > "$work/case.$i" &
done
wait
failed=0
for i in "${!cases[@]}"; do
  cat "$work/case.$i"
  grep -q '^FAIL' "$work/case.$i" && failed=$((failed + 1))
done
echo "[POS] peer cases as CPU plans: ${#cases[@]} run, $failed failed"

qopt=$(dirname "$qopt_run")/qopt
check_file() { # <model> <scratch dir>
  local m=$1 w=$2
  mkdir -p "$w"
  if ! "$qopt" "$m" -passes='default<cpu>' -emit=plan -allow-float-plan -o "$w/m.qplan" 2> "$w/err" ||
     ! "$qopt_run" "$w/m.qplan" -o "$w/file.npz" > /dev/null 2>> "$w/err" ||
     ! "$qopt_run" "$m" --plan --allow-float-plan -o "$w/model.npz" > /dev/null 2>> "$w/err" ||
     ! cmp -s "$w/file.npz" "$w/model.npz"; then
    echo "FAIL as a plan file: ${m#$shared/}"
    head -3 "$w/err" | sed 's/^/  /'
  fi
}
models=()
for m in "${cases[@]/#/$shared/peer-cases/}" "$shared"/models/*.onnx; do
  # Under the sanitizers (QOPT_SANITIZED=1) the big shared models are left to
  # the release run, as the QOperator check does.
  if [ "${QOPT_SANITIZED:-0}" = 1 ]; then
    case $(basename "$m") in resnet*|yolo*) continue ;; esac
  fi
  models+=("$m")
done
for i in "${!models[@]}"; do
  throttle
  check_file "${models[$i]}" "$work/file.$i" > "$work/file.$i.out" &
done
wait
file_failed=0
for i in "${!models[@]}"; do
  cat "$work/file.$i.out"
  [ -s "$work/file.$i.out" ] && file_failed=$((file_failed + 1))
done
echo "as plan files: ${#models[@]} run, $file_failed failed"
[ $failed -eq 0 ] && [ $file_failed -eq 0 ]
