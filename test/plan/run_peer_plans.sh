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
failed=0
for c in "${cases[@]}"; do
  out=$("$qopt_run" "$shared/peer-cases/$c" --plan --allow-float-plan --compare-reference \
    --max-lsb=1 --atol=1e-4 2>&1)
  status=$?
  summary=$(grep -m1 '^plan vs reference, step by step' <<<"$out")
  if [ $status -ne 0 ] || [ -z "$summary" ]; then
    failed=$((failed + 1))
    echo "FAIL $c"
    grep -E 'DIFF|error' <<<"$out" | head -5 | sed 's/^/  /'
  else
    echo "PASS $c: ${summary#plan vs reference, step by step: }"
  fi
done
echo "[POS] peer cases as CPU plans: ${#cases[@]} run, $failed failed"

qopt=$(dirname "$qopt_run")/qopt
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
files=0 file_failed=0
for m in "${cases[@]/#/$shared/peer-cases/}" "$shared"/models/*.onnx; do
  # Under the sanitizers (QOPT_SANITIZED=1) the big shared models are left to
  # the release run, as the QOperator check does.
  if [ "${QOPT_SANITIZED:-0}" = 1 ]; then
    case $(basename "$m") in resnet*|yolo*) continue ;; esac
  fi
  files=$((files + 1))
  if ! "$qopt" "$m" -passes='default<cpu>' -emit=plan -allow-float-plan -o "$work/m.qplan" 2> "$work/err" ||
     ! "$qopt_run" "$work/m.qplan" -o "$work/file.npz" > /dev/null 2>> "$work/err" ||
     ! "$qopt_run" "$m" --plan --allow-float-plan -o "$work/model.npz" > /dev/null 2>> "$work/err" ||
     ! cmp -s "$work/file.npz" "$work/model.npz"; then
    file_failed=$((file_failed + 1))
    echo "FAIL as a plan file: ${m#$shared/}"
    head -3 "$work/err" | sed 's/^/  /'
  fi
done
echo "as plan files: $files run, $file_failed failed"
[ $failed -eq 0 ] && [ $file_failed -eq 0 ]
