#!/usr/bin/env bash
# Builds qopt and runs every test once: unit tests (GoogleTest), lit/FileCheck
# tests, and the ONNX round-trip check against ONNX Runtime on ../shared
# models and peer cases. Exits non-zero if anything fails.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${QOPT_SHARED_DIR:-$root/../shared}
"$root/scripts/install-deps.sh"
if [ ! -d "$root/node_modules/onnxruntime-node" ]; then
  (cd "$root" && npm install --no-save --ignore-scripts --no-audit --no-fund onnxruntime-node@1.30.0 >/dev/null)
fi
"$root/scripts/build.sh"
status=0
echo "== unit tests"
"$root/build/bin/QoptUnitTests" --gtest_brief=1 || status=1
echo "== lit tests"
/usr/bin/python3 /usr/lib/llvm-14/build/utils/lit/lit.py -sv "$root/build/test/lit" || status=1
echo "== ONNX backend node tests on the reference interpreter"
"$root/build/bin/qopt-onnx-conformance" || status=1
if [ -d "$shared/models" ]; then
  echo "== peer cases with expected outputs ([REF]) on the reference interpreter"
  "$root/build/bin/qopt-onnx-conformance" \
    --dir "$shared/peer-cases/onnx/onnx/backend/test/data/node" \
    --dir "$shared/peer-cases/onnx-acaa175e/onnx/backend/test/data/node" \
    --dir "$shared/peer-cases/tract/onnx/test_cases" || status=1
  echo "== ONNX round trip (ONNX Runtime 1.30, $shared)"
  /usr/bin/python3 "$root/test/roundtrip/run_roundtrip.py" \
    --qopt "$root/build/bin/qopt" --shared "$shared" --work "$root/build/roundtrip" || status=1
  echo "== reference interpreter vs ONNX Runtime 1.30 on $shared/models"
  /usr/bin/python3 "$root/test/ort/compare_with_ort.py" \
    --qopt-run "$root/build/bin/qopt-run" --shared "$shared" --work "$root/build/ortcmp" || status=1
else
  echo "== shared models: SKIPPED, nothing at $shared (set QOPT_SHARED_DIR)"
fi
exit $status
