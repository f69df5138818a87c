#!/usr/bin/env bash
# How long a --report page takes to open in headless Chromium: milliseconds from navigation to the
# laid-out page (the page records performance.now() after its load event in <body data-load-ms>;
# Chromium's own start-up, 15-30 s on the 2-core machines, is not counted).
#
#   bench/report_page_load.sh [RUNS]      (default 3 runs per page; medians printed)
#
# Pages: yolo_like_qat_everywhere before/after default<trt> (893 ONNX nodes, two plans) and a
# generated 1,000-node Q/DQ chain (bench/gen_qdq_chain.py). Target: under 3 s for a 1,000-node model.
# Env: QOPT_BUILD_DIR (default ./build), QOPT_SHARED_DIR (default ../shared).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${QOPT_BUILD_DIR:-$root/build}
shared=${QOPT_SHARED_DIR:-$root/../shared}
runs=${1:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 "$root/bench/gen_qdq_chain.py" 1000 "$work/chain1000.onnx" >/dev/null
"$build/bin/qopt" "$shared/models/yolo_like_qat_everywhere.onnx" -passes='default<trt>' \
  --report="$work/yolo.html" 2>/dev/null
"$build/bin/qopt" "$work/chain1000.onnx" --report="$work/chain1000.html" 2>/dev/null
echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores"
for page in yolo chain1000; do
  times=()
  for ((i = 0; i < runs; i++)); do
    ms=$(cd "$work" && env DBUS_SESSION_BUS_ADDRESS=disabled: timeout 300 chromium --headless \
      --no-sandbox --disable-gpu --dump-dom "file://$work/$page.html" 2>/dev/null |
      grep -o 'data-load-ms="[0-9]*"' | grep -o '[0-9]*')
    times+=("${ms:-nan}")
  done
  sorted=$(printf '%s\n' "${times[@]}" | sort -n | tr '\n' ' ')
  median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n "$(( (runs + 1) / 2 ))p")
  echo "$page.html ($(stat -c %s "$work/$page.html") bytes): load ms ${sorted}median $median"
done
