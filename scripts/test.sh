#!/usr/bin/env bash
# Builds qopt and runs every test: the whole suite on the release build, the
# whole suite again on an AddressSanitizer + UndefinedBehaviorSanitizer build
# (clang), and each libFuzzer target for 60 s. Exits non-zero if anything
# fails. Set QOPT_SKIP_SANITIZERS=1 to run the release suite only.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
start=$(date +%s)
"$root/scripts/install-deps.sh" || exit 1
if [ ! -d "$root/node_modules/onnxruntime-node" ]; then
  (cd "$root" && npm install --no-save --ignore-scripts --no-audit --no-fund onnxruntime-node@1.30.0 >/dev/null) || exit 1
fi
status=0
since() { echo "-- $1: $(( $(date +%s) - start )) s since test.sh started"; }
since "dependencies"
echo "== release build"
"$root/scripts/build.sh" || exit 1
since "release build"
"$root/scripts/run-tests.sh" "$root/build" || status=1
since "release tests"
if [ "${QOPT_SKIP_SANITIZERS:-0}" != 1 ]; then
  echo; echo "== ASan + UBSan build with libFuzzer targets (clang-14)"
  CC=clang-14 CXX=clang++-14 cmake -S "$root" -B "$root/build-asan" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release -DQOPT_ENABLE_FUZZERS=ON -DQOPT_BUILD_BENCH=OFF >/dev/null || exit 1
  cmake --build "$root/build-asan" || exit 1
  since "sanitizer build"
  QOPT_SANITIZED=1 ASAN_OPTIONS=detect_leaks=1 "$root/scripts/run-tests.sh" "$root/build-asan" || status=1
  since "sanitizer tests"
  "$root/scripts/fuzz.sh" "$root/build-asan" || status=1
fi
echo; echo "test.sh: $(( $(date +%s) - start )) s, status $status"
exit $status
