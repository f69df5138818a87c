#!/usr/bin/env bash
# Builds qopt and runs every test: the whole suite on the release build, the
# whole suite again on an AddressSanitizer + UndefinedBehaviorSanitizer build
# (clang), and each libFuzzer target for 60 s. Exits non-zero if anything
# fails, and ends with what each phase took. Set QOPT_SKIP_SANITIZERS=1 to run
# the release suite only.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
start=$(date +%s)
phase_start=$start
phases=()
# Ends the current phase: its time goes to the summary and is printed now.
phase_done() {
  local now; now=$(date +%s)
  phases+=("$(printf '%-18s %5d s' "$1" $((now - phase_start)))")
  echo "-- $1: $((now - phase_start)) s ($((now - start)) s since test.sh started)"
  phase_start=$now
}
summary() {
  echo; echo "test.sh: $(( $(date +%s) - start )) s, status $1"
  printf '  %s\n' "${phases[@]}"
}
"$root/scripts/install-deps.sh" || exit 1
if [ ! -d "$root/node_modules/onnxruntime-node" ]; then
  (cd "$root" && npm install --no-save --ignore-scripts --no-audit --no-fund onnxruntime-node@1.30.0 >/dev/null) || exit 1
fi
status=0
phase_done "dependencies"
echo "== release build"
"$root/scripts/build.sh" || exit 1
phase_done "release build"
"$root/scripts/run-tests.sh" "$root/build" || status=1
phase_done "release tests"
if [ "${QOPT_SKIP_SANITIZERS:-0}" != 1 ]; then
  echo; echo "== ASan + UBSan build with libFuzzer targets (clang-14)"
  # A unity build: each library's sources compile in batches of eight, so
  # the headers and their templates are parsed, optimized and instrumented
  # once per batch, not once per file (1,900 -> about 750 s of CPU). The
  # release tree builds file by file, as users build, and so checks that
  # each file includes what it uses.
  CC=clang-14 CXX=clang++-14 cmake -S "$root" -B "$root/build-asan" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release -DQOPT_ENABLE_FUZZERS=ON -DQOPT_BUILD_BENCH=OFF \
    -DCMAKE_UNITY_BUILD=ON >/dev/null || exit 1
  cmake --build "$root/build-asan" || exit 1
  phase_done "sanitizer build"
  QOPT_SANITIZED=1 ASAN_OPTIONS=detect_leaks=1 "$root/scripts/run-tests.sh" "$root/build-asan" || status=1
  phase_done "sanitizer tests"
  "$root/scripts/fuzz.sh" "$root/build-asan" || status=1
  phase_done "fuzzing"
fi
summary $status
exit $status
