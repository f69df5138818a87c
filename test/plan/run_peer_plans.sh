#!/usr/bin/env bash
# Every [POS] peer case (../shared/peer-cases/README.md: a graph qopt should
# optimize and run in INT8) as a CPU plan: default<cpu>, then each plan step
# on the reference's values of its inputs within 1 LSB of the reference on
# quantized tensors and 1e-4 of the largest magnitude on float ones.
# Symbolic input dims are 1, as for the random inputs.
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
  out=$("$qopt_run" "$shared/peer-cases/$c" --plan --compare-reference \
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
[ $failed -eq 0 ]
