#!/usr/bin/env bash
# Scaling benchmark: synthetic models of 10k, 100k and 1M nodes, timed end to
# end (export -> import -> cse,dce with -verify-each -> verify -> export).
# Builds nothing: run it after building (cmake --build build --target
# qopt-bench-scaling). Prints the CPU model and one line per case with the
# ratio to the 10k case (linear growth is ~10x per step).
#
#   bench/run_scaling_bench.sh [--sizes=10000,100000] [benchmark flags]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${QOPT_BUILD_DIR:-$root/build}/bin/qopt-bench-scaling
if [ ! -x "$bin" ]; then
  echo "run_scaling_bench.sh: $bin is missing; build the qopt-bench-scaling target first" >&2
  exit 1
fi
echo "cpu: $(lscpu | sed -n 's/^Model name: *//p') ($(nproc) cores), load: $(cut -d' ' -f1-3 /proc/loadavg)"
exec "$bin" "$@"
